import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuPoolProps, renderGpuPool } from '../../lib/render/gpu-pool';
import { dependOnController } from './order';
import { addObjects, childPath, claimNames } from './register';

export type { GpuPoolProps, PoolResources } from '../../lib/render/gpu-pool';

/**
 * A pool of GPU nodes shared by workloads (a cluster-scoped GPUPool). Its name is `name`, or the
 * construct id when `name` is not set (then the id must be a valid pool name); no two GPUPools of
 * one app may share a name.
 *
 * @example
 * new GpuPool(chart, 'default-pool', { isDefault: true, defaultQos: 'medium', tflopsOversellRatio: 200 });
 * @throws ValidationError `GpuPool <id>: ...` naming every bad prop; nothing is added then
 */
export class GpuPool extends Construct {
  /** The GPUPool object. */
  public readonly apiObject: ApiObject;
  /** Name of the pool, to use in `tensor-fusion.ai/gpupool` and GpuNode `pools`. */
  public readonly poolName: string;

  constructor(scope: Construct, id: string, props: GpuPoolProps = {}) {
    const context = `GpuPool ${id}`;
    const object = renderGpuPool(props.name ?? id, props, { context, nameFromId: props.name === undefined });
    claimNames(scope, childPath(scope, id), [object], context);
    super(scope, id);
    this.poolName = object.metadata.name;
    [this.apiObject] = addObjects(this, [object]);
    dependOnController(this);
  }
}

import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuPoolProps, renderGpuPool } from '../../lib/render/gpu-pool';
import { addObjects } from './register';

export type { GpuPoolProps } from '../../lib/render/gpu-pool';

/**
 * A pool of GPU nodes shared by workloads (a cluster-scoped GPUPool).
 *
 * @example
 * new GpuPool(chart, 'default-pool', { isDefault: true, defaultQos: 'medium', tflopsOversellRatio: 200 });
 */
export class GpuPool extends Construct {
  /** The GPUPool object. */
  public readonly apiObject: ApiObject;
  /** Name of the pool, to use in `tensor-fusion.ai/gpupool` and GpuNode `pools`. */
  public readonly poolName: string;

  constructor(scope: Construct, id: string, props: GpuPoolProps = {}) {
    super(scope, id);
    this.poolName = props.name ?? id;
    [this.apiObject] = addObjects(this, [renderGpuPool(this.poolName, props)]);
  }
}

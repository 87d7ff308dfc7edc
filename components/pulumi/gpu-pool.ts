import * as pulumi from '@pulumi/pulumi';
import { GpuPoolProps, renderGpuPool } from '../../lib/render/gpu-pool';
import { registerObjects } from './register';

/** Arguments of GpuPool: the same props as the cdk8s construct. */
export type GpuPoolArgs = GpuPoolProps;

/**
 * A pool of GPU nodes shared by workloads (a cluster-scoped GPUPool).
 *
 * @example
 * new GpuPool('default-pool', { isDefault: true, defaultQos: 'medium', tflopsOversellRatio: 200 });
 */
export class GpuPool extends pulumi.ComponentResource {
  /** Name of the pool, to use in `tensor-fusion.ai/gpupool` and GpuNode `pools`. */
  public readonly poolName: string;
  public readonly resource: pulumi.CustomResource;

  constructor(name: string, args: GpuPoolArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    super('tensor-fusion:index:GpuPool', name, {}, opts);
    this.poolName = args.name ?? name;
    [this.resource] = registerObjects(name, [renderGpuPool(this.poolName, args)], { parent: this });
    this.registerOutputs({ poolName: this.poolName });
  }
}

import * as pulumi from '@pulumi/pulumi';
import { renderTensorFusionWorkload, renderWorkloadProfile, TensorFusionWorkloadProps, WorkloadProfileProps } from '../../lib/render/workload-profile';
import { registerObjects } from './register';

/** Arguments of WorkloadProfile: the same props as the cdk8s construct. */
export type WorkloadProfileArgs = WorkloadProfileProps;
/** Arguments of TensorFusionWorkload: the same props as the cdk8s construct. */
export type TensorFusionWorkloadArgs = TensorFusionWorkloadProps;

/**
 * Reusable GPU settings that pods reference with `tensor-fusion.ai/workload-profile`.
 *
 * @example
 * new WorkloadProfile('default-profile', { namespace: 'ml', qos: 'medium',
 *   resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } } });
 */
export class WorkloadProfile extends pulumi.ComponentResource {
  /** Name to reference from `tensor-fusion.ai/workload-profile`. */
  public readonly profileName: string;
  public readonly resource: pulumi.CustomResource;

  constructor(name: string, args: WorkloadProfileArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    super('tensor-fusion:index:WorkloadProfile', name, {}, opts);
    this.profileName = args.name ?? name;
    [this.resource] = registerObjects(name, [renderWorkloadProfile(this.profileName, args)], { parent: this });
    this.registerOutputs({ profileName: this.profileName });
  }
}

/**
 * A set of GPU workers with fixed resources (remote mode), or the record the webhook keeps for
 * pods that generate their workload.
 */
export class TensorFusionWorkload extends pulumi.ComponentResource {
  /** Name to reference from `tensor-fusion.ai/workload`. */
  public readonly workloadName: string;
  public readonly resource: pulumi.CustomResource;

  constructor(name: string, args: TensorFusionWorkloadArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    super('tensor-fusion:index:TensorFusionWorkload', name, {}, opts);
    this.workloadName = args.name ?? name;
    [this.resource] = registerObjects(name, [renderTensorFusionWorkload(this.workloadName, args)], { parent: this });
    this.registerOutputs({ workloadName: this.workloadName });
  }
}

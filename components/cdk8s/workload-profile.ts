import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { renderTensorFusionWorkload, renderWorkloadProfile, TensorFusionWorkloadProps, WorkloadProfileProps } from '../../lib/render/workload-profile';
import { addObjects } from './register';

export type { TensorFusionWorkloadProps, WorkloadProfileProps } from '../../lib/render/workload-profile';

/**
 * Reusable GPU settings that pods reference with `tensor-fusion.ai/workload-profile`; annotations
 * on the pod win over the profile.
 *
 * @example
 * new WorkloadProfile(chart, 'default-profile', { namespace: 'ml', qos: 'medium',
 *   resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } } });
 */
export class WorkloadProfile extends Construct {
  public readonly apiObject: ApiObject;
  /** Name to reference from `tensor-fusion.ai/workload-profile`. */
  public readonly profileName: string;

  constructor(scope: Construct, id: string, props: WorkloadProfileProps = {}) {
    super(scope, id);
    this.profileName = props.name ?? id;
    [this.apiObject] = addObjects(this, [renderWorkloadProfile(this.profileName, props)]);
  }
}

/**
 * A set of GPU workers with fixed resources (remote mode), or the record the webhook keeps for
 * pods that generate their workload.
 *
 * @example
 * new TensorFusionWorkload(chart, 'pytorch-example', { namespace: 'ml', replicas: 1, poolName: 'default-pool',
 *   resources: { requests: { tflops: '10', vram: '4Gi' }, limits: { tflops: '20', vram: '4Gi' } } });
 */
export class TensorFusionWorkload extends Construct {
  public readonly apiObject: ApiObject;
  /** Name to reference from `tensor-fusion.ai/workload`. */
  public readonly workloadName: string;

  constructor(scope: Construct, id: string, props: TensorFusionWorkloadProps = {}) {
    super(scope, id);
    this.workloadName = props.name ?? id;
    [this.apiObject] = addObjects(this, [renderTensorFusionWorkload(this.workloadName, props)]);
  }
}

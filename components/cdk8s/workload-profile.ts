import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import {
  renderTensorFusionWorkload,
  renderWorkloadProfile,
  TensorFusionWorkloadProps,
  WorkloadProfileProps,
} from '../../lib/render/workload-profile';
import { dependOnController } from './order';
import { addObjects, childPath, claimNames } from './register';

export type { TensorFusionWorkloadProps, WorkloadProfileProps } from '../../lib/render/workload-profile';

/**
 * Reusable GPU settings that pods reference with `tensor-fusion.ai/workload-profile`; annotations
 * on the pod win over the profile. Its name is `name`, or the construct id when `name` is not set.
 *
 * @example
 * new WorkloadProfile(chart, 'default-profile', { namespace: 'ml', qos: 'medium',
 *   resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } } });
 * @throws ValidationError `WorkloadProfile <id>: ...` naming every bad prop; nothing is added then
 */
export class WorkloadProfile extends Construct {
  /** The WorkloadProfile object. */
  public readonly apiObject: ApiObject;
  /** Name to reference from `tensor-fusion.ai/workload-profile`. */
  public readonly profileName: string;

  constructor(scope: Construct, id: string, props: WorkloadProfileProps = {}) {
    const context = `WorkloadProfile ${id}`;
    const object = renderWorkloadProfile(props.name ?? id, props, { context, nameFromId: props.name === undefined });
    claimNames(scope, childPath(scope, id), [object], context);
    super(scope, id);
    this.profileName = object.metadata.name;
    [this.apiObject] = addObjects(this, [object]);
    dependOnController(this);
  }
}

/**
 * A set of GPU workers with fixed resources (remote mode), or the record the webhook keeps for
 * pods that generate their workload. Its name is `name`, or the construct id when `name` is not set.
 *
 * @example
 * new TensorFusionWorkload(chart, 'pytorch-example', { namespace: 'ml', replicas: 1, poolName: 'default-pool',
 *   resources: { requests: { tflops: '10', vram: '4Gi' }, limits: { tflops: '20', vram: '4Gi' } } });
 * @throws ValidationError `TensorFusionWorkload <id>: ...` naming every bad prop; nothing is added then
 */
export class TensorFusionWorkload extends Construct {
  /** The TensorFusionWorkload object. */
  public readonly apiObject: ApiObject;
  /** Name to reference from `tensor-fusion.ai/workload`. */
  public readonly workloadName: string;

  constructor(scope: Construct, id: string, props: TensorFusionWorkloadProps = {}) {
    const context = `TensorFusionWorkload ${id}`;
    const object = renderTensorFusionWorkload(props.name ?? id, props, { context, nameFromId: props.name === undefined });
    claimNames(scope, childPath(scope, id), [object], context);
    super(scope, id);
    this.workloadName = object.metadata.name;
    [this.apiObject] = addObjects(this, [object]);
    dependOnController(this);
  }
}

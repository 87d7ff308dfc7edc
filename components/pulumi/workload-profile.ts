import * as pulumi from '@pulumi/pulumi';
import { API_VERSION } from '../../lib/model/group';
import {
  renderTensorFusionWorkload,
  renderWorkloadProfile,
  TensorFusionWorkloadProps,
  WorkloadProfileProps,
} from '../../lib/render/workload-profile';
import { InputArgs, outputOf, Owner, renderArgs } from './inputs';
import { claimNames, registerObject } from './register';

/** Arguments of WorkloadProfile: the props of the cdk8s construct, each a `pulumi.Input`. */
export type WorkloadProfileArgs = InputArgs<WorkloadProfileProps>;
/** Arguments of TensorFusionWorkload: the props of the cdk8s construct, each a `pulumi.Input`. */
export type TensorFusionWorkloadArgs = InputArgs<TensorFusionWorkloadProps>;

/**
 * Reusable GPU settings that pods reference with `tensor-fusion.ai/workload-profile`. Its name is
 * `name`, or the resource name when `name` is not set.
 *
 * @example
 * new WorkloadProfile('default-profile', { namespace: 'ml', qos: 'medium',
 *   resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } } },
 *   { dependsOn: controller.crds });
 * @throws ValidationError `WorkloadProfile <name>: ...` naming every bad plain prop
 */
export class WorkloadProfile extends pulumi.ComponentResource {
  /** Name to reference from `tensor-fusion.ai/workload-profile`. */
  public readonly profileName: pulumi.Output<string>;
  /** The WorkloadProfile custom resource (named as cdk8s's `apiObject`). */
  public readonly apiObject: pulumi.CustomResource;

  /**
   * The same as `apiObject`.
   * @deprecated Use `apiObject`, the name both frameworks use.
   */
  get resource(): pulumi.CustomResource {
    return this.apiObject;
  }

  constructor(name: string, args: WorkloadProfileArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    const context = `WorkloadProfile ${name}`;
    const owner: Owner = {};
    const object = renderArgs<WorkloadProfileProps, ReturnType<typeof renderWorkloadProfile>>(args, context, owner, (props) =>
      renderWorkloadProfile(props.name ?? name, props, { context, nameFromId: props.name === undefined }),
    );
    super('tensor-fusion:index:WorkloadProfile', name, {}, opts);
    owner.resource = this;
    this.apiObject = registerObject(
      name,
      claimNames(this, context, object),
      { apiVersion: API_VERSION, kind: 'WorkloadProfile' },
      ['metadata', 'spec'],
      { parent: this },
    );
    this.profileName = outputOf(object, (o) => o.metadata.name);
    this.registerOutputs({ profileName: this.profileName });
  }
}

/**
 * A set of GPU workers with fixed resources (remote mode), or the record the webhook keeps for
 * pods that generate their workload. Its name is `name`, or the resource name when `name` is not set.
 *
 * @example
 * new TensorFusionWorkload('pytorch-example', { namespace: 'ml', replicas: 1, poolName: 'default-pool',
 *   resources: { requests: { tflops: '10', vram: '4Gi' }, limits: { tflops: '20', vram: '4Gi' } } },
 *   { dependsOn: controller.crds });
 * @throws ValidationError `TensorFusionWorkload <name>: ...` naming every bad plain prop
 */
export class TensorFusionWorkload extends pulumi.ComponentResource {
  /** Name to reference from `tensor-fusion.ai/workload`. */
  public readonly workloadName: pulumi.Output<string>;
  /** The TensorFusionWorkload custom resource (named as cdk8s's `apiObject`). */
  public readonly apiObject: pulumi.CustomResource;

  /**
   * The same as `apiObject`.
   * @deprecated Use `apiObject`, the name both frameworks use.
   */
  get resource(): pulumi.CustomResource {
    return this.apiObject;
  }

  constructor(name: string, args: TensorFusionWorkloadArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    const context = `TensorFusionWorkload ${name}`;
    const owner: Owner = {};
    const object = renderArgs<TensorFusionWorkloadProps, ReturnType<typeof renderTensorFusionWorkload>>(args, context, owner, (props) =>
      renderTensorFusionWorkload(props.name ?? name, props, { context, nameFromId: props.name === undefined }),
    );
    super('tensor-fusion:index:TensorFusionWorkload', name, {}, opts);
    owner.resource = this;
    this.apiObject = registerObject(
      name,
      claimNames(this, context, object),
      { apiVersion: API_VERSION, kind: 'TensorFusionWorkload' },
      ['metadata', 'spec'],
      { parent: this },
    );
    this.workloadName = outputOf(object, (o) => o.metadata.name);
    this.registerOutputs({ workloadName: this.workloadName });
  }
}

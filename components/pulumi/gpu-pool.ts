import * as pulumi from '@pulumi/pulumi';
import { API_VERSION } from '../../lib/model/group';
import { GpuPoolProps, renderGpuPool } from '../../lib/render/gpu-pool';
import { InputArgs, outputOf, Owner, renderArgs } from './inputs';
import { claimNames, registerObject } from './register';

/**
 * Arguments of GpuPool: the props of the cdk8s construct, each a `pulumi.Input`. Plain values are
 * validated in the constructor, values held in Outputs at preview.
 */
export type GpuPoolArgs = InputArgs<GpuPoolProps>;

/**
 * A pool of GPU nodes shared by workloads (a cluster-scoped GPUPool). Its name is `name`, or the
 * resource name when `name` is not set; no two GPUPools of one stack and cluster may share a name.
 * Custom resources need their CRD: pass the controller's `crds` in `dependsOn` when the controller
 * is in the same stack.
 *
 * @example
 * new GpuPool('default-pool', { isDefault: true, defaultQos: 'medium', tflopsOversellRatio: 200 },
 *   { dependsOn: controller.crds });
 * @throws ValidationError `GpuPool <name>: ...` naming every bad plain prop, or a name another
 *   component of the stack already registers
 */
export class GpuPool extends pulumi.ComponentResource {
  /** Name of the pool, to use in `tensor-fusion.ai/gpupool` and GpuNode `pools`. */
  public readonly poolName: pulumi.Output<string>;
  /** The GPUPool custom resource (named as cdk8s's `apiObject`). */
  public readonly apiObject: pulumi.CustomResource;

  /**
   * The same as `apiObject`.
   * @deprecated Use `apiObject`, the name both frameworks use.
   */
  get resource(): pulumi.CustomResource {
    return this.apiObject;
  }

  constructor(name: string, args: GpuPoolArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    const context = `GpuPool ${name}`;
    const owner: Owner = {};
    const object = renderArgs<GpuPoolProps, ReturnType<typeof renderGpuPool>>(args, context, owner, (props) =>
      renderGpuPool(props.name ?? name, props, { context, nameFromId: props.name === undefined }),
    );
    super('tensor-fusion:index:GpuPool', name, {}, opts);
    owner.resource = this;
    this.apiObject = registerObject(
      name,
      claimNames(this, context, object),
      { apiVersion: API_VERSION, kind: 'GPUPool' },
      ['metadata', 'spec'],
      { parent: this },
    );
    this.poolName = outputOf(object, (o) => o.metadata.name);
    this.registerOutputs({ poolName: this.poolName });
  }
}

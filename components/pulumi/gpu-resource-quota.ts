import * as pulumi from '@pulumi/pulumi';
import { API_VERSION } from '../../lib/model/group';
import { GpuResourceQuotaProps, renderGpuResourceQuota } from '../../lib/render/gpu-resource-quota';
import { InputArgs, outputOf, Owner, renderArgs } from './inputs';
import { claimNames, registerObject } from './register';

export type { GpuResourceQuotaProps, GpuResourceQuotaSingleProps, GpuResourceQuotaTotalProps } from '../../lib/render/gpu-resource-quota';

/** Arguments of GpuResourceQuota: the props of the cdk8s construct, each a `pulumi.Input`. */
export type GpuResourceQuotaArgs = InputArgs<GpuResourceQuotaProps>;

/**
 * GPU quotas of one namespace (a GPUResourceQuota): `total` bounds the sum over the namespace's GPU
 * pods, enforced by the scheduler extender at placement (a pod over it waits Pending with a reason
 * naming the quota); `single` bounds each pod, enforced at admission. Quota changes apply to new
 * placements; shares already bound are never revoked. Its name is `name`, or the resource name when
 * `name` is not set.
 *
 * @example
 * new GpuResourceQuota('ml-quota', { namespace: 'ml',
 *   total: { requests: { tflops: '400', vram: '160Gi' }, maxWorkers: 20 },
 *   single: { maxRequests: { tflops: '100', vram: '40Gi' }, maxGpuCount: 2 } },
 *   { dependsOn: controller.crds });
 * @throws ValidationError `GpuResourceQuota <name>: ...` naming every bad plain prop
 */
export class GpuResourceQuota extends pulumi.ComponentResource {
  /** Name of the quota (`kubectl get gpuquota -n <namespace> <name>`). */
  public readonly quotaName: pulumi.Output<string>;
  /** The GPUResourceQuota custom resource (named as cdk8s's `apiObject`). */
  public readonly apiObject: pulumi.CustomResource;

  constructor(name: string, args: GpuResourceQuotaArgs, opts?: pulumi.ComponentResourceOptions) {
    const context = `GpuResourceQuota ${name}`;
    const owner: Owner = {};
    const object = renderArgs<GpuResourceQuotaProps, ReturnType<typeof renderGpuResourceQuota>>(args, context, owner, (props) =>
      renderGpuResourceQuota(props.name ?? name, props, { context, nameFromId: props.name === undefined }),
    );
    super('tensor-fusion:index:GpuResourceQuota', name, {}, opts);
    owner.resource = this;
    this.apiObject = registerObject(
      name,
      claimNames(this, context, object),
      { apiVersion: API_VERSION, kind: 'GPUResourceQuota' },
      ['metadata', 'spec'],
      { parent: this },
    );
    this.quotaName = outputOf(object, (o) => o.metadata.name);
    this.registerOutputs({ quotaName: this.quotaName });
  }
}

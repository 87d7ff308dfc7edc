import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuResourceQuotaProps, renderGpuResourceQuota } from '../../lib/render/gpu-resource-quota';
import { dependOnController } from './order';
import { addObjects, childPath, claimNames } from './register';

export type { GpuResourceQuotaProps, GpuResourceQuotaSingleProps, GpuResourceQuotaTotalProps } from '../../lib/render/gpu-resource-quota';

/**
 * GPU quotas of one namespace (a GPUResourceQuota): `total` bounds the sum over the namespace's GPU
 * pods, enforced by the scheduler extender at placement (a pod over it waits Pending with a reason
 * naming the quota); `single` bounds each pod, enforced at admission. Quota changes apply to new
 * placements; shares already bound are never revoked. Its name is `name`, or the construct id when
 * `name` is not set.
 *
 * @example
 * new GpuResourceQuota(chart, 'ml-quota', { namespace: 'ml',
 *   total: { requests: { tflops: '400', vram: '160Gi' }, maxWorkers: 20 },
 *   single: { maxRequests: { tflops: '100', vram: '40Gi' }, maxGpuCount: 2 } });
 * @throws ValidationError `GpuResourceQuota <id>: ...` naming every bad prop; nothing is added then
 */
export class GpuResourceQuota extends Construct {
  /** The GPUResourceQuota object. */
  public readonly apiObject: ApiObject;
  /** Name of the quota (`kubectl get gpuquota -n <namespace> <name>`). */
  public readonly quotaName: string;

  constructor(scope: Construct, id: string, props: GpuResourceQuotaProps) {
    const context = `GpuResourceQuota ${id}`;
    const object = renderGpuResourceQuota(props.name ?? id, props, { context, nameFromId: props.name === undefined });
    claimNames(scope, childPath(scope, id), [object], context);
    super(scope, id);
    this.quotaName = object.metadata.name;
    [this.apiObject] = addObjects(this, [object]);
    dependOnController(this);
  }
}

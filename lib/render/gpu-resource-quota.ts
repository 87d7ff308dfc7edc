/** GPUResourceQuota: the GPU quotas of one namespace, from props named as its spec but for `maxGpuCount`. */
import { validateSpec, withBothQuotaAmounts } from '../api';
import type { GPUResourceQuotaSpecFields } from '../api/generated/api-props';
import { FieldIssue, fieldIssue, throwIfInvalid } from '../model/errors';
import { KubeObject } from '../k8s/object';
import { API_VERSION } from '../model/group';
import { checkGpuCount } from '../model/rules';
import { checkMeta, ObjectMetaProps, RenderContext, renderMeta } from './metadata';

/**
 * Bounds of the whole namespace, like a ResourceQuota: TFLOPS and VRAM count every GPU a pod takes
 * (the per-GPU request times its GPU count), summed over the namespace's pods holding or reserving a
 * GPU share; `maxWorkers` counts those pods. Enforced by the scheduler extender at placement.
 */
export type GpuResourceQuotaTotalProps = NonNullable<GPUResourceQuotaSpecFields['total']>;

type SingleFields = NonNullable<GPUResourceQuotaSpecFields['single']>;

/**
 * Bounds of one pod, like a LimitRange max: `maxRequests` and `maxLimits` per GPU (the unit of the
 * `tensor-fusion.ai/tflops-request` and `vram-request` annotations), `maxGpuCount` per pod. Enforced
 * by the admission webhook.
 */
export interface GpuResourceQuotaSingleProps extends Omit<SingleFields, 'maxGPUCount'> {
  /**
   * Most GPUs one pod may take, 1 to 128; written to the spec as `maxGPUCount`.
   * @default unbounded
   */
  readonly maxGpuCount?: number;
}

/**
 * Props of GpuResourceQuota: the namespace it bounds, its metadata, and the spec's `total` and
 * `single` (with `single.maxGpuCount` for the spec's `maxGPUCount`). At least one bound must be set.
 * A TFLOPS/VRAM pair that sets one half is written with the other as the most the field allows
 * (`UNBOUNDED_QUOTA_AMOUNTS`: 100000000 TFLOPS and 1Ei in `total`, 100000 and 1Pi in `single`):
 * upstream's CRD requires both.
 * @example
 * { namespace: 'ml', total: { requests: { tflops: '400', vram: '160Gi' }, maxWorkers: 20 },
 *   single: { maxRequests: { tflops: '100', vram: '40Gi' }, maxGpuCount: 2 } }
 */
export interface GpuResourceQuotaProps extends ObjectMetaProps {
  /** Namespace whose GPU pods the quota bounds; the quota object lives in it. */
  readonly namespace: string;
  /**
   * Bounds of the whole namespace (requests, limits, maxWorkers) and the alert threshold.
   * @default no namespace bound
   */
  readonly total?: GpuResourceQuotaTotalProps;
  /**
   * Bounds of each pod (maxRequests and maxLimits per GPU, maxGpuCount).
   * @default no bound per pod
   */
  readonly single?: GpuResourceQuotaSingleProps;
}

/** Validates the props that are not plain spec fields: the namespace (required) and `single.maxGpuCount`. */
export function checkGpuResourceQuotaProps(name: string, props: GpuResourceQuotaProps, nameFromId = false): FieldIssue[] {
  const issues = checkMeta(name, props, undefined, nameFromId);
  if (props.namespace === undefined) {
    issues.push(fieldIssue('namespace', undefined, 'the namespace whose GPU pods the quota bounds, such as team-a'));
  }
  const single = (props.single ?? {}) as GpuResourceQuotaSingleProps & { maxGPUCount?: unknown };
  if (single.maxGPUCount !== undefined) {
    issues.push(
      fieldIssue('single.maxGPUCount', single.maxGPUCount, 'single.maxGpuCount instead: maxGPUCount is the spelling of the spec'),
    );
  }
  const count = single.maxGpuCount === undefined ? undefined : checkGpuCount('single.maxGpuCount', single.maxGpuCount);
  return count ? [...issues, count] : issues;
}

/**
 * The spec: `total` as given, `single` with `maxGpuCount` under its wire name, and any other prop
 * (refused by the spec's validation as an unknown field), copied (no shared references).
 */
function quotaSpec(props: GpuResourceQuotaProps): Record<string, unknown> {
  const { name: _name, namespace: _namespace, labels: _labels, annotations: _annotations, single, ...spec } = props;
  const out: Record<string, unknown> = { ...spec };
  if (single !== null && typeof single === 'object' && !Array.isArray(single)) {
    const { maxGpuCount, ...rest } = single;
    out.single = maxGpuCount === undefined ? rest : { ...rest, maxGPUCount: maxGpuCount };
  } else if (single !== undefined) {
    out.single = single;
  }
  return JSON.parse(JSON.stringify(out)) as Record<string, unknown>;
}

/**
 * Renders a GPUResourceQuota.
 * @throws ValidationError naming every bad prop
 */
export function renderGpuResourceQuota(
  name: string,
  props: GpuResourceQuotaProps,
  { context = `GpuResourceQuota ${name}`, nameFromId }: RenderContext = {},
): KubeObject {
  throwIfInvalid(checkGpuResourceQuotaProps(name, props, nameFromId), context);
  const spec = quotaSpec(props);
  throwIfInvalid(validateSpec('GPUResourceQuota', spec), context);
  return { apiVersion: API_VERSION, kind: 'GPUResourceQuota', metadata: renderMeta(name, props), spec: withBothQuotaAmounts(spec) };
}

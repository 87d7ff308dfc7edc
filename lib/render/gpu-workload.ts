/**
 * Makes any pod template a TensorFusion GPU workload: the Pulumi and cdk8s adapters call this on the
 * pod template of a Deployment, StatefulSet, Job, Pod or cdk8s-plus workload.
 */
import { ANNOTATION, decodeGpuAnnotations, EncodedGpuWorkload, encodeGpuWorkload, GpuWorkloadOptions } from '../annotations';
import { ANNOTATION_PREFIX } from '../model/metadata-keys';
import { throwIfInvalid } from '../model/errors';
import type { PodTemplate } from './template-path';

/** The input template type, with the metadata maps it now surely has. */
export type GpuWorkloadPodTemplate<T extends PodTemplate> = T & {
  /** The pod's metadata, with the GPU label and annotations set. */
  metadata: NonNullable<PodTemplate['metadata']> & {
    /** Pod labels, `tensor-fusion.ai/enabled: "true"` among them. */
    labels: Record<string, string>;
    /** Pod annotations, the `tensor-fusion.ai/*` ones among them. */
    annotations: Record<string, string>;
  };
};

/** Names of the template's containers, or undefined when it lists none (yet). */
function containerNames(template: PodTemplate): string[] | undefined {
  const containers = Array.isArray(template.spec?.containers) ? template.spec.containers : [];
  const names = containers.map((c) => c?.name).filter((n): n is string => typeof n === 'string');
  return names.length > 0 ? names : undefined;
}

/**
 * Whether a container-dependent rule (inject-container names, the list required with several
 * containers) could fail for these options on a template with `containers`.
 */
function dependsOnContainers(options: GpuWorkloadOptions, containers: readonly string[] | undefined, keptInject: boolean): boolean {
  if (containers === undefined || keptInject) return false;
  return options.injectContainers !== undefined ? options.injectContainers.some((c) => !containers.includes(c)) : containers.length > 1;
}

/**
 * Returns a new pod template with the `tensor-fusion.ai/enabled` label and the annotations of
 * `options` merged into its metadata. Unrelated labels and annotations are kept; an annotation the
 * template already had under the same key is replaced. The whole resulting annotation set is checked
 * against the template's containers (so stale or misspelled `tensor-fusion.ai/*` keys already on the
 * template are reported too); on any issue it throws a ValidationError and returns nothing.
 * The input is never modified; parts it does not change (such as `spec`) are shared, not copied.
 * @param encoded `encodeGpuWorkload(options)` when the caller already has it (checked, without containers)
 * @example
 * gpuWorkloadPodTemplate({ spec: { containers: [{ name: 'python', image: 'pytorch' }] } }, { tflopsRequest: 10, vramRequest: '4Gi' })
 */
export function gpuWorkloadPodTemplate<T extends PodTemplate>(
  template: T,
  options: GpuWorkloadOptions,
  encoded?: EncodedGpuWorkload,
): GpuWorkloadPodTemplate<T> {
  const containers = containerNames(template);
  const existing = template.metadata?.annotations ?? {};
  // An inject-container annotation already on the template satisfies "required with several
  // containers"; the decode below still checks its names.
  const keptInject = options.injectContainers === undefined && ANNOTATION.injectContainers in existing;
  // The encoding does not depend on the containers, only its checks do: encode again against them
  // only when one of those checks could fail (it then throws with its message).
  const ours =
    encoded === undefined || dependsOnContainers(options, containers, keptInject)
      ? encodeGpuWorkload(options, { containers: keptInject ? undefined : containers })
      : encoded;
  const annotations = { ...existing, ...ours.annotations };
  // Our annotations were checked by the encoding; the whole set is decoded again only when the
  // template brought tensor-fusion.ai annotations of its own (the decode is most of the cost).
  if (Object.keys(existing).some((key) => key.startsWith(ANNOTATION_PREFIX))) {
    throwIfInvalid(decodeGpuAnnotations(annotations, { containers }).issues, 'GPU workload pod template');
  }
  return {
    ...template,
    metadata: { ...template.metadata, labels: { ...template.metadata?.labels, ...ours.labels }, annotations },
  };
}

/**
 * Typed options -> the pod label and `tensor-fusion.ai/*` annotations, spelled as TensorFusion's documentation spells them.
 */
import { throwIfInvalid } from '../model/errors';
import { ENABLED_LABEL } from '../model/metadata-keys';
import { formatBytes } from '../k8s/quantity';
import { formatTflops } from '../model/share-quantity';
import { checkGpuWorkloadInput } from './check';
import { AnnotationSpec, GPU_WORKLOAD_ANNOTATIONS } from './reference';
import type { GpuWorkloadOptions } from './options';

/** What is known of the pod template the annotations go on. */
export interface PodTemplateContext {
  /** Container names of the pod template; enables the inject-container checks. */
  readonly containers?: readonly string[];
}

/** The pod label and annotations that make a pod a TensorFusion GPU workload. */
export interface EncodedGpuWorkload {
  /** Always `{ 'tensor-fusion.ai/enabled': 'true' }`. */
  readonly labels: Readonly<Record<string, string>>;
  /** One entry per option given, in the order of the annotation table (GPU_WORKLOAD_ANNOTATIONS). */
  readonly annotations: Readonly<Record<string, string>>;
}

function encodeValue(spec: AnnotationSpec, value: unknown): string {
  switch (spec.kind) {
    case 'tflops':
      return typeof value === 'number' ? formatTflops(value) : String(value).trim();
    case 'vram':
      // A quantity string is kept as written (`4Gi` stays `4Gi`); bytes get the largest exact suffix.
      return typeof value === 'number' ? formatBytes(value) : String(value).trim();
    case 'containerNames':
      return (value as readonly string[]).join(',');
    default:
      return String(value);
  }
}

/**
 * Encodes options into the label and annotations that make a pod template a GPU workload.
 * Validates everything first and throws a ValidationError listing every issue; nothing is returned
 * half-encoded.
 * @example
 * encodeGpuWorkload({ tflopsRequest: 10, vramRequest: '4Gi' })
 * // { labels: { 'tensor-fusion.ai/enabled': 'true' },
 * //   annotations: { 'tensor-fusion.ai/tflops-request': '10', 'tensor-fusion.ai/vram-request': '4Gi' } }
 */
export function encodeGpuWorkload(options: GpuWorkloadOptions, context: PodTemplateContext = {}): EncodedGpuWorkload {
  const { issues } = checkGpuWorkloadInput('option', options, context.containers);
  throwIfInvalid(issues, 'GPU workload options');
  const annotations: Record<string, string> = {};
  for (const spec of GPU_WORKLOAD_ANNOTATIONS) {
    const value = options[spec.option];
    if (value !== undefined) annotations[spec.key] = encodeValue(spec, value);
  }
  return { labels: { [ENABLED_LABEL]: 'true' }, annotations };
}

/**
 * Pod annotations -> typed settings and every issue found. The admission webhook denies pods with
 * these same messages, so decoding never throws, whatever map it is given.
 */
import type { FieldIssue } from '../model/errors';
import { checkGpuWorkloadInput } from './check';
import type { PodTemplateContext } from './encode';
import type { GpuWorkloadSettings } from './options';

/** The result of {@link decodeGpuAnnotations}. */
export interface DecodedGpuWorkload {
  /** Fields whose annotations were present and valid; TFLOPS as numbers, VRAM in bytes. */
  readonly settings: GpuWorkloadSettings;
  /** Empty when the annotations are valid. */
  readonly issues: readonly FieldIssue[];
}

/**
 * Decodes and validates the `tensor-fusion.ai/*` annotations of a pod. Other keys are ignored; keys
 * the controller writes itself (CONTROLLER_WRITTEN_KEYS) are accepted; any other tensor-fusion.ai key
 * is an issue with a did-you-mean hint.
 * @example
 * decodeGpuAnnotations({ 'tensor-fusion.ai/vram-limit': '4Gi' }).settings // { vramLimit: 4294967296 }
 */
export function decodeGpuAnnotations(annotations: unknown, context: PodTemplateContext = {}): DecodedGpuWorkload {
  const containers = context && typeof context === 'object' ? context.containers : undefined;
  const { settings, issues } = checkGpuWorkloadInput('annotation', annotations, containers);
  return { settings, issues };
}

/**
 * The types the annotation value checks share (values.ts, upstream.ts, keys.ts): a leaf, so that
 * those files import each other in one direction only.
 */

/** Where a value came from: a pod annotation (always a string) or a typed option. */
export type ValueSource = 'annotation' | 'option';

/** What a value check knows besides the value. */
export interface ValueContext {
  readonly source: ValueSource;
  /** Container names of the pod template, when known. */
  readonly containers?: readonly string[];
}

/** The kinds of value only upstream TensorFusion's keys have. */
export type UpstreamValueKind = 'percent' | 'gpuIndices' | 'vendor' | 'duration';

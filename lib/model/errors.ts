import { closest, distance } from 'fastest-levenshtein';

/**
 * One problem with one input field. Every validator in lib/ reports through this shape so that the
 * Pulumi and cdk8s components and the admission webhook all print the same words.
 */
export interface FieldIssue {
  /** Path of the field, e.g. `spec.resources.requests.vram` or `tensor-fusion.ai/qos`. */
  readonly field: string;
  /** The value that was given. */
  readonly value: unknown;
  /** What is allowed instead, in words. */
  readonly expected: string;
  /** `field: got value, expected ...` */
  readonly message: string;
}

/**
 * What a value checked while it is parsed gives: the parsed value when valid, the issues when not.
 * The check functions of lib/ return one of three shapes, by what they check: one rule on one field
 * gives `FieldIssue | undefined`; a whole props object gives `FieldIssue[]` (every issue at once, so a
 * user fixes them all in one go); a value that is parsed gives `Checked<T>`.
 */
export interface Checked<T = unknown> {
  /** The parsed value; undefined when there are issues. */
  readonly value?: T;
  /** What is wrong with the input; empty when it is valid. */
  readonly issues: readonly FieldIssue[];
}

/** A valid value. */
export const checked = <T>(value: T): Checked<T> => ({ value, issues: [] });

/** An invalid value (no issue: nothing to report, and no value either). */
export const refused = (issue: FieldIssue | undefined): Checked<never> => ({ issues: issue ? [issue] : [] });

/** Renders a value for an error message: strings quoted, missing values named. */
export function formatValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}`;
  try {
    const json = JSON.stringify(value);
    return json.length > 80 ? `${json.slice(0, 77)}...` : json;
  } catch {
    return String(value);
  }
}

/** Builds a {@link FieldIssue} whose message names the field, the bad value and what is allowed. */
export function fieldIssue(field: string, value: unknown, expected: string): FieldIssue {
  return { field, value, expected, message: `${field}: got ${formatValue(value)}, expected ${expected}` };
}

/** Thrown when input does not validate; `issues` lists every problem found, in input order. */
export class ValidationError extends Error {
  constructor(
    /** Every problem found, in input order. */
    readonly issues: readonly FieldIssue[],
    context?: string,
  ) {
    const body = issues.map((i) => i.message).join('\n');
    super(context ? `${context}: ${body}` : body);
    this.name = 'ValidationError';
  }
}

/** Throws a {@link ValidationError} when `issues` is not empty. */
export function throwIfInvalid(issues: readonly FieldIssue[], context?: string): void {
  if (issues.length > 0) throw new ValidationError(issues, context);
}

/**
 * The field path of one entry of a map, as messages name it: `metadata.labels["tensor-fusion.ai/enabled"]`.
 * @example entryPath('spec.nodeSelector', 'kubernetes.io/os') // 'spec.nodeSelector["kubernetes.io/os"]'
 */
export function entryPath(map: string, key: string): string {
  return `${map}[${JSON.stringify(key)}]`;
}

/**
 * The known name nearest to `name` when it is close enough to be a typo: the same but for case, or at
 * most a third of the typed name's letters (at least two) away. The one threshold for every
 * did-you-mean hint. fastest-levenshtein rather than a hand-written edit distance.
 * @example didYouMean('tflopsLimt', ['tflopsLimit', 'vramLimit']) // 'tflopsLimit'
 */
export function didYouMean(name: string, known: readonly string[]): string | undefined {
  if (known.length === 0) return undefined;
  const best = closest(name, known as string[]);
  const near = best.toLowerCase() === name.toLowerCase() || distance(name, best) <= Math.max(2, Math.floor(name.length / 3));
  return near ? best : undefined;
}

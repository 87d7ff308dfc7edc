/**
 * The quantities of one GPU share: VRAM bytes and FP16 TFLOPS, checked against lib/model/limits.ts and
 * written back the way TensorFusion's documentation writes them.
 */
import { Checked, checked, fieldIssue, refused } from './errors';
import { formatBytes, parseQuantity } from '../k8s/quantity';
import { QUANTITY_MAX_LENGTH, TFLOPS_MAX, VRAM_MAX, VRAM_MIN } from './limits';

/** Parses `input` when it is a quantity string of bounded length or a finite number. */
function parseBounded(input: unknown): number | undefined {
  if (typeof input === 'string' && input.length > QUANTITY_MAX_LENGTH) return undefined;
  return typeof input === 'string' || typeof input === 'number' ? parseQuantity(input) : undefined;
}

/** Largest figure a VRAM suggestion reads as GiB. */
const LIKELY_GI = 300;

/** The digits the user wrote, for a suggestion (`500m` -> `500`). */
function writtenDigits(input: unknown): string {
  const m = typeof input === 'string' ? /^[+]?(\d+(?:\.\d+)?)/.exec(input) : undefined;
  return m ? m[1] : String(input);
}

/**
 * Validates the VRAM of one share per GPU (bytes as a quantity, e.g. `4Gi`): a positive, whole number
 * of bytes from 1Mi to 1Pi. Below 1Mi or fractional, the message shows the value the user most likely
 * meant (`4` -> `4Gi`, `500m` -> `500Mi`). `per` names what the bound `max` applies to in the message
 * (a namespace quota's totals have a larger one).
 */
export function checkVram(field: string, input: unknown, per = 'per GPU', max = VRAM_MAX): Checked<number> {
  const bytes = parseBounded(input);
  const bad = (expected: string) => refused(fieldIssue(field, input, expected));
  if (bytes === undefined || bytes <= 0 || Number.isNaN(bytes)) {
    if (typeof input === 'string' && input.length > QUANTITY_MAX_LENGTH) {
      return bad(`a Kubernetes quantity of at most ${QUANTITY_MAX_LENGTH} characters, and at most ${formatBytes(max)} of VRAM`);
    }
    return bad('a positive Kubernetes quantity such as 4Gi or 512Mi');
  }
  if (bytes > max) return bad(`at most ${formatBytes(max)} of VRAM ${per}`);
  if (bytes < VRAM_MIN) {
    const digits = writtenDigits(input);
    // No GPU has more than 300Gi, so a larger figure most likely counts MiB (`500m` -> `500Mi`).
    const unit = Number(digits) <= LIKELY_GI ? 'Gi' : 'Mi';
    return bad(
      `at least ${formatBytes(VRAM_MIN)} of VRAM (a number or a quantity without a unit is bytes): did you mean "${digits}${unit}"?`,
    );
  }
  if (!Number.isInteger(bytes)) {
    return bad(`a whole number of bytes: did you mean "${Math.ceil(bytes / VRAM_MIN)}Mi"?`);
  }
  return checked(bytes);
}

/**
 * Validates the TFLOPS of one share per GPU (`'10'`, `10`, `0.5`, `500m`): above 0, at most 100000.
 * `per` names what the bound `max` applies to in the message (a namespace quota's totals have a larger one).
 */
export function checkTflops(field: string, input: unknown, per = 'per GPU', max = TFLOPS_MAX): Checked<number> {
  const value = parseBounded(input);
  if (value === undefined || value <= 0 || Number.isNaN(value)) {
    if (typeof input === 'string' && input.length > QUANTITY_MAX_LENGTH) {
      return refused(fieldIssue(field, input, `a number of at most ${QUANTITY_MAX_LENGTH} characters, and at most ${max} TFLOPS`));
    }
    return refused(fieldIssue(field, input, "a positive number of TFLOPS such as '10' or '0.5'"));
  }
  if (value > max) return refused(fieldIssue(field, input, `at most ${max} TFLOPS ${per}`));
  return checked(value);
}

/** Formats a TFLOPS value as TensorFusion's documentation writes it: a plain decimal string (`'10'`, `'0.5'`). */
export function formatTflops(tflops: number): string {
  return `${Number(tflops.toPrecision(12))}`;
}

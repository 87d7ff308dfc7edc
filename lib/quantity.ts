/**
 * Kubernetes resource quantities (`4Gi`, `500m`, `1.5e3`) and TFLOPS values, read as apimachinery's
 * `resource.ParseQuantity` reads them: `E` alone is the exa suffix (10^18), `Ei` the exbi suffix
 * (2^60), and `e`/`E` followed by a signed integer is a decimal exponent (`1E6`, `1e-3`, `1.3E+6`);
 * surrounding spaces are not part of a quantity.
 *
 * Hand-written because no well-kept npm package parses Kubernetes quantities exactly: the parser of
 * @kubernetes/client-node (`quantityToScalar`) returns BigInt for some suffixes, throws on fractions
 * such as `1.5Gi` and does not know exponents; the small standalone parsers are unmaintained 0.x
 * releases. Decimal values go through `Number("<digits>e<exponent>")`, binary ones are a power of two
 * times the digits, so each is the double nearest to the written value.
 */
import { FieldIssue, fieldIssue } from './errors';

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([KMGTPE]i)|([numkMGTPE])|[eE]([+-]?\d+))?$/;

const DECIMAL_EXPONENT: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_EXPONENT: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

/** A quantity given either as a Kubernetes quantity string or as a plain number. */
export type QuantityInput = string | number;

/**
 * Longest quantity string accepted anywhere (CRD schema and codec): long enough for any byte count
 * written out in full (`1125899906842624`) or with nine decimals, short enough that a 400-digit value
 * never reaches arithmetic.
 */
export const QUANTITY_MAX_LENGTH = 32;

/**
 * Pattern (JSON Schema / CRD) of a Kubernetes quantity string, as apimachinery parses it: the decimal
 * exponent is a signed integer. Exponents have at most two digits, so `1e400` is refused by the CRD.
 */
export const QUANTITY_PATTERN = '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?[0-9]{1,2}))?$';

/**
 * Most FP16 TFLOPS of one share per GPU: 100000, over 40 times the largest GPU in the catalog (B200,
 * 2250), so that no real request is refused while `1e309` (Infinity) and typos never reach placement.
 */
export const TFLOPS_MAX = 100_000;
/** Least VRAM of one share per GPU: 1Mi. Below it the value is almost surely a missing unit (`4`, `500m`). */
export const VRAM_MIN = 2 ** 20;
/**
 * Most VRAM of one share per GPU: 1Pi (2^50 bytes), over 3000 times the largest GPU today; byte counts
 * stay exact in a double, which ends at 8Pi (2^53).
 */
export const VRAM_MAX = 2 ** 50;

/**
 * Parses a quantity to a number in base units, or returns undefined when it is not a quantity.
 * A quantity beyond the range of a double gives Infinity, which the checks below refuse.
 * @example parseQuantity('1Ei') // 2 ** 60
 * @example parseQuantity('2E') // 2e18
 */
export function parseQuantity(input: QuantityInput): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) ? input : undefined;
  if (typeof input !== 'string') return undefined;
  const m = QUANTITY.exec(input);
  if (!m) return undefined;
  const [, sign, digits, binary, decimal, exponent] = m;
  let value: number;
  if (binary !== undefined) value = Number(digits) * 2 ** BINARY_EXPONENT[binary];
  else value = Number(`${digits}e${decimal !== undefined ? DECIMAL_EXPONENT[decimal] : exponent ?? '0'}`);
  return sign === '-' ? -value : value;
}

interface Checked {
  value?: number;
  issue?: FieldIssue;
}

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
 * meant (`4` -> `4Gi`, `500m` -> `500Mi`).
 */
export function checkVram(field: string, input: unknown): Checked {
  const bytes = parseBounded(input);
  const bad = (expected: string): Checked => ({ issue: fieldIssue(field, input, expected) });
  if (bytes === undefined || bytes <= 0 || Number.isNaN(bytes)) {
    if (typeof input === 'string' && input.length > QUANTITY_MAX_LENGTH) {
      return bad(`a Kubernetes quantity of at most ${QUANTITY_MAX_LENGTH} characters, and at most ${formatBytes(VRAM_MAX)} of VRAM`);
    }
    return bad('a positive Kubernetes quantity such as 4Gi or 512Mi');
  }
  if (bytes > VRAM_MAX) return bad(`at most ${formatBytes(VRAM_MAX)} of VRAM per GPU`);
  if (bytes < VRAM_MIN) {
    const digits = writtenDigits(input);
    // No GPU has more than 300Gi, so a larger figure most likely counts MiB (`500m` -> `500Mi`).
    const unit = Number(digits) <= LIKELY_GI ? 'Gi' : 'Mi';
    return bad(`at least ${formatBytes(VRAM_MIN)} of VRAM (a number or a quantity without a unit is bytes): did you mean "${digits}${unit}"?`);
  }
  if (!Number.isInteger(bytes)) {
    return bad(`a whole number of bytes: did you mean "${Math.ceil(bytes / VRAM_MIN)}Mi"?`);
  }
  return { value: bytes };
}

/** Validates the TFLOPS of one share per GPU (`'10'`, `10`, `0.5`, `500m`): above 0, at most 100000. */
export function checkTflops(field: string, input: unknown): Checked {
  const value = parseBounded(input);
  if (value === undefined || value <= 0 || Number.isNaN(value)) {
    if (typeof input === 'string' && input.length > QUANTITY_MAX_LENGTH) {
      return { issue: fieldIssue(field, input, `a number of at most ${QUANTITY_MAX_LENGTH} characters, and at most ${TFLOPS_MAX} TFLOPS`) };
    }
    return { issue: fieldIssue(field, input, "a positive number of TFLOPS such as '10' or '0.5'") };
  }
  if (value > TFLOPS_MAX) return { issue: fieldIssue(field, input, `at most ${TFLOPS_MAX} TFLOPS per GPU`) };
  return { value };
}

const BINARY = ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'] as const;

/** Formats bytes with the largest binary suffix that divides them exactly (`4294967296` -> `4Gi`). */
export function formatBytes(bytes: number): string {
  for (const suffix of BINARY) {
    const unit = 2 ** BINARY_EXPONENT[suffix];
    if (bytes >= unit && Number.isInteger(bytes / unit)) return `${bytes / unit}${suffix}`;
  }
  return `${Math.round(bytes)}`;
}

/** Formats a TFLOPS value as the seeds write it: a plain decimal string (`'10'`, `'0.5'`). */
export function formatTflops(tflops: number): string {
  return `${Number(tflops.toPrecision(12))}`;
}

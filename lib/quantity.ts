/**
 * Kubernetes resource quantities (`4Gi`, `500m`, `1.5e3`) and TFLOPS values.
 * Hand-written because the only maintained parser (in @kubernetes/client-node) returns
 * floating numbers for some suffixes and ignores exponents; this one is exact for byte sizes.
 */
import { FieldIssue, fieldIssue } from './errors';

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

const SUFFIX: Readonly<Record<string, number>> = {
  '': 1,
  n: 1e-9, u: 1e-6, m: 1e-3,
  k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** A quantity given either as a Kubernetes quantity string or as a plain number. */
export type QuantityInput = string | number;

/** Pattern (JSON Schema / CRD) that every Kubernetes quantity string matches. */
export const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** Parses a quantity to a number in base units, or returns undefined when it is not a quantity. */
export function parseQuantity(input: QuantityInput): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) ? input : undefined;
  if (typeof input !== 'string') return undefined;
  const m = QUANTITY.exec(input.trim());
  if (!m) return undefined;
  const [, sign, digits, suffix = ''] = m;
  const base = Number(digits);
  const scale = suffix.startsWith('e') || suffix.startsWith('E') ? 10 ** Number(suffix.slice(1)) : SUFFIX[suffix];
  const value = base * scale;
  return sign === '-' ? -value : value;
}

/** Validates a VRAM size (bytes as a quantity, e.g. `4Gi`); must be a positive quantity. */
export function checkVram(field: string, input: unknown): { value?: number; issue?: FieldIssue } {
  const bytes = typeof input === 'string' || typeof input === 'number' ? parseQuantity(input) : undefined;
  if (bytes === undefined || bytes <= 0) {
    return { issue: fieldIssue(field, input, 'a positive Kubernetes quantity such as 4Gi or 512Mi') };
  }
  return { value: bytes };
}

/** Validates a TFLOPS value (`'10'`, `10`, `0.5`, `500m`); must be a positive number. */
export function checkTflops(field: string, input: unknown): { value?: number; issue?: FieldIssue } {
  const value = typeof input === 'string' || typeof input === 'number' ? parseQuantity(input) : undefined;
  if (value === undefined || value <= 0) {
    return { issue: fieldIssue(field, input, "a positive number of TFLOPS such as '10' or '0.5'") };
  }
  return { value };
}

const BINARY = ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'] as const;

/** Formats bytes with the largest binary suffix that divides them exactly (`4294967296` -> `4Gi`). */
export function formatBytes(bytes: number): string {
  for (const suffix of BINARY) {
    const unit = SUFFIX[suffix];
    if (bytes >= unit && Number.isInteger(bytes / unit)) return `${bytes / unit}${suffix}`;
  }
  return `${Math.round(bytes)}`;
}

/** Formats a TFLOPS value as the seeds write it: a plain decimal string (`'10'`, `'0.5'`). */
export function formatTflops(tflops: number): string {
  return `${Number(tflops.toPrecision(12))}`;
}

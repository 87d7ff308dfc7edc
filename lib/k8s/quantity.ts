/**
 * Kubernetes resource quantities (`4Gi`, `500m`, `1.5e3`), read as apimachinery's
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
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([KMGTPE]i)|([numkMGTPE])|[eE]([+-]?\d+))?$/;

const DECIMAL_EXPONENT: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_EXPONENT: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

/** A quantity given either as a Kubernetes quantity string or as a plain number. */
export type QuantityInput = string | number;

/**
 * Pattern (JSON Schema / CRD) of a Kubernetes quantity string, as apimachinery parses it: the decimal
 * exponent is a signed integer. Exponents have at most two digits, so `1e400` is refused by the CRD.
 */
export const QUANTITY_PATTERN = '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?[0-9]{1,2}))?$';

/**
 * Parses a quantity to a number in base units, or returns undefined when it is not a quantity.
 * A quantity beyond the range of a double gives Infinity, which the share checks (lib/model/share-quantity.ts) refuse.
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
  else value = Number(`${digits}e${decimal !== undefined ? DECIMAL_EXPONENT[decimal] : (exponent ?? '0')}`);
  return sign === '-' ? -value : value;
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

/**
 * Our bounds and defaults of numbers the user writes: one home for each, imported by the schemas,
 * the codec, the allocator and the reconcilers.
 */

/**
 * Longest quantity string accepted anywhere (CRD schema and codec): long enough for any byte count
 * written out in full (`1125899906842624`) or with nine decimals, short enough that a 400-digit value
 * never reaches arithmetic.
 */
export const QUANTITY_MAX_LENGTH = 32;

/**
 * Most FP16 TFLOPS of one share per GPU: 100000, over 40 times the largest GPU in the catalog (B200,
 * 2250), so that no real request is refused while `1e309` (Infinity) and typos never reach placement.
 */
export const TFLOPS_MAX = 100_000;
/**
 * Most FP16 TFLOPS a namespace quota's totals may set: 100,000,000, some 44,000 B200s, so that a
 * quota over a large fleet is never refused while typos and Infinity still are.
 */
export const QUOTA_TFLOPS_MAX = 100_000_000;
/** Most VRAM a namespace quota's totals may set: 1Ei, some five million 192 GiB GPUs. */
export const QUOTA_VRAM_MAX = 2 ** 60;
/** Least VRAM of one share per GPU: 1Mi. Below it the value is almost surely a missing unit (`4`, `500m`). */
export const VRAM_MIN = 2 ** 20;
/**
 * Most VRAM of one share per GPU: 1Pi (2^50 bytes), over 3000 times the largest GPU today; byte counts
 * stay exact in a double, which ends at 8Pi (2^53).
 */
export const VRAM_MAX = 2 ** 50;

/** Upstream bounds of `tflopsOversellRatio` (percent). */
export const OVERSELL_MIN = 100;
export const OVERSELL_MAX = 100000;
/** Upstream default of `tflopsOversellRatio`: limits may reach 5x capacity. */
export const DEFAULT_OVERSELL_RATIO = 500;

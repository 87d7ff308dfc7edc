/**
 * Kept for the files that still import from here: Kubernetes quantities live in lib/k8s/quantity.ts,
 * our bounds in lib/model/limits.ts, the GPU share checks in lib/model/share-quantity.ts.
 */
export { parseQuantity, formatBytes, QUANTITY_PATTERN } from './k8s/quantity';
export type { QuantityInput } from './k8s/quantity';
export { QUANTITY_MAX_LENGTH, TFLOPS_MAX, VRAM_MIN, VRAM_MAX } from './model/limits';
export { checkVram, checkTflops, formatTflops } from './model/share-quantity';

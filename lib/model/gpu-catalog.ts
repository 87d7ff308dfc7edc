/**
 * FP16 dense Tensor-Core TFLOPS per GPU model, the unit in which pools count GPU capacity.
 *
 * Figures are the vendors' published peak FP16 Tensor-Core throughput *without* structured sparsity
 * (datasheets halve the "with sparsity" figure). For GeForce/RTX cards the FP16-accumulate figure is
 * used. These are peaks, not measured throughput; a pool can override any model through
 * `spec.capacityConfig.gpuTflops` (keys: the short model name, e.g. `A100`, or the full GFD product).
 */
import { parseQuantity } from '../k8s/quantity';

/** One catalog entry. */
export interface GpuModelInfo {
  /** Short model name, as written to `GPU.status.gpuModel` (e.g. `A100`, `H100-PCIe`). */
  readonly model: string;
  /** FP16 dense TFLOPS of one device. */
  readonly tflops: number;
  /** Token sequences of a normalised product name that identify the model (e.g. `['RTX', '4090']`). */
  readonly match: readonly (readonly string[])[];
  /** Where the figure comes from. */
  readonly source: string;
}

const e = (model: string, tflops: number, source: string, ...match: string[][]): GpuModelInfo => ({
  model,
  tflops,
  source,
  match: match.length ? match : [[model.toUpperCase()]],
});

/**
 * The table. Variants (PCIe, NVL) come before the family entry so that the more specific match wins.
 */
export const GPU_CATALOG: readonly GpuModelInfo[] = [
  e('B200', 2250, 'NVIDIA DGX B200 datasheet (FP16 4.5 PF sparse per GPU)'),
  e('H200', 989, 'NVIDIA H200 datasheet (SXM)'),
  e('H100-PCIe', 756, 'NVIDIA H100 datasheet (PCIe)', ['H100', 'PCIE']),
  e('H100-NVL', 835, 'NVIDIA H100 NVL datasheet (per GPU)', ['H100', 'NVL']),
  e('H100', 989, 'NVIDIA H100 datasheet (SXM)'),
  e('GH200', 989, 'NVIDIA GH200 datasheet'),
  e('H800', 989, 'NVIDIA H800 (SXM, H100 compute)'),
  e('H20', 148, 'NVIDIA H20 published specification'),
  e('A100', 312, 'NVIDIA A100 datasheet (SXM4 and PCIe, 40/80GB)'),
  e('A800', 312, 'NVIDIA A800 (A100 compute)'),
  e('A30', 165, 'NVIDIA A30 datasheet'),
  e('A10G', 70, 'AWS EC2 G5 (A10G) published FP16 Tensor figure'),
  e('A10', 125, 'NVIDIA A10 datasheet'),
  e('L40S', 362, 'NVIDIA L40S datasheet'),
  e('L40', 181, 'NVIDIA L40 datasheet'),
  e('L20', 119.5, 'NVIDIA L20 published specification'),
  e('L4', 121, 'NVIDIA L4 datasheet'),
  e('T4', 65, 'NVIDIA T4 datasheet (FP16 mixed precision)'),
  e('V100S', 130, 'NVIDIA V100S datasheet'),
  e('V100-PCIe', 112, 'NVIDIA V100 datasheet (PCIe)', ['V100', 'PCIE']),
  e('V100', 125, 'NVIDIA V100 datasheet (SXM2)'),
  e('RTX-6000-Ada', 364, 'NVIDIA RTX 6000 Ada datasheet', ['RTX', '6000', 'ADA']),
  e('RTX-A6000', 155, 'NVIDIA Ampere GA102 whitepaper (RTX A6000)', ['RTX', 'A6000'], ['A6000']),
  e('RTX-4090', 165, 'NVIDIA Ada Lovelace whitepaper (GeForce RTX 4090, FP16 accumulate)', ['RTX', '4090']),
  e('RTX-3090', 71, 'NVIDIA Ampere GA102 whitepaper (GeForce RTX 3090, FP16 accumulate)', ['RTX', '3090']),
];

/**
 * Normalises a GPU product name as NVIDIA GPU Feature Discovery writes it (`NVIDIA-A100-SXM4-80GB`,
 * `Tesla-T4`, `NVIDIA-GeForce-RTX-4090`, `NVIDIA-A100-SXM4-40GB-MIG-1g.5gb`, `...-SHARED`) into upper-case
 * tokens without vendor, brand, MIG and sharing suffixes.
 * @example normalizeGpuProduct('Tesla-T4') // ['T4']
 */
export function normalizeGpuProduct(product: string): string[] {
  const tokens = product
    .toUpperCase()
    .replace(/[\s_]+/g, '-')
    .split('-')
    .filter(Boolean);
  const mig = tokens.indexOf('MIG');
  const kept = mig >= 0 ? tokens.slice(0, mig) : tokens;
  // Upstream TensorFusion writes `RTX4090`, GFD `RTX-4090`.
  return kept
    .filter((t) => !['NVIDIA', 'TESLA', 'GEFORCE', 'SHARED'].includes(t))
    .flatMap((t) => (/^RTX\w/.test(t) ? ['RTX', t.slice(3)] : [t]));
}

function containsSequence(tokens: readonly string[], seq: readonly string[]): boolean {
  outer: for (let i = 0; i + seq.length <= tokens.length; i++) {
    for (let j = 0; j < seq.length; j++) if (tokens[i + j] !== seq[j]) continue outer;
    return true;
  }
  return false;
}

/** The catalog entry for a product name, or undefined when the model is unknown. */
export function catalogEntry(product: string): GpuModelInfo | undefined {
  const tokens = normalizeGpuProduct(product);
  return GPU_CATALOG.find((m) => m.match.some((seq) => containsSequence(tokens, seq)));
}

/** What {@link lookupGpuTflops} found. */
export interface GpuTflops {
  model: string;
  tflops: number;
  /** `pool` when the pool's gpuTflops map set it, `catalog` otherwise. */
  from: 'pool' | 'catalog';
}

/**
 * FP16 dense TFLOPS of one device of `product`: the pool override (by full product name, then by
 * short model name, case-insensitive) wins over the catalog. Undefined when neither knows the model.
 * @example lookupGpuTflops('NVIDIA-A100-SXM4-80GB') // { model: 'A100', tflops: 312, from: 'catalog' }
 */
export function lookupGpuTflops(product: string, overrides: Record<string, string | number> = {}): GpuTflops | undefined {
  const entry = catalogEntry(product);
  const model = entry?.model ?? normalizeGpuProduct(product).join('-');
  const wanted = [product, model].map((k) => k.toUpperCase());
  for (const [key, value] of Object.entries(overrides)) {
    if (!wanted.includes(key.toUpperCase())) continue;
    const tflops = parseQuantity(value);
    if (tflops !== undefined && tflops > 0) return { model, tflops, from: 'pool' };
  }
  return entry ? { model: entry.model, tflops: entry.tflops, from: 'catalog' } : undefined;
}

/**
 * Whether a GPU whose `GPU.status.gpuModel` is `gpuModel` (the catalog's short name, or the GFD product
 * when the catalog does not know it) satisfies a requested model `wanted` (`tensor-fusion.ai/gpu-model`,
 * `spec.gpuModel`). The rule:
 * 1. Names compare as {@link normalizeGpuProduct} tokens: case-insensitive, `-`, `_` and spaces alike,
 *    vendor and brand words (NVIDIA, Tesla, GeForce) dropped.
 * 2. Family: the request matches when its tokens lead the GPU's model. `H100` selects H100 (SXM),
 *    H100-PCIe and H100-NVL but not H200 or GH200; `l40s` selects L40S but not L40.
 * 3. Alias: otherwise the request is read as a product name through the catalog (upstream's
 *    `A100_SXM_80G`, `H100_SXM`, `RTX4090`, or a GFD product such as `NVIDIA-H100-80GB-HBM3`) and
 *    matches the GPUs of that catalog model.
 * @example gpuModelMatches('H100', 'H100-PCIe') // true
 * @example gpuModelMatches('A100_SXM_80G', 'A100') // true
 */
export function gpuModelMatches(wanted: string, gpuModel: string): boolean {
  const want = normalizeGpuProduct(wanted);
  const have = normalizeGpuProduct(gpuModel);
  if (want.length === 0) return false;
  if (want.length <= have.length && want.every((t, i) => have[i] === t)) return true;
  const alias = catalogEntry(wanted);
  const own = catalogEntry(gpuModel);
  return alias !== undefined && own !== undefined && alias.model === own.model;
}

/** Requested GPU models, matched by {@link gpuModelMatches}; iterates the names as written. */
export class GpuModelFilter implements Iterable<string> {
  private readonly seen = new Map<string, boolean>();

  constructor(readonly wanted: readonly string[]) {}

  /** Whether a GPU of `gpuModel` satisfies any requested model (memoised: placement asks per GPU). */
  has(gpuModel: string): boolean {
    let hit = this.seen.get(gpuModel);
    if (hit === undefined) {
      hit = this.wanted.some((w) => gpuModelMatches(w, gpuModel));
      this.seen.set(gpuModel, hit);
    }
    return hit;
  }

  [Symbol.iterator](): Iterator<string> {
    return this.wanted[Symbol.iterator]();
  }
}

/**
 * The TFLOPS figures of the GPUs a requested model name (`gpu-model`, a model, a family or a product)
 * selects in a pool, the one rule behind `dedicated-gpu` and `compute-percent-*`: each GPU's figure is
 * the one {@link lookupGpuTflops} gives the pool's nodes. The pool's own figures come first: every
 * `gpuTflops` key (a GFD product or a model name) the name selects gives its figure, and stands for
 * the catalog model it belongs to; then each other catalog model the name selects, with its catalog
 * figure. Distinct figures, highest first; empty when neither knows the name.
 * @example modelTflopsInPool('A100', { 'NVIDIA-A100-SXM4-80GB': 280 }) // [{ model: 'NVIDIA-A100-SXM4-80GB', tflops: 280, from: 'pool' }]
 */
export function modelTflopsInPool(wanted: string, overrides: Record<string, string | number> = {}): GpuTflops[] {
  const found: GpuTflops[] = [];
  const covered = new Set<string>();
  for (const [key, value] of Object.entries(overrides)) {
    const tflops = parseQuantity(value);
    if (tflops === undefined || !(tflops > 0) || !gpuModelMatches(wanted, key)) continue;
    found.push({ model: key, tflops, from: 'pool' });
    const entry = catalogEntry(key);
    if (entry) covered.add(entry.model);
  }
  for (const c of GPU_CATALOG) {
    if (!covered.has(c.model) && gpuModelMatches(wanted, c.model)) found.push({ model: c.model, tflops: c.tflops, from: 'catalog' });
  }
  const seen = new Set<number>();
  return found.sort((a, b) => b.tflops - a.tflops).filter((t) => !seen.has(t.tflops) && seen.add(t.tflops));
}

/**
 * A name that selects exactly `model` among the catalog's models, for messages: the model's own
 * name, or its SXM alias when that name is also a family's (`H100` selects the PCIe and NVL cards too).
 */
export function exactModelName(model: string): string | undefined {
  const only = (name: string) => GPU_CATALOG.every((c) => gpuModelMatches(name, c.model) === (c.model === model));
  return [model, `${model}_SXM`].find(only);
}

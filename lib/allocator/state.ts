/**
 * Internal mutable state of the allocator. Amounts are integers (milli-TFLOPS, bytes, millicores)
 * so that release followed by rebuild gives bit-identical figures.
 */
import type { GpuModelFilter } from '../model/gpu-catalog';
import type { PlacementMode } from '../model/rules';

export interface GpuState {
  readonly id: string;
  readonly index: number;
  readonly model: string;
  /** Capacities: milli-TFLOPS and bytes. */
  readonly capT: number;
  readonly capV: number;
  usedT: number;
  limT: number;
  usedV: number;
  limV: number;
  readonly allocs: Set<string>;
}

export interface NodeState {
  readonly name: string;
  readonly pool: string;
  /** Dense position in the pool's score trees. */
  slot: number;
  /** Tie-break rank from the seed: lower wins among equal scores. */
  readonly rank: number;
  /** Infinity when the node declares no CPU (memory) capacity. */
  readonly cpuCap: number;
  readonly memCap: number;
  cpuUsed: number;
  memUsed: number;
  /** GPUs by ascending device index. */
  readonly gpus: GpuState[];
  /** Bumped on every change; caches keyed by it. */
  version: number;
  /** Fragmentation profile cache, see fragmentation.ts. */
  profile?: NodeProfile;
}

/** Per-node sums the fragmentation score reuses across candidate placements. */
export interface NodeProfile {
  version: number;
  mixEpoch: number;
  /** Per typical request: GPUs that could host it. */
  cnt: Int32Array;
  /** Per typical request: free share on GPUs that could not host it. */
  nonfit: Float64Array;
  /** Free share summed over the node's GPUs. */
  tot: number;
  /** Current fragmentation of the node. */
  frag: number;
}

/** A request converted to internal units, with its score-tree key. */
export interface Need {
  readonly k: number;
  readonly t: number;
  readonly tl: number;
  readonly v: number;
  readonly vl: number;
  readonly cpu: number;
  readonly mem: number;
  /** Allowed models (family and alias matching, lib/model/gpu-catalog.ts); null means any. */
  readonly models: GpuModelFilter | null;
  /** Allowed device indices; null (or absent) means any. */
  readonly indices?: ReadonlySet<number> | null;
  readonly mode: PlacementMode;
  readonly key: string;
}

/** A typical request in internal units, weight normalised. */
export interface Typical {
  readonly k: number;
  readonly t: number;
  readonly v: number;
  readonly cpu: number;
  readonly mem: number;
  readonly models: GpuModelFilter | null;
  readonly p: number;
}

/** TFLOPS in milli-TFLOPS, the integer unit used inside. */
export function toMilli(tflops: number): number {
  return Math.round(tflops * 1000);
}

/** Share of GPU `g` that `t` milli-TFLOPS and `v` bytes take: the mean of the two fractions. */
export function shareOn(g: Pick<GpuState, 'capT' | 'capV'>, t: number, v: number): number {
  return 0.5 * (t / g.capT + v / g.capV);
}

/** Free share of `g` once it takes `t` milli-TFLOPS and `v` bytes more. */
export function freeShareAfter(g: GpuState, t: number, v: number): number {
  return 0.5 * ((g.capT - g.usedT - t) / g.capT + (g.capV - g.usedV - v) / g.capV);
}

/** Free share of a GPU in [0, 1]: the mean of its free compute and free memory fractions. */
export function freeShare(g: GpuState): number {
  return freeShareAfter(g, 0, 0);
}

/** Whether GPU `g` can take one GPU's worth of `n` within pool limits. */
export function gpuFits(g: GpuState, n: Need, oversellPercent: number): boolean {
  return (
    (n.models === null || n.models.has(g.model)) &&
    (!n.indices || n.indices.has(g.index)) &&
    g.usedT + n.t <= g.capT &&
    g.usedV + n.v <= g.capV &&
    (g.limT + n.tl) * 100 <= g.capT * oversellPercent
  );
}

export function nodeHasRoom(node: NodeState, cpu: number, mem: number): boolean {
  return node.cpuUsed + cpu <= node.cpuCap && node.memUsed + mem <= node.memCap;
}

/**
 * Whether `node` can take `n` at all: room for its CPU and memory, and `n.k` GPUs that fit. Exactly
 * when `evaluate` (strategies.ts) scores the node, without the cost of scoring it.
 */
export function nodeFits(node: NodeState, n: Need, oversellPercent: number): boolean {
  if (!nodeHasRoom(node, n.cpu, n.mem)) return false;
  let fitting = 0;
  for (let i = 0; i < node.gpus.length && fitting < n.k; i++) if (gpuFits(node.gpus[i], n, oversellPercent)) fitting++;
  return fitting >= n.k;
}

/** 32-bit hash of a string mixed with a seed (FNV-1a then a murmur3 finaliser). */
export function hashRank(seed: number, text: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Public shapes of the GPU allocator: what goes in (nodes, GPUs, requests, pool settings) and what
 * comes out (allocations, failure reasons, snapshots). All plain data, so the controller can store an
 * {@link Allocation} in a pod annotation and hand it back to `rebuild` after a restart.
 */
import type { PlacementMode, QosLevel } from '../model/rules';

/** One physical GPU as the allocator sees it. */
export interface GpuSpec {
  /** Device UUID; unique across the whole allocator. */
  readonly id: string;
  /** Device index on its node (0-based); allocations list GPUs in this order. */
  readonly index: number;
  /** GPU model, e.g. `A100`; matched by family and alias by {@link AllocationRequest.gpuModel} (gpuModelMatches in lib/model/gpu-catalog.ts). */
  readonly model: string;
  /** Compute capacity in TFLOPS (> 0). The allocator works in milli-TFLOPS internally. */
  readonly tflops: number;
  /** Memory capacity in bytes (positive integer). */
  readonly vram: number;
}

/** A node and the GPUs on it. A node belongs to exactly one pool. */
export interface NodeSpec {
  readonly name: string;
  readonly pool: string;
  readonly gpus: readonly GpuSpec[];
  /** Allocatable CPU in millicores; omitted means CPU never limits placement on this node. */
  readonly cpu?: number;
  /** Allocatable memory in bytes; omitted means memory never limits placement on this node. */
  readonly memory?: number;
}

/** A request shape whose share of the pool's demand the fragmentation policy should keep room for. */
export interface TypicalRequest {
  /** GPUs per request; 0 for a CPU-only workload. */
  readonly gpuCount: number;
  /** Per-GPU TFLOPS request. */
  readonly tflops: number;
  /** Per-GPU VRAM request in bytes. */
  readonly vram: number;
  /** CPU request in millicores. @default 0 */
  readonly cpu?: number;
  /** Memory request in bytes. @default 0 */
  readonly memory?: number;
  /** Allowed GPU models; empty or omitted means any. */
  readonly models?: readonly string[];
  /** Relative popularity (> 0); weights are normalised to sum to 1. */
  readonly weight: number;
}

/** Per-pool settings, mirroring the GPUPool fields the allocator honours. */
export interface PoolConfig {
  /**
   * `spec.capacityConfig.oversubscription.tflopsOversellRatio`: the sum of TFLOPS *limits* on one
   * GPU may reach capacity x ratio / 100. An integer percent from 100 to 100000.
   * @default 500
   */
  readonly tflopsOversellRatio?: number;
  /** Placement used when a request names none. @default MinFragmentation */
  readonly placementMode?: PlacementMode;
  /**
   * Demand the `MinFragmentation` policy keeps room for. When omitted the allocator learns it from
   * the requests it sees (the shapes covering 95% of them, refreshed each time the count doubles).
   */
  readonly workloadMix?: readonly TypicalRequest[];
}

/** What a workload asks for. TFLOPS and VRAM figures are per GPU. */
export interface AllocationRequest {
  /** Unique id of the allocation, e.g. the pod uid or `namespace/name`. */
  readonly id: string;
  readonly pool: string;
  /** Per-GPU TFLOPS request (>= 0); never more than a GPU's physical TFLOPS in total. */
  readonly tflopsRequest: number;
  /** Per-GPU TFLOPS limit; counts against the pool's oversell ratio. @default tflopsRequest */
  readonly tflopsLimit?: number;
  /** Per-GPU VRAM request in bytes; never more than a GPU's physical VRAM in total. */
  readonly vramRequest: number;
  /** Per-GPU VRAM limit in bytes; recorded, never blocks placement. @default vramRequest */
  readonly vramLimit?: number;
  /** GPUs on one node, 0 to 128; 0 takes only CPU and memory on a node of the pool. */
  readonly gpuCount: number;
  /** Allowed GPU model(s); omitted means any. */
  readonly gpuModel?: string | readonly string[];
  /** Allowed device indices on the node (upstream `gpu-indices`); omitted means any. */
  readonly gpuIndices?: readonly number[];
  /** Recorded on the allocation for status; placement does not depend on it. */
  readonly qos: QosLevel;
  /** CPU request in millicores. @default 0 */
  readonly cpu?: number;
  /** Memory request in bytes. @default 0 */
  readonly memory?: number;
  /** Overrides the pool's placement mode for this request. */
  readonly placementMode?: PlacementMode;
}

/** Per-GPU amounts of a share, as {@link Allocator.resize} changes them. Limits default to requests. */
export type ShareAmounts = Pick<AllocationRequest, 'tflopsRequest' | 'tflopsLimit' | 'vramRequest' | 'vramLimit'>;

/** A placed request. Plain data: store it and pass it back to `rebuild`. */
export interface Allocation {
  readonly id: string;
  readonly pool: string;
  readonly node: string;
  /** GPU UUIDs by ascending device index. Empty for a CPU-only allocation. */
  readonly gpuIds: readonly string[];
  /** Per-GPU amounts, as requested (limits defaulted to requests). */
  readonly tflopsRequest: number;
  readonly tflopsLimit: number;
  readonly vramRequest: number;
  readonly vramLimit: number;
  readonly cpu: number;
  readonly memory: number;
  readonly qos: QosLevel;
}

/** Why a request could not be placed. Counts say how many GPUs or nodes of the pool hit each cause. */
export type PlacementReason =
  | { readonly kind: 'NoNodesInPool'; readonly pool: string; readonly message: string }
  /** Nodes of the pool that take no share now (see Allocator.setUnavailable), e.g. NotReady. */
  | {
      readonly kind: 'NodeUnavailable';
      readonly pool: string;
      readonly nodes: readonly string[];
      readonly reason: string;
      readonly message: string;
    }
  | { readonly kind: 'NoGpuOfModel'; readonly models: readonly string[]; readonly gpus: number; readonly message: string }
  | { readonly kind: 'InsufficientCpu'; readonly nodes: number; readonly message: string }
  | { readonly kind: 'InsufficientMemory'; readonly nodes: number; readonly message: string }
  | { readonly kind: 'InsufficientVram'; readonly gpus: number; readonly message: string }
  | { readonly kind: 'InsufficientTflops'; readonly gpus: number; readonly message: string }
  | { readonly kind: 'TflopsOversellExceeded'; readonly gpus: number; readonly ratio: number; readonly message: string }
  /** The request's TFLOPS limit alone is above `max`, what the largest allowed GPU may be oversold to. */
  | {
      readonly kind: 'TflopsLimitAboveOversell';
      readonly limit: number;
      readonly max: number;
      readonly ratio: number;
      readonly message: string;
    }
  | {
      readonly kind: 'NotEnoughGpusOnOneNode';
      readonly nodes: number;
      readonly needed: number;
      readonly mostOnOneNode: number;
      readonly message: string;
    };

export type PlacementReasonKind = PlacementReason['kind'];

export type AllocateResult =
  { readonly ok: true; readonly allocation: Allocation } | { readonly ok: false; readonly reasons: readonly PlacementReason[] };

/** Used and available figures of one GPU, in TFLOPS and bytes. */
export interface GpuUsage {
  readonly id: string;
  readonly index: number;
  readonly model: string;
  readonly node: string;
  readonly pool: string;
  readonly tflops: { readonly capacity: number; readonly requested: number; readonly limits: number; readonly available: number };
  readonly vram: { readonly capacity: number; readonly requested: number; readonly limits: number; readonly available: number };
  /** Ids of the allocations on this GPU, sorted. */
  readonly allocations: readonly string[];
}

export interface NodeUsage {
  readonly name: string;
  readonly pool: string;
  /** Undefined when the node declares no CPU (or memory) capacity. */
  readonly cpu?: { readonly capacity: number; readonly requested: number };
  readonly memory?: { readonly capacity: number; readonly requested: number };
  readonly gpus: readonly GpuUsage[];
}

/** Totals of one pool, as GPUPool status shows them. */
export interface PoolUsage {
  readonly name: string;
  readonly nodes: number;
  readonly gpus: number;
  readonly tflops: { readonly capacity: number; readonly requested: number; readonly available: number };
  readonly vram: { readonly capacity: number; readonly requested: number; readonly available: number };
  readonly allocations: number;
}

/** A consistent copy of the allocator's state, sorted by name so that equal states compare equal. */
export interface AllocatorSnapshot {
  readonly pools: readonly PoolUsage[];
  readonly nodes: readonly NodeUsage[];
}

/** Outcome of {@link Allocator.rebuild}: allocations that could not be restored and why. */
export interface RebuildResult {
  readonly restored: number;
  readonly skipped: readonly { readonly id: string; readonly reason: string }[];
}

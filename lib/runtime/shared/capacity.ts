/**
 * Pure functions from node inventory, allocations and pool settings to the status of GPU, GPUNode and
 * GPUPool objects. The allocated amounts are an input (`GpuUsage`), so the allocator can supply them;
 * until it does, {@link usageFromPods} reads them from pod annotations.
 */
import { gpuName } from '../../model/gpu-object';
import type { Condition, GPUNodeStatus, GPUPoolStatus, GPUStatus, GPUPool } from '../../api';
import { DEFAULT_OVERSELL_RATIO } from '../../model/limits';
import { GFD, GPU_IDS_ANNOTATION, ANNOTATION_PREFIX } from '../../model/metadata-keys';
import { HOSTNAME_LABEL } from '../../k8s/labels';
import { formatBytes, parseQuantity } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import { lookupGpuTflops } from '../../model/gpu-catalog';
import type { Taint } from '../../k8s/toleration';
import type { K8sObject } from '../kube/cluster';
import { isActivePod } from './pod-lifecycle';

/** TFLOPS and bytes of VRAM. */
export interface Amounts {
  tflops: number;
  vram: number;
}

/** Allocated amounts per GPU object name, plus how many pods hold a share of each. */
export type GpuUsage = Map<string, Amounts & { pods: number }>;

/** What a node's labels say about its GPUs. */
export interface NodeInventory {
  product: string;
  count: number;
  /** Bytes per GPU. */
  vramPerGpu: number;
  model: string;
  /** FP16 TFLOPS per GPU; 0 when the model is unknown. */
  tflopsPerGpu: number;
  /** Set when the TFLOPS come from neither the pool nor the catalog. */
  unknownModel: boolean;
}

/** Node conditions/labels the reconcilers read. */
export interface NodeLike extends K8sObject {
  spec?: { taints?: Array<Taint & { timeAdded?: string }>; unschedulable?: boolean };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

export interface PodLike extends K8sObject {
  spec?: { nodeName?: string; containers?: unknown[]; resourceClaims?: unknown[] };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

/**
 * Reads the GFD labels (`nvidia.com/gpu.product`, `gpu.count`, `gpu.memory` in MiB). Undefined when the
 * node advertises no GPU. TFLOPS come from the pool's override map, then the catalog.
 */
export function nodeInventory(
  labels: Record<string, string> | undefined,
  tflopsOverrides: Record<string, string | number> = {},
): NodeInventory | undefined {
  const l = labels ?? {};
  const count = Number(l[GFD.count]);
  const product = l[GFD.product];
  if (!product || !Number.isInteger(count) || count <= 0) return undefined;
  const memMiB = Number(l[GFD.memory]);
  const found = lookupGpuTflops(product, tflopsOverrides);
  return {
    product,
    count,
    vramPerGpu: Number.isFinite(memMiB) && memMiB > 0 ? memMiB * 2 ** 20 : 0,
    model: found?.model ?? product,
    tflopsPerGpu: found?.tflops ?? 0,
    unknownModel: !found,
  };
}

export { gpuName };

/** True when the node's Ready condition is True. */
export function isNodeReady(node: NodeLike): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/**
 * Allocations claimed by pods: each active pod with `tensor-fusion.ai/gpu-ids` holds its
 * `tflops-request` and `vram-request` on every GPU listed. Interim source until the allocator reports usage.
 */
export function usageFromPods(pods: Iterable<PodLike>): GpuUsage {
  const usage: GpuUsage = new Map();
  for (const pod of pods) {
    const ann = pod.metadata.annotations ?? {};
    const ids = ann[GPU_IDS_ANNOTATION];
    if (!ids || !isActivePod(pod)) continue;
    const tflops = parseQuantity(ann[`${ANNOTATION_PREFIX}tflops-request`] ?? '0') ?? 0;
    const vram = parseQuantity(ann[`${ANNOTATION_PREFIX}vram-request`] ?? '0') ?? 0;
    for (const id of ids
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean))
      addGpuUsage(usage, id, tflops, vram);
  }
  return usage;
}

/** Adds to GPU `gpu` of `usage` what `pods` holders take of it in all (one pod's share by default). */
export function addGpuUsage(usage: GpuUsage, gpu: string, tflops: number, vram: number, pods = 1): void {
  const u = usage.get(gpu) ?? { tflops: 0, vram: 0, pods: 0 };
  usage.set(gpu, { tflops: u.tflops + tflops, vram: u.vram + vram, pods: u.pods + pods });
}

/** `usages` added up per GPU (a new map): shares from several sources, such as pod records and DRA claims. */
export function sumGpuUsage(...usages: GpuUsage[]): GpuUsage {
  const out: GpuUsage = new Map();
  for (const usage of usages) for (const [gpu, u] of usage) addGpuUsage(out, gpu, u.tflops, u.vram, u.pods);
  return out;
}

const q = {
  tflops: (n: number) => formatTflops(Math.max(0, n)),
  bytes: (n: number) => formatBytes(Math.max(0, Math.round(n))),
};

/** Reads a quantity field (string or number) as a number; 0 when absent or invalid. */
export function num(v: string | number | undefined): number {
  return v === undefined ? 0 : (parseQuantity(v) ?? 0);
}

/** Status of one GPU device. */
export function gpuStatus(node: NodeLike, inv: NodeInventory, index: number, used: Amounts | undefined): GPUStatus {
  const ready = isNodeReady(node);
  const name = node.metadata.name ?? '';
  return {
    uuid: gpuName(name, index),
    index,
    gpuModel: inv.model,
    vendor: 'NVIDIA',
    phase: ready ? 'Running' : 'Unknown',
    capacity: { tflops: q.tflops(inv.tflopsPerGpu), vram: q.bytes(inv.vramPerGpu) },
    available: { tflops: q.tflops(inv.tflopsPerGpu - (used?.tflops ?? 0)), vram: q.bytes(inv.vramPerGpu - (used?.vram ?? 0)) },
    nodeSelector: { [HOSTNAME_LABEL]: node.metadata.labels?.[HOSTNAME_LABEL] ?? name },
    usedBy: 'tensor-fusion',
    message: inv.unknownModel
      ? `unknown GPU model ${JSON.stringify(inv.product)}: set spec.capacityConfig.gpuTflops on the pool`
      : ready
        ? ''
        : 'node is not Ready',
  };
}

/** Oversell ratio of a pool in percent. */
export function oversellRatio(pool: GPUPool | undefined): number {
  return pool?.spec.capacityConfig?.oversubscription?.tflopsOversellRatio ?? DEFAULT_OVERSELL_RATIO;
}

/** Sets or keeps a condition, preserving lastTransitionTime when the status did not change. */
export function setCondition(previous: Condition[] | undefined, next: Omit<Condition, 'lastTransitionTime'>, now: string): Condition[] {
  const others = (previous ?? []).filter((c) => c.type !== next.type);
  const old = (previous ?? []).find((c) => c.type === next.type);
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : now;
  return [...others, { ...next, lastTransitionTime }];
}

/** A status's phase and its Ready condition: `Running` and `True` while ready, `Pending` and `False` otherwise. */
function readiness(
  previous: Condition[] | undefined,
  ready: boolean,
  now: string,
  why: { reason: string; message: string; observedGeneration?: number },
): { phase: 'Running' | 'Pending'; conditions: Condition[] } {
  return {
    phase: ready ? 'Running' : 'Pending',
    conditions: setCondition(previous, { type: 'Ready', status: ready ? 'True' : 'False', ...why }, now),
  };
}

/** Status of a GPUNode from its devices' statuses. */
export function gpuNodeStatus(
  node: NodeLike,
  inv: NodeInventory,
  gpus: GPUStatus[],
  usage: GpuUsage,
  gpuNames: string[],
  pool: GPUPool | undefined,
  previous: GPUNodeStatus | undefined,
  now: string,
): GPUNodeStatus {
  const total = { tflops: inv.tflopsPerGpu * inv.count, vram: inv.vramPerGpu * inv.count };
  const used = { tflops: 0, vram: 0, pods: 0 };
  for (const n of gpuNames) {
    const u = usage.get(n);
    if (u) {
      used.tflops += u.tflops;
      used.vram += u.vram;
      used.pods += u.pods;
    }
  }
  const virtualTflops = (total.tflops * oversellRatio(pool)) / 100;
  const ready = isNodeReady(node) && gpus.length > 0;
  return {
    ...readiness(previous?.conditions, ready, now, {
      reason: ready ? 'NodeReady' : inv.unknownModel ? 'UnknownGPUModel' : 'NodeNotReady',
      message: ready ? `${gpus.length} GPU(s) ${inv.model}` : 'the Kubernetes node is not Ready',
    }),
    totalGPUs: inv.count,
    managedGPUs: gpus.length,
    managedGPUDeviceIDs: gpus.map((g) => g.uuid),
    totalTFlops: q.tflops(total.tflops),
    totalVRAM: q.bytes(total.vram),
    availableTFlops: q.tflops(total.tflops - used.tflops),
    availableVRAM: q.bytes(total.vram - used.vram),
    virtualTFlops: q.tflops(virtualTflops),
    virtualVRAM: q.bytes(total.vram),
    virtualAvailableTFlops: q.tflops(virtualTflops - used.tflops),
    virtualAvailableVRAM: q.bytes(total.vram - used.vram),
    totalGPUPods: used.pods,
  };
}

/** Status of a pool from the statuses of its GPUNodes (and the phase of its GPUs). */
export function gpuPoolStatus(
  pool: GPUPool,
  nodes: Array<GPUNodeStatus | undefined>,
  gpuPhases: string[],
  previous: GPUPoolStatus | undefined,
  now: string,
): GPUPoolStatus {
  const sum = (f: (s: GPUNodeStatus) => string | number | undefined) => nodes.reduce((a, s) => a + (s ? num(f(s)) : 0), 0);
  const readyNodes = nodes.filter((s) => s?.phase === 'Running').length;
  const totalNodes = nodes.length;
  const totalTflops = sum((s) => s.totalTFlops);
  const usedTflops = totalTflops - sum((s) => s.availableTFlops);
  const virtualTflops = (totalTflops * oversellRatio(pool)) / 100;
  const totalVram = sum((s) => s.totalVRAM);
  const availableVram = sum((s) => s.availableVRAM);
  const ready = totalNodes > 0 && readyNodes === totalNodes;
  return {
    ...readiness(previous?.conditions, ready, now, {
      reason: totalNodes === 0 ? 'NoNodes' : ready ? 'AllNodesReady' : 'NodesNotReady',
      message: totalNodes === 0 ? 'no node matches spec.nodeManagerConfig.nodeSelector' : `${readyNodes}/${totalNodes} nodes ready`,
      observedGeneration: pool.metadata.generation as number | undefined,
    }),
    totalNodes,
    readyNodes,
    notReadyNodes: totalNodes - readyNodes,
    totalGPUs: gpuPhases.length,
    readyGPUs: gpuPhases.filter((p) => p === 'Running').length,
    totalTFlops: q.tflops(totalTflops),
    totalVRAM: q.bytes(totalVram),
    availableTFlops: q.tflops(totalTflops - usedTflops),
    availableVRAM: q.bytes(availableVram),
    virtualTFlops: q.tflops(virtualTflops),
    virtualVRAM: q.bytes(totalVram),
    virtualAvailableTFlops: q.tflops(virtualTflops - usedTflops),
    virtualAvailableVRAM: q.bytes(availableVram),
  };
}

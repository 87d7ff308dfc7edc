/**
 * What the allocator needs to know about a pool, read from the GPU and GPUNode objects the controller
 * keeps: a GPU belongs to the GPUNode its `managed-by` label or owner names (shared/managed-by.ts),
 * a GPUNode to the pool named by its own label. Only Running GPUs with a capacity take new shares.
 */
import type { GPU, GPUNode } from '../../api';
import { HOSTNAME_LABEL } from '../../k8s/labels';
import { GPU_ISOLATION_CONDITION, MANAGED_BY_LABEL } from '../../model/metadata-keys';
import { managedBy } from './managed-by';
import { parseQuantity } from '../../k8s/quantity';
import type { IsolationMode } from '../../model/rules';
import type { NodeSpec } from '../../allocator';

/** One usable GPU, keyed by its object name (the id the allocator and the runtime use). */
export interface GpuInfo {
  readonly name: string;
  readonly node: string;
  readonly index: number;
  readonly model: string;
  readonly tflops: number;
  readonly vram: number;
  /** What NVIDIA_VISIBLE_DEVICES gets: the device UUID when the agent reported one, else the index. */
  readonly device: string;
  /** Labels that pin a pod to the GPU's node. */
  readonly nodeSelector: Readonly<Record<string, string>>;
  /** The reason of the agent's IsolationReady condition when it is False (no hard-isolation share here). */
  readonly isolationNotReady?: string;
}

const DEVICE_UUID = /^(GPU|MIG)-/;

/** A usable GPU from its object, or undefined when it is not Running or lacks capacity. */
export function gpuInfo(gpu: GPU): GpuInfo | undefined {
  const s = gpu.status;
  const name = gpu.metadata?.name;
  const node = managedBy(gpu)[0] ?? s?.nodeSelector?.[HOSTNAME_LABEL];
  if (!s || !name || !node || s.phase !== 'Running') return undefined;
  const tflops = parseQuantity(s.capacity?.tflops as string | number);
  const vram = parseQuantity(s.capacity?.vram as string | number);
  if (!tflops || tflops <= 0 || !vram || vram <= 0) return undefined;
  const index = typeof s.index === 'number' ? s.index : 0;
  const isolation = s.conditions?.find((c) => c.type === GPU_ISOLATION_CONDITION);
  return {
    ...(isolation?.status === 'False' ? { isolationNotReady: isolation.reason } : {}),
    name,
    node,
    index,
    model: s.gpuModel ?? '',
    tflops,
    vram: Math.floor(vram),
    device: typeof s.uuid === 'string' && DEVICE_UUID.test(s.uuid) ? s.uuid : String(index),
    nodeSelector: s.nodeSelector && Object.keys(s.nodeSelector).length > 0 ? s.nodeSelector : { [HOSTNAME_LABEL]: node },
  };
}

/** The pool of each GPUNode, by node name. */
export function nodePools(gpuNodes: Iterable<GPUNode>): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of gpuNodes) {
    const pool = n.metadata?.labels?.[MANAGED_BY_LABEL];
    if (n.metadata?.name && pool) out.set(n.metadata.name, pool);
  }
  return out;
}

/**
 * The allocator's nodes of one pool, sorted by name, GPUs by index. A pool of `hard` isolation gets
 * no GPU whose isolation the agent reports not ready.
 */
export function poolNodeSpecs(
  pool: string,
  gpus: Iterable<GpuInfo>,
  pools: ReadonlyMap<string, string>,
  isolation: IsolationMode = 'shared',
): NodeSpec[] {
  const byNode = new Map<string, GpuInfo[]>();
  for (const g of gpus) {
    if (pools.get(g.node) !== pool || (isolation === 'hard' && g.isolationNotReady)) continue;
    const list = byNode.get(g.node) ?? [];
    list.push(g);
    byNode.set(g.node, list);
  }
  return [...byNode.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, list]) => ({
      name,
      pool,
      gpus: list
        .sort((a, b) => a.index - b.index)
        .map((g) => ({ id: g.name, index: g.index, model: g.model, tflops: g.tflops, vram: g.vram })),
    }));
}

/**
 * What the pools hold, as plain data: per pool its totals, each GPU as a bar of its shares, each pod
 * holding a share, the GPU pods still pending with the scheduler's words, and each namespace quota
 * against its bounds. The controller's web view serves it and `kubectl tf top` prints it; both read
 * the same objects (the replica's caches, or lists the CLI wraps into that shape).
 */
import type { ReadCaches } from './caches';
import type { GpuBar, ShareSegment } from './gpu-bars';
import { gpuInfo, GpuInfo, nodePools } from './topology';
import { allocationOf } from './pod-share/record';
import { QuotaAmounts, quotaBounds, recordedUsage, shareUsage } from './quota';
import { boundNode, isActivePod, isTerminal } from './pod-lifecycle';
import { shareOf } from './share';
import type { PodLike } from './capacity';
import { claimAllocationOf, heldByPod } from './dra/claim-allocation';

/**
 * The caches the view reads; only `list` is called, so plain lists wrapped in this shape do. Without
 * `claims` (a controller not watching them) DRA pools' shares are not shown.
 */
export type PoolViewSources = Pick<ReadCaches, 'pools' | 'gpuNodes' | 'gpus' | 'pods' | 'quotas'> & Partial<Pick<ReadCaches, 'claims'>>;

/** What a pod uses in all, over its GPUs and containers (TFLOPS, bytes), when known. */
export interface PodUsage {
  readonly tflops?: number;
  readonly vram?: number;
}

/** Usage by pod, keyed `namespace/name` ({@link podKey}). */
export type PodUsageMap = ReadonlyMap<string, PodUsage>;

/** One pool's totals: capacity of its usable GPUs, what the shares request and limit, what they use. */
export interface PoolSummary {
  readonly name: string;
  /** GPUNodes of the pool. */
  readonly nodes: number;
  /** Usable GPUs (Running, with a capacity). */
  readonly gpus: number;
  /** TFLOPS and bytes: capacity, requests (what the allocator reserved), limits, use. */
  readonly tflops: number;
  readonly vram: number;
  readonly tflopsRequested: number;
  readonly vramRequested: number;
  readonly tflopsLimit: number;
  readonly vramLimit: number;
  /** Present when usage was read: the sum of what is known. */
  readonly tflopsUsed?: number;
  readonly vramUsed?: number;
}

/**
 * A pod holding a share: its amounts per GPU, as its allocation records them and its bars show them
 * (what it uses spread evenly over its GPUs: the agent's series are read per pod).
 */
export interface PodShareView extends Omit<ShareSegment, 'pod'> {
  readonly name: string;
  readonly node: string;
  readonly pool: string;
  /** GPU object names. */
  readonly gpus: readonly string[];
}

/** A GPU pod not bound to a node yet, with the PodScheduled=False condition's reason and message. */
export interface PendingPod {
  readonly namespace: string;
  readonly name: string;
  readonly pool: string;
  readonly gpuCount: number;
  readonly tflopsRequest: number;
  readonly vramRequest: number;
  readonly reason?: string;
  readonly message?: string;
}

/** A GPUResourceQuota: what its namespace's shares add up to and its bounds (milli-TFLOPS, bytes, pods). */
export interface QuotaView {
  readonly namespace: string;
  readonly name: string;
  readonly used: QuotaAmounts;
  /** The bounded totals only. */
  readonly hard: Partial<QuotaAmounts>;
}

/** Everything the view shows, sorted by name (GPUs by pool, node and index). */
export interface PoolView {
  readonly pools: readonly PoolSummary[];
  readonly gpus: readonly GpuBar[];
  readonly pods: readonly PodShareView[];
  readonly pending: readonly PendingPod[];
  readonly quotas: readonly QuotaView[];
}

/** The key of a pod in a {@link PodUsageMap}. */
export function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const perGpu = (total: number | undefined, gpus: number) => (total === undefined ? undefined : total / gpus);

/** Builds the view from the caches and, when given, the pods' usage. */
export function poolView(caches: PoolViewSources, usage?: PodUsageMap): PoolView {
  const poolOfNode = nodePools(caches.gpuNodes.list());
  const usable = caches.gpus
    .list()
    .map(gpuInfo)
    .filter((g): g is GpuInfo => g !== undefined);
  const allPods = caches.pods.list() as PodLike[];
  const claimed = heldByPod(caches.claims?.list() ?? []);

  const pods: PodShareView[] = [];
  const segments = new Map<string, ShareSegment[]>();
  for (const p of allPods) {
    // The extender's record, or a DRA pod's claim.
    const a = isTerminal(p) ? undefined : (allocationOf(p) ?? claimAllocationOf(p, claimed.get(p.metadata.uid ?? '')));
    if (!a || a.gpuIds.length === 0) continue;
    const namespace = p.metadata.namespace ?? '';
    const name = p.metadata.name ?? '';
    const used = usage?.get(podKey(namespace, name));
    const n = a.gpuIds.length;
    const amounts = {
      tflopsRequest: a.tflopsRequest,
      tflopsLimit: a.tflopsLimit,
      vramRequest: a.vramRequest,
      vramLimit: a.vramLimit,
      ...(used?.tflops !== undefined ? { tflopsUsed: perGpu(used.tflops, n) } : {}),
      ...(used?.vram !== undefined ? { vramUsed: perGpu(used.vram, n) } : {}),
    };
    pods.push({ namespace, name, node: a.node, pool: a.pool, gpus: [...a.gpuIds], ...amounts });
    for (const gpu of a.gpuIds) segments.set(gpu, [...(segments.get(gpu) ?? []), { pod: name, namespace, ...amounts }]);
  }
  pods.sort((a, b) => byName(podKey(a.namespace, a.name), podKey(b.namespace, b.name)));

  const gpus: GpuBar[] = usable
    .map((g) => ({
      name: g.name,
      node: g.node,
      pool: poolOfNode.get(g.node) ?? '',
      model: g.model,
      tflops: g.tflops,
      vram: g.vram,
      index: g.index,
      shares: (segments.get(g.name) ?? []).sort((a, b) => byName(podKey(a.namespace, a.pod), podKey(b.namespace, b.pod))),
    }))
    .sort((a, b) => byName(a.pool, b.pool) || byName(a.node, b.node) || a.index - b.index || byName(a.name, b.name))
    .map(({ index: _index, ...bar }) => bar);

  const poolNames = new Set<string>([
    ...caches.pools.list().map((p) => p.metadata.name ?? ''),
    ...poolOfNode.values(),
    ...pods.map((p) => p.pool),
  ]);
  const pools = [...poolNames].sort(byName).map((name) => poolSummary(name, poolOfNode, gpus, pods, usage !== undefined));

  const pending: PendingPod[] = allPods
    .filter((p) => isActivePod(p) && !boundNode(p))
    .flatMap((p) => {
      const share = shareOf(p);
      if (!share) return [];
      const c = p.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
      return [
        {
          namespace: p.metadata.namespace ?? '',
          name: p.metadata.name ?? '',
          pool: share.pool,
          gpuCount: share.gpuCount,
          tflopsRequest: share.tflopsRequest,
          vramRequest: share.vramRequest,
          ...(c?.reason ? { reason: c.reason } : {}),
          ...(c?.message ? { message: c.message } : {}),
        },
      ];
    })
    .sort((a, b) => byName(podKey(a.namespace, a.name), podKey(b.namespace, b.name)));

  const quotas: QuotaView[] = caches.quotas
    .list()
    .map((q) => {
      const namespace = q.metadata.namespace ?? '';
      return {
        namespace,
        name: q.metadata.name ?? '',
        used: recordedUsage(allPods.filter((p) => p.metadata.namespace === namespace)),
        hard: quotaBounds(q).total,
      };
    })
    .sort((a, b) => byName(podKey(a.namespace, a.name), podKey(b.namespace, b.name)));

  return { pools, gpus, pods, pending, quotas };
}

function poolSummary(
  name: string,
  poolOfNode: ReadonlyMap<string, string>,
  gpus: readonly GpuBar[],
  pods: readonly PodShareView[],
  withUsage: boolean,
): PoolSummary {
  const mine = gpus.filter((g) => g.pool === name);
  let [tflopsRequested, vramRequested, tflopsLimit, vramLimit, tflopsUsed, vramUsed] = [0, 0, 0, 0, 0, 0];
  for (const p of pods) {
    if (p.pool !== name) continue;
    // The quota arithmetic's count of a share (every GPU it holds), back in TFLOPS.
    const u = shareUsage({ ...p, gpuCount: p.gpus.length });
    tflopsRequested += u['requests.tflops'] / 1000;
    vramRequested += u['requests.vram'];
    tflopsLimit += u['limits.tflops'] / 1000;
    vramLimit += u['limits.vram'];
    tflopsUsed += (p.tflopsUsed ?? 0) * p.gpus.length;
    vramUsed += (p.vramUsed ?? 0) * p.gpus.length;
  }
  return {
    name,
    nodes: [...poolOfNode.values()].filter((p) => p === name).length,
    gpus: mine.length,
    tflops: mine.reduce((s, g) => s + g.tflops, 0),
    vram: mine.reduce((s, g) => s + g.vram, 0),
    tflopsRequested,
    vramRequested,
    tflopsLimit,
    vramLimit,
    ...(withUsage ? { tflopsUsed, vramUsed } : {}),
  };
}

/**
 * `kubectl tf plan`: places pods offline, the way the scheduler extender would, on the cluster as it
 * is or as a synthesized platform declares it. The extender's own placement state is built from the
 * objects (same GPU topology, pool settings, held shares, CPU and memory), each pod is resolved with
 * the webhook's rules (annotations over profile over pool) and placed by the same allocator, pool by
 * pool, in the order given; a namespace's GPUResourceQuotas bound what its pods may take.
 *
 * What the plan does not see: kube-scheduler's own filters (node selectors, affinity, taints), so a
 * pod planned on a node its selector excludes will go elsewhere or wait.
 */
import type { Allocation, AllocationRequest, AllocatorSnapshot, PlacementReason } from '../../allocator';
import type { K8sObject } from '../kube/cluster';
import type { GpuBar, ShareSegment } from '../shared/gpu-bars';
import { podRequests } from '../shared/pod-requests';
import { claimAllocationOf, heldByPod } from '../shared/dra/claim-allocation';
import { resolvePodSettings, shareRequest } from '../shared/resolve-pod';
import { cachedSettingsView } from '../shared/settings-view';
import { allocationRequest, cpuOnlyRequest } from '../shared/share';
import {
  addUsage,
  excessMessage,
  QuotaAmounts,
  quotaBounds,
  QuotaBounds,
  shareUsage,
  showSingle,
  singleExcesses,
  totalExcess,
} from '../shared/quota';
import { ANNOTATION } from '../../annotations';
import { admitPod, AdmissionView } from '../webhook/admit';
import { ClusterObjects, fixedCaches, placementStateOf } from './cluster-objects';
import type { WorkloadPod } from './workload-pods';
import type { PlacementState } from '../extender/placement-state';

/** What became of one pod. */
export interface PlannedPod {
  readonly namespace: string;
  readonly name: string;
  /** `Kind namespace/name` of the manifest it comes from. */
  readonly source: string;
  readonly pool?: string;
  /** Where it would run; absent when it does not fit. */
  readonly node?: string;
  readonly gpus?: readonly string[];
  /** Per-GPU amounts of its share. */
  readonly gpuCount?: number;
  readonly tflopsRequest?: number;
  readonly vramRequest?: number;
  /** Why it does not fit (or would be refused at admission). */
  readonly reason?: string;
}

/** A pool after the plan. */
export interface PoolPlan {
  readonly name: string;
  readonly nodes: number;
  readonly gpus: number;
  /** TFLOPS, as the GPUs' capacity and the requests of held and planned shares. */
  readonly tflopsCapacity: number;
  readonly tflopsRequested: number;
  /** Share of the pool's TFLOPS no request holds, in percent. */
  readonly unallocatedPct: number;
  /** Free VRAM on GPUs whose free TFLOPS no planned pod could use (below the smallest TFLOPS request), in bytes. */
  readonly strandedVram: number;
}

export interface Plan {
  readonly pods: readonly PlannedPod[];
  readonly placed: number;
  readonly unplaced: number;
  readonly pools: readonly PoolPlan[];
  /** Over the pools planned into. */
  readonly unallocatedPct: number;
  readonly strandedVram: number;
  /** Every GPU of the pools planned into, with held and planned shares. */
  readonly bars: readonly GpuBar[];
}

export interface PlanOptions {
  /** Pods that name no pool (nor their profile) go here instead of the default pool; only this pool is reported. */
  readonly pool?: string;
}

/** The allocator's reasons as one line: `3 GPUs: not enough free VRAM; 1 node: not enough CPU`. */
export function reasonsText(reasons: readonly PlacementReason[]): string {
  return reasons.map((r) => r.message).join('; ');
}

/** Places `pods` on `objects`; the objects are not changed. */
export async function planPlacement(objects: ClusterObjects, pods: readonly WorkloadPod[], opts: PlanOptions = {}): Promise<Plan> {
  const caches = fixedCaches(objects);
  const state = placementStateOf(caches);
  const allocator = state.current();
  // DRA pools' shares are in their claims, which the extender never holds: they take their GPUs' room here.
  const claimed = heldByPod(objects.claims ?? []);
  allocator.restore(objects.pods.flatMap((p) => claimAllocationOf(p, claimed.get(p.metadata.uid ?? '')) ?? []));
  const view = cachedSettingsView(caches);
  // No quotas: the plan says a per-pod bound in its own words below, and counts totals as it places.
  const admissionView: AdmissionView = { ...view, workload: async (ns, name) => caches.workloads.get(`${ns}/${name}`) };
  const quotas = new Map<string, QuotaBounds[]>();
  const used = new Map<string, QuotaAmounts>();
  const quotasOf = (ns: string) => {
    let q = quotas.get(ns);
    if (!q) quotas.set(ns, (q = objects.quotas.filter((o) => o.metadata.namespace === ns).map(quotaBounds)));
    return q;
  };
  const names = new Map<string, { namespace: string; name: string }>();
  for (const p of objects.pods)
    if (p.metadata.uid) names.set(p.metadata.uid, { namespace: p.metadata.namespace ?? '', name: p.metadata.name ?? '' });

  const out: PlannedPod[] = [];
  let minTflops = Infinity;
  for (const [i, w] of pods.entries()) {
    const base = { namespace: w.namespace, name: w.name, source: w.source };
    const id = `plan/${i}`;
    if (w.cpuOnly) {
      out.push(placeCpuOnly(state, id, w, opts.pool ?? view.defaultPool()));
      if (out[out.length - 1].node) names.set(id, { namespace: w.namespace, name: w.name });
      continue;
    }
    const annotations = { ...(opts.pool !== undefined ? { [ANNOTATION.pool]: opts.pool } : {}), ...w.pod.metadata?.annotations };
    // The webhook's own decision first: a pod it would refuse is never planned.
    const admission = await admitPod(reviewOf({ ...w.pod, metadata: { ...w.pod.metadata, annotations } }, w.namespace), admissionView);
    if (!admission.allowed) {
      out.push({ ...base, reason: `refused at admission: ${admission.message}` });
      continue;
    }
    const containers = ((w.pod as { spec?: { containers?: { name?: string }[] } }).spec?.containers ?? []).map((c) => c.name ?? '');
    const resolved = await resolvePodSettings(annotations, w.namespace, view, containers);
    if (Array.isArray(resolved)) {
      out.push({ ...base, reason: `refused at admission: ${resolved.map((x) => x.message).join('; ')}` });
      continue;
    }
    const share = shareRequest(resolved, resolved.settings.injectContainers?.length ?? 1);
    const size = { ...share, gpuCount: share.gpuCount };
    const single = singleExcesses(size, quotasOf(w.namespace))[0];
    const sized = {
      ...base,
      pool: share.pool,
      gpuCount: share.gpuCount,
      tflopsRequest: share.tflopsRequest,
      vramRequest: share.vramRequest,
    };
    if (single) {
      out.push({
        ...sized,
        reason: `refused at admission: ${single.field} of GPUResourceQuota ${JSON.stringify(single.quota)} is ${showSingle(single.amount, single.max)}, the pod asks ${showSingle(single.amount, single.value)}`,
      });
      continue;
    }
    minTflops = Math.min(minTflops, share.tflopsRequest);
    const request: AllocationRequest = allocationRequest(id, share, podRequests(w.pod as K8sObject));
    // Counted in the pool's learned mix where the extender counts it: at filter, before its quota and room.
    state.learn(request);
    const usage = shareUsage(size);
    const nsUsed = used.get(w.namespace) ?? state.quotaUsed(w.namespace);
    const excess = totalExcess(nsUsed, usage, quotasOf(w.namespace));
    if (excess) {
      out.push({ ...sized, reason: excessMessage(w.namespace, excess) });
      continue;
    }
    const r = allocator.allocate(request);
    if (!r.ok) {
      out.push({ ...sized, reason: reasonsText(r.reasons) });
      continue;
    }
    used.set(w.namespace, addUsage(nsUsed, usage));
    names.set(id, { namespace: w.namespace, name: w.name });
    out.push({ ...sized, node: r.allocation.node, gpus: r.allocation.gpuIds });
  }

  const snapshot = allocator.snapshot();
  const planned = opts.pool !== undefined ? [opts.pool] : snapshot.pools.map((p) => p.name);
  const bars = gpuBars(snapshot, planned, (id) => allocator.allocation(id), names);
  const pools = planned.map((name) => poolPlan(name, snapshot, minTflops));
  const capacity = pools.reduce((s, p) => s + p.tflopsCapacity, 0);
  const requested = pools.reduce((s, p) => s + p.tflopsRequested, 0);
  const placed = out.filter((p) => p.node !== undefined).length;
  return {
    pods: out,
    placed,
    unplaced: out.length - placed,
    pools,
    unallocatedPct: percentFree(capacity, requested),
    strandedVram: pools.reduce((s, p) => s + p.strandedVram, 0),
    bars,
  };
}

/** The AdmissionReview request of a pod's create in `namespace`, as the API server sends it to the webhook. */
function reviewOf(pod: K8sObject, namespace: string) {
  return { uid: '', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace, object: pod };
}

/** A pod of our scheduler without a share: its CPU and memory on the node the pool's mode picks, as the extender does. */
function placeCpuOnly(state: PlacementState, id: string, w: WorkloadPod, pool: string | undefined): PlannedPod {
  const base = { namespace: w.namespace, name: w.name, source: w.source, gpuCount: 0 };
  if (pool === undefined) return { ...base, reason: 'no pool: give --pool, or annotate a GPUPool as the default' };
  const request = cpuOnlyRequest(id, pool, podRequests(w.pod));
  state.learn(request);
  const r = state.current().allocate(request);
  return r.ok ? { ...base, pool, node: r.allocation.node, gpus: [] } : { ...base, pool, reason: reasonsText(r.reasons) };
}

const percentFree = (capacity: number, requested: number) => (capacity > 0 ? (100 * (capacity - requested)) / capacity : 0);

function poolPlan(name: string, snapshot: AllocatorSnapshot, minTflops: number): PoolPlan {
  const usage = snapshot.pools.find((p) => p.name === name);
  let strandedVram = 0;
  for (const n of snapshot.nodes) {
    if (n.pool !== name) continue;
    for (const g of n.gpus) if (g.tflops.available < minTflops) strandedVram += g.vram.available;
  }
  const capacity = usage?.tflops.capacity ?? 0;
  const requested = usage?.tflops.requested ?? 0;
  return {
    name,
    nodes: usage?.nodes ?? 0,
    gpus: usage?.gpus ?? 0,
    tflopsCapacity: capacity,
    tflopsRequested: requested,
    unallocatedPct: percentFree(capacity, requested),
    strandedVram: Number.isFinite(minTflops) ? strandedVram : 0,
  };
}

/** The GPUs of `pools` as bars, each share named after its pod. */
function gpuBars(
  snapshot: AllocatorSnapshot,
  pools: readonly string[],
  allocation: (id: string) => Allocation | undefined,
  names: ReadonlyMap<string, { namespace: string; name: string }>,
): GpuBar[] {
  const bars: GpuBar[] = [];
  for (const n of snapshot.nodes) {
    if (!pools.includes(n.pool)) continue;
    for (const g of n.gpus) {
      const shares: ShareSegment[] = [];
      for (const id of g.allocations) {
        const a = allocation(id);
        if (!a) continue;
        const who = names.get(id) ?? { namespace: '', name: id };
        shares.push({
          pod: who.name,
          namespace: who.namespace,
          tflopsRequest: a.tflopsRequest,
          tflopsLimit: a.tflopsLimit,
          vramRequest: a.vramRequest,
          vramLimit: a.vramLimit,
        });
      }
      bars.push({ name: g.id, node: n.name, pool: n.pool, model: g.model, tflops: g.tflops.capacity, vram: g.vram.capacity, shares });
    }
  }
  return bars;
}

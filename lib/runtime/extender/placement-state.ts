/**
 * The extender's picture of GPU usage: an {@link Allocator} over the pools' GPUs (from the GPU, GPUNode
 * and GPUPool objects the controller keeps) holding every share that pods record, plus the shares
 * reserved at filter time for pods whose bind is still to come (keyed by pod UID).
 *
 * The pods are the durable record. A share is released only when its pod is deleted (a watch event or
 * an authoritative relist) or reaches a terminal phase; a terminating pod keeps its share, as
 * kube-scheduler counts it until it is gone. Nothing is released on a timer except reservations whose
 * bind never came.
 */
import type { GPU, GPUNode, GPUPool } from '../../api';
import { Allocation, AllocateResult, AllocationRequest, Allocator, Choice, LearnedMixes, PoolConfig, ShareAmounts } from '../../allocator';
import type { K8sObject } from '../kube/cluster';
import type { Informer, InformerHandlers } from '../kube/informer';
import { MANAGED_BY_LABEL } from '../../model/metadata-keys';
import { poolIsolation } from '../../model/rules';
import { parseQuantity } from '../../k8s/quantity';
import { podRequests } from '../shared/pod-requests';
import { GpuInfo, gpuInfo, nodePools, poolNodeSpecs } from '../shared/topology';
import { boundNode, isTerminal } from '../shared/pod-lifecycle';
import { isNodeReady } from '../shared/capacity';
import { allocationOf, DeviceInfo } from '../shared/pod-share/record';
import {
  addUsage,
  allocationUsage,
  excessMessage,
  QuotaAmounts,
  QuotaBounds,
  quotaBounds,
  QuotaObject,
  shareUsage,
  totalExcess,
} from '../shared/quota';
import { CountedMap, QuotaLedger } from './quota-ledger';
import { ClaimShares } from './claim-shares';
import { ClaimedGpus } from './claimed-gpus';
import type { ResourceClaim } from '../shared/dra/claim-results';

/** How long a release is remembered against lists sent before it (far longer than a LIST can take). */
const RELEASED_MEMORY_MS = 5 * 60_000;

/** What the state reads of an informer: its objects and their changes (`kubectl tf` passes fixed lists). */
export type PlacementSource<T extends K8sObject> = Pick<Informer<T>, 'get' | 'list' | 'hasSynced'> & {
  on(handlers: InformerHandlers<T>): unknown;
};

export interface PlacementSources {
  /** Node objects: their allocatable CPU and memory bound what a node can take. */
  nodes: PlacementSource<K8sObject>;
  pools: PlacementSource<GPUPool & K8sObject>;
  gpuNodes: PlacementSource<GPUNode & K8sObject>;
  gpus: PlacementSource<GPU & K8sObject>;
  /** Pods with their tensor-fusion.ai annotations, uid, phase, node and requests (the controller's slim cache). */
  pods: PlacementSource<K8sObject>;
  /** GPUResourceQuotas: no share is reserved or grown past its namespace's. @default no quotas */
  quotas?: Pick<Informer<QuotaObject & K8sObject>, 'list'>;
  /**
   * DRA ResourceClaims (the controller's claims cache, slim): the GPUs kube-scheduler's allocator gave
   * each count as used, so that prioritize ranks DRA pods' nodes on what is really free. @default no claims
   */
  claims?: PlacementSource<ResourceClaim>;
}

/** What per-GPU `amounts` on `gpuCount` GPUs count for in a quota (limits default to requests, as the allocator's). */
function quotaUsage(amounts: ShareAmounts, gpuCount: number): QuotaAmounts {
  const { tflopsRequest, vramRequest } = amounts;
  return shareUsage({
    tflopsRequest,
    vramRequest,
    tflopsLimit: amounts.tflopsLimit ?? tflopsRequest,
    vramLimit: amounts.vramLimit ?? vramRequest,
    gpuCount,
  });
}

/** A share refused because its namespace's quota has no room for it, on any node. */
export interface QuotaRefusal {
  readonly ok: false;
  /** What `kubectl describe pod` shows, e.g. `namespace "ml" would use 420 of 400 TFLOPS requested (GPUResourceQuota "team-a")`. */
  readonly overQuota: string;
}

export interface PlacementStateOptions {
  sources: PlacementSources;
  /** How long a filter-time reservation waits for its bind. @default 60000 */
  reservationTtlMs?: number;
  /** @default Date.now */
  now?: () => number;
  /**
   * Called with a node where room may have appeared that kube-scheduler cannot see: a share or a
   * reservation released, a share resized down, GPUs or a pool's settings added or changed.
   */
  onRoom?: (node: string) => void;
  /** The pools' learned mixes, kept across rebuilds (Allocator's `learned`). @default a new one */
  mixes?: LearnedMixes;
}

/** A Node's allocatable CPU (millicores) and memory (bytes), when it declares them. */
function allocatable(node: K8sObject): { cpu?: number; memory?: number } {
  const a = (node.status as { allocatable?: Record<string, string> } | undefined)?.allocatable ?? {};
  const cpu = parseQuantity(a.cpu ?? '');
  const memory = parseQuantity(a.memory ?? '');
  return { ...(cpu !== undefined ? { cpu: Math.floor(cpu * 1000) } : {}), ...(memory !== undefined ? { memory: Math.floor(memory) } : {}) };
}

/** The allocator settings a GPUPool asks for. */
export function poolConfig(pool: GPUPool | undefined): PoolConfig {
  const spec = pool?.spec;
  const ratio = spec?.capacityConfig?.oversubscription?.tflopsOversellRatio;
  const mode = spec?.placement?.mode;
  return { ...(ratio !== undefined ? { tflopsOversellRatio: ratio } : {}), ...(mode !== undefined ? { placementMode: mode } : {}) };
}

export class PlacementState {
  private allocator?: Allocator;
  private gpuInfos?: Map<string, GpuInfo>;
  private owners?: Map<string, string>;
  /** Each namespace's held and reserved shares, counted as the two maps below change. */
  private readonly ledger = new QuotaLedger();
  /** The namespace of each pod with a held or reserved share, by UID (what the ledger counts it for). */
  private readonly namespaces = new Map<string, string>();
  /** Shares recorded on live pods, by pod UID. */
  private readonly held = new CountedMap<Allocation>(this.ledger, 'held/', (uid, a) => this.counted(uid, a));
  /** When this state learned of a held share by an event (its bind, its record's arrival, a resize); absent for shares read from a list. */
  private readonly heldSince = new Map<string, number>();
  /**
   * Pods whose share was released (deleted, or finished), by UID, with when: a list sent before the
   * release still shows them holding it, and must not bring it back. Kept for RELEASED_MEMORY_MS.
   */
  private readonly releasedAt = new Map<string, number>();
  /** CPU and memory of other bound pods (no share), as allocations of no GPU, by pod UID. */
  private readonly background = new Map<string, Allocation>();
  /**
   * Shares reserved by filter for a bind to come, by pod UID; `binding` once their Binding is sent,
   * until it is known to have landed (commit) or not (cancel), or the reservation expires.
   */
  private readonly reserved = new CountedMap<{ allocation: Allocation; at: number; binding?: true }>(this.ledger, 'reserved/', (uid, r) =>
    this.counted(uid, r.allocation),
  );
  private readonly now: () => number;
  private readonly ttl: number;
  private expiryTimer?: NodeJS.Timeout;
  /** DRA pods' shares: counted in the quotas, placed by kube-scheduler (claim-shares.ts). */
  private readonly claims: ClaimShares;
  /** What allocated DRA claims hold of our GPUs, with their pods' CPU and memory (claimed-gpus.ts). */
  private readonly claimed: ClaimedGpus;
  /** The mixes the pools learn, kept across the allocators build() makes (Allocator's `learned`). */
  private readonly mixes: LearnedMixes;
  /** Pods (UIDs) the learned mixes count: each once, at its first filter or as a share found held. */
  private readonly learnedFrom = new Set<string>();

  constructor(private readonly opts: PlacementStateOptions) {
    this.now = opts.now ?? Date.now;
    this.ttl = opts.reservationTtlMs ?? 60_000;
    this.mixes = opts.mixes ?? new LearnedMixes();
    this.claims = new ClaimShares(this.ledger, this.now, this.ttl);
    const s = opts.sources;
    this.claimed = new ClaimedGpus({
      pod: (key) => s.pods.get(key),
      poolOf: (node) => this.nodePool().get(node),
      released: (uid) => this.releasedAt.has(uid),
    });
    const topologyChanged = () => {
      this.allocator = undefined;
      this.gpuInfos = undefined;
      this.owners = undefined;
    };
    // The controller rewrites GPU and pool status after every placement; only what placement reads
    // (capacity, phase, node, model, pool settings and membership) rebuilds the allocator.
    // GPUs, GPU nodes and pools are not kube-scheduler's objects: room they add (`roomAt`) is announced,
    // except what the first list brings (no pod was turned away for it by this process).
    const watch = <T extends K8sObject>(
      inf: PlacementSource<T>,
      placementView: (o: T) => unknown,
      roomAt?: (o: T) => string | undefined,
    ) => {
      const changed = (o: T) => {
        topologyChanged();
        const node = inf.hasSynced() ? roomAt?.(o) : undefined;
        if (node) this.opts.onRoom?.(node);
      };
      inf.on({
        add: changed,
        delete: topologyChanged,
        update: (old, next) => {
          if (JSON.stringify(placementView(old)) !== JSON.stringify(placementView(next))) changed(next);
        },
      });
    };
    watch(
      s.gpus,
      (g) => gpuInfo(g) ?? null,
      (g) => gpuInfo(g)?.node,
    );
    watch(s.nodes, (n) => allocatable(n));
    watch(
      s.gpuNodes,
      (n) => n.metadata.labels?.[MANAGED_BY_LABEL] ?? null,
      (n) => n.metadata.name,
    );
    watch(
      s.pools,
      (p) => poolConfig(p),
      (p) => [...this.nodePool()].find(([, pool]) => pool === p.metadata.name)?.[0],
    );
    s.pods.on({ add: (p) => this.observe(p), update: (_o, p) => this.observe(p), delete: (p) => this.release(p.metadata.uid) });
    // A claim allocated since the cache last showed it is missed until its event arrives: a DRA pod
    // scored meanwhile may be ranked on a GPU that looks freer than it is. That costs a worse score
    // only, never an over-allocation: kube-scheduler's allocator keeps the devices' capacity itself.
    // No room is announced when a claim goes: this state turns no DRA pod away for GPU room.
    s.claims?.on({
      add: (c) => this.observeClaim(c),
      update: (_o, c) => this.observeClaim(c),
      delete: (c) => this.observeClaim(c, true),
    });
  }

  /** Counts what a claim holds now on our GPUs (nothing once it is deallocated or `gone`). */
  private observeClaim(claim: ResourceClaim, gone = false): void {
    const change = this.claimed.observe(claim, gone);
    if (!change) return;
    if (change.released) this.allocator?.release(change.released.id);
    if (change.restored) this.allocator?.restore([change.restored]);
    // The pod's CPU and memory move between the claim's allocation and its background one.
    const pod = change.pod;
    const p = pod && this.opts.sources.pods.get(pod.key);
    if (p?.metadata.uid === pod?.uid && p && !this.held.has(pod!.uid) && !this.reserved.has(pod!.uid)) this.observeBackground(p);
  }

  /** A pod changed or went: its claim's allocation counts its CPU and memory as it is now. */
  private observePodClaim(podUid: string): void {
    const claim = this.claimed.claimOfPod(podUid);
    if (claim) this.observeClaim(claim);
  }

  /**
   * Replaces what the pods say with an authoritative list (a consistent LIST after a failover). What
   * events told us since `listedAt` (when the LIST was sent) wins over it: shares bound or recorded
   * since are kept, and shares released since stay released (the list may predate both).
   */
  resetFromPods(pods: readonly K8sObject[], listedAt = -Infinity): void {
    const before = new Map(this.held);
    const since = new Map(this.heldSince);
    const recent = new Map([...this.held].filter(([uid]) => (since.get(uid) ?? -Infinity) >= listedAt));
    this.held.clear();
    this.heldSince.clear();
    for (const [uid, a] of recent) {
      this.held.set(uid, a);
      // A record still being written stays ahead of every list until it lands.
      this.heldSince.set(uid, since.get(uid) === Infinity ? Infinity : listedAt);
    }
    for (const p of pods) {
      const a = !isTerminal(p) ? allocationOf(p) : undefined;
      // A share learned since the list was sent is newer than the list's record of it (a resize).
      if (a && !this.releasedAt.has(a.id) && !recent.has(a.id)) {
        this.namespaces.set(a.id, p.metadata.namespace ?? '');
        this.held.set(a.id, a);
        this.reserved.delete(a.id);
      }
    }
    this.claims.reset(pods, listedAt, (uid) => this.releasedAt.has(uid));
    this.allocator = undefined;
    // A share the list no longer has was released by a pod whose delete event has not reached us; that
    // event will find nothing to release, so the release is announced here or never.
    for (const [uid, a] of before) if (!this.held.has(uid)) this.opts.onRoom?.(a.node);
  }

  /** A bound pod without a share takes CPU and memory on its node: an allocation of no GPU. */
  private backgroundOf(pod: K8sObject): Allocation | undefined {
    const node = boundNode(pod);
    const uid = pod.metadata.uid;
    if (!node || !uid || isTerminal(pod)) return undefined;
    const pool = this.nodePool().get(node);
    if (!pool) return undefined;
    const r = podRequests(pod);
    if (r.cpu === 0 && r.memory === 0) return undefined;
    return {
      id: uid,
      pool,
      node,
      gpuIds: [],
      tflopsRequest: 0,
      tflopsLimit: 0,
      vramRequest: 0,
      vramLimit: 0,
      cpu: r.cpu,
      memory: r.memory,
      qos: 'low',
    };
  }

  private observeBackground(pod: K8sObject): void {
    const uid = pod.metadata.uid as string;
    const next = allocationOf(pod) || this.claimed.countsPod(uid) ? undefined : this.backgroundOf(pod);
    const prev = this.background.get(uid);
    if (JSON.stringify(prev) === JSON.stringify(next)) return;
    if (prev) this.allocator?.release(uid);
    if (next) this.allocator?.restore([next]);
    if (next) this.background.set(uid, next);
    else this.background.delete(uid);
  }

  /** Builds from the caches as they are now; used before the first answer. */
  resetFromCaches(): void {
    this.resetFromPods(this.opts.sources.pods.list());
  }

  private observe(pod: K8sObject): void {
    const uid = pod.metadata.uid;
    if (!uid) return;
    if (isTerminal(pod)) return void this.release(uid);
    this.claims.observe(pod);
    this.observePodClaim(uid);
    if (!this.held.has(uid) && !this.reserved.has(uid)) this.observeBackground(pod);
    const a = allocationOf(pod);
    if (!a || this.held.has(uid)) return;
    this.namespaces.set(uid, pod.metadata.namespace ?? '');
    // The record arrived (our own bind, or another replica's before a failover): it replaces any reservation.
    const r = this.reserved.get(uid);
    this.reserved.delete(uid);
    this.held.set(uid, a);
    this.heldSince.set(uid, this.now());
    if (this.allocator) {
      if (r) this.allocator.release(uid);
      this.allocator.restore([a]);
      this.learnHeld(this.allocator, a);
    }
  }

  /**
   * Counts a pod's request toward its pool's learned mix, once per pod: filter calls it before it
   * places or refuses the pod, as the allocator in process counts every request it is given.
   */
  learn(request: AllocationRequest): void {
    this.learnOnce(this.current(), request);
  }

  /** A share this state finds held (a restart, another replica's bind) counts once too, as its record says. */
  private learnHeld(allocator: Allocator, a: Allocation): void {
    this.learnOnce(allocator, { ...a, gpuCount: a.gpuIds.length });
  }

  private learnOnce(allocator: Allocator, request: AllocationRequest): void {
    if (this.learnedFrom.has(request.id)) return;
    this.learnedFrom.add(request.id);
    allocator.observe(request);
  }

  /**
   * Frees the share (held or reserved) of a pod that is gone, or the CPU and memory of one without a
   * share: kube-scheduler may have seen it go first and retried a pod we then turned away, so the room
   * is announced.
   */
  release(uid: string | undefined): void {
    if (!uid) return;
    const freed = this.held.get(uid) ?? this.reserved.get(uid)?.allocation ?? this.background.get(uid);
    const held = this.held.delete(uid);
    const reserved = this.reserved.delete(uid);
    const background = this.background.delete(uid);
    this.claims.release(uid);
    this.heldSince.delete(uid);
    this.namespaces.delete(uid);
    this.learnedFrom.delete(uid);
    this.rememberRelease(uid);
    // Its claim holds its GPUs until kube-scheduler deallocates it; its CPU and memory go now.
    this.observePodClaim(uid);
    if (held || reserved || background) this.allocator?.release(uid);
    if (freed) this.opts.onRoom?.(freed.node);
  }

  /** A UID never comes back, so a release is final; remembered long enough to outlast any LIST. */
  private rememberRelease(uid: string): void {
    const now = this.now();
    this.releasedAt.delete(uid);
    this.releasedAt.set(uid, now);
    for (const [old, at] of this.releasedAt) {
      if (at > now - RELEASED_MEMORY_MS) break;
      this.releasedAt.delete(old);
    }
  }

  /** The allocator with current topology and usage (rebuilt after a topology change). */
  current(): Allocator {
    this.expireReservations();
    if (!this.allocator) this.allocator = this.build();
    return this.allocator;
  }

  private build(): Allocator {
    const s = this.opts.sources;
    const pools = s.pools.list();
    const allocator = new Allocator({
      pools: Object.fromEntries(pools.map((p) => [p.metadata.name as string, poolConfig(p)])),
      learned: this.mixes,
    });
    const owners = this.nodePool();
    const infos = this.gpus();
    const placed = new Set<string>();
    for (const p of pools) {
      for (const spec of poolNodeSpecs(p.metadata.name as string, infos.values(), owners, poolIsolation(p))) {
        const node = s.nodes.get(spec.name);
        allocator.addNode(node ? { ...spec, ...allocatable(node) } : spec);
        placed.add(spec.name);
      }
    }
    // GPU nodes with no usable GPU: refusals name why (NotReady, isolation) rather than "no nodes".
    const notIsolated = new Map<string, Set<string>>();
    for (const g of infos.values())
      if (g.isolationNotReady) notIsolated.set(g.node, (notIsolated.get(g.node) ?? new Set()).add(g.isolationNotReady));
    for (const [name, pool] of owners) {
      if (placed.has(name)) continue;
      const node = s.nodes.get(name);
      const isolation = notIsolated.get(name);
      // Running GPUs left out only for their isolation: that is the reason, whatever else the node says.
      allocator.setUnavailable(
        name,
        pool,
        !node
          ? 'gone'
          : isolation
            ? `isolation not ready (${[...isolation].sort().join(', ')})`
            : !isNodeReady(node as never)
              ? 'NotReady'
              : 'without a Running GPU',
      );
    }
    // Claims' allocations and background usage are recomputed: node membership may have changed with
    // the topology. A pod whose claim counts its CPU and memory has no background allocation.
    const claimed = this.claimed.reset(s.claims?.list() ?? []);
    // Pods bound here (commitBackground) that the cache does not show bound yet keep their CPU and
    // memory until their event comes: a rebuild meanwhile (a list before a refusal) must not free it.
    const unseen = new Map(this.background);
    this.background.clear();
    for (const p of s.pods.list()) {
      const uid = p.metadata.uid;
      if (uid && (boundNode(p) || isTerminal(p))) unseen.delete(uid);
      if (!uid || this.held.has(uid) || this.reserved.has(uid) || this.claimed.countsPod(uid)) continue;
      const b = this.backgroundOf(p);
      if (b) this.background.set(uid, b);
    }
    for (const [uid, b] of unseen) {
      const pool = owners.get(b.node);
      const counted = this.background.has(uid) || this.held.has(uid) || this.reserved.has(uid) || this.claimed.countsPod(uid);
      if (pool !== undefined && !counted) this.background.set(uid, { ...b, pool });
    }
    allocator.restore([
      ...this.held.values(),
      ...[...this.reserved.values()].map((r) => r.allocation),
      ...this.background.values(),
      ...claimed,
    ]);
    for (const a of this.held.values()) this.learnHeld(allocator, a);
    return allocator;
  }

  /** The pool of each GPU node, by node name. */
  private nodePool(): Map<string, string> {
    this.owners ??= nodePools(this.opts.sources.gpuNodes.list());
    return this.owners;
  }

  /** Reservations made before this time have expired. */
  private reservationCutoff(): number {
    return this.now() - this.ttl;
  }

  private expireReservations(): void {
    const cutoff = this.reservationCutoff();
    for (const [uid, r] of this.reserved) {
      if (r.at >= cutoff) continue;
      this.reserved.delete(uid);
      this.allocator?.release(uid);
      this.opts.onRoom?.(r.allocation.node);
    }
  }

  /**
   * Expires reservations on time, not only at the next call: with every pod turned away there may be
   * no next call, and the room must be announced. One timer, for the oldest reservation (the map keeps
   * them in the order they were made).
   */
  private scheduleExpiry(): void {
    const oldest = this.reserved.values().next().value;
    if (this.expiryTimer || !oldest) return;
    this.expiryTimer = setTimeout(
      () => {
        this.expiryTimer = undefined;
        this.expireReservations();
        this.scheduleExpiry();
      },
      Math.max(0, oldest.at + this.ttl - this.now()) + 1,
    ).unref();
  }

  /** GPU objects usable for placement, by name. */
  gpus(): Map<string, GpuInfo> {
    this.gpuInfos ??= new Map(
      [...this.opts.sources.gpus.list()]
        .map((g) => gpuInfo(g))
        .filter((g): g is GpuInfo => !!g)
        .map((g) => [g.name, g]),
    );
    return this.gpuInfos;
  }

  /** Device name and TFLOPS of a GPU object, for the binding annotations. */
  device(gpu: string): DeviceInfo | undefined {
    const g = this.gpus().get(gpu);
    return g && { device: g.device, tflops: g.tflops };
  }

  /** The share a pod holds or has reserved. */
  holding(uid: string): Allocation | undefined {
    return this.held.get(uid) ?? this.reserved.get(uid)?.allocation;
  }

  isReserved(uid: string): boolean {
    return this.reserved.has(uid);
  }

  /** True while the pod's Binding is on the wire, or was sent and nobody knows yet whether it landed. */
  isBinding(uid: string): boolean {
    const r = this.reserved.get(uid);
    // An expired reservation counts as gone before the next call sweeps it (expireReservations).
    return r?.binding === true && r.at >= this.reservationCutoff();
  }

  choose(request: AllocationRequest, nodes: readonly string[]): Choice {
    return this.current().choose(request, nodes);
  }

  /** The node the pool's mode prefers among `nodes` (Allocator.best): {@link choose} without the reasons. */
  best(request: AllocationRequest, nodes: readonly string[]): string | undefined {
    return this.current().best(request, nodes);
  }

  /**
   * Reserves a share on `node` for a bind to come; a previous reservation of the same pod is dropped
   * first. A share of a pod in `namespace` is refused when a quota of the namespace has no room for it:
   * checked and counted in one step, so two pods filtered at once cannot both take the last room.
   */
  reserve(request: AllocationRequest, node: string, namespace?: string): AllocateResult | QuotaRefusal {
    this.cancel(request.id);
    if (namespace !== undefined && request.gpuCount > 0) {
      const overQuota = this.quotaRefusal(namespace, request);
      if (overQuota) return { ok: false, overQuota };
      this.namespaces.set(request.id, namespace);
    }
    const r = this.current().allocate(request, { node });
    if (r.ok) {
      this.reserved.set(request.id, { allocation: r.allocation, at: this.now() });
      this.scheduleExpiry();
    }
    return r;
  }

  /** The one pool all `nodes` belong to, if they all belong to the same pool. */
  poolOfAll(nodes: readonly string[]): string | undefined {
    const owners = this.nodePool();
    const pool = owners.get(nodes[0] ?? '');
    return pool !== undefined && nodes.every((n) => owners.get(n) === pool) ? pool : undefined;
  }

  /**
   * Marks the bind of a reserved share as started, and returns it: its reservation starts its time again, so that it cannot
   * expire, and its room go to a pod filtered meanwhile, while the Binding is on the wire. Called
   * again when the Binding got no answer: it may still land, so the share stays counted for a
   * reservation's time, unless its record arrives first.
   */
  startBinding(uid: string): Allocation | undefined {
    const r = this.reserved.get(uid);
    if (!r) return undefined;
    // Re-inserted: the expiry timer reads the map as oldest first.
    this.reserved.delete(uid);
    this.reserved.set(uid, { allocation: r.allocation, at: this.now(), binding: true });
    return r.allocation;
  }

  /**
   * The bind of `allocation` succeeded: the share is the pod's (its record arrives through the watch
   * later), also when its reservation went in the meantime.
   */
  commit(uid: string, allocation: Allocation): void {
    const r = this.reserved.get(uid);
    this.reserved.delete(uid);
    const counted = r?.allocation === allocation;
    // Another reservation of the pod gives way to the share it was bound with.
    if (r && !counted) this.allocator?.release(uid);
    if (this.held.has(uid) || this.releasedAt.has(uid)) return;
    this.held.set(uid, allocation);
    this.heldSince.set(uid, this.now());
    if (!counted) this.allocator?.restore([allocation]);
  }

  /**
   * The bind of a pod without a GPU share succeeded: its CPU and memory stay counted as background
   * usage (what the pod's watch event will say too), and no record is written on the pod.
   */
  commitBackground(uid: string): void {
    const r = this.reserved.get(uid);
    if (!r) return;
    this.reserved.delete(uid);
    this.background.set(uid, r.allocation);
  }

  /**
   * Resizes the share a bound pod holds, on the same node and GPUs, when they have room (autoscaling's
   * in-place resize, lib/runtime/autoscale/resize.ts). The pod's record must follow: the caller
   * resizes with `recordPending` while it patches the record, then again to say it landed, or back if
   * the patch failed. A reserved (not yet bound) share is not resized.
   */
  resize(uid: string, amounts: ShareAmounts, recordPending = false): AllocateResult | QuotaRefusal | undefined {
    const before = this.held.get(uid);
    if (!before) return undefined;
    const namespace = this.namespaces.get(uid);
    if (namespace !== undefined) {
      // Only what the resize adds counts: a share may always shrink, also in a namespace over its quota.
      const gpuCount = before.gpuIds.length;
      const added = addUsage(quotaUsage(amounts, gpuCount), quotaUsage(before, gpuCount), -1);
      const e = totalExcess(this.ledger.used(namespace), added, this.quotasIn(namespace));
      if (e) return { ok: false, overQuota: excessMessage(namespace, e) };
    }
    const r = this.current().resize(uid, amounts);
    if (r.ok) {
      this.held.set(uid, r.allocation);
      // As a bind: a list of the pods sent before this change may predate the pod's new record, and
      // while the record is being written any list may.
      this.heldSince.set(uid, recordPending ? Infinity : this.now());
      const a = r.allocation;
      if (a.tflopsRequest < before.tflopsRequest || a.vramRequest < before.vramRequest || a.tflopsLimit < before.tflopsLimit)
        this.opts.onRoom?.(a.node);
    }
    return r;
  }

  /** Drops a reservation (bind failed, or the pod is filtered again). */
  cancel(uid: string): void {
    const r = this.reserved.get(uid);
    if (!r) return;
    this.reserved.delete(uid);
    this.allocator?.release(uid);
    // Room a pod turned away may have been refused for (a bind that failed or moved).
    this.opts.onRoom?.(r.allocation.node);
  }

  /** What a share counts for in its namespace's quotas: shares of GPUs only, of a known namespace. */
  private counted(uid: string, a: Allocation): { namespace: string; usage: QuotaAmounts } | undefined {
    const namespace = this.namespaces.get(uid);
    if (namespace === undefined || a.gpuIds.length === 0) return undefined;
    return { namespace, usage: allocationUsage(a) };
  }

  /** The bounds of the namespace's quotas. */
  private quotasIn(namespace: string): QuotaBounds[] {
    return (this.opts.sources.quotas?.list() ?? []).filter((q) => q.metadata.namespace === namespace).map(quotaBounds);
  }

  /**
   * Counts the share of a DRA pod (no GPU chosen here) in its namespace's quotas, or says why a quota
   * has no room for it: checked and counted in one step, as {@link reserve}.
   */
  reserveClaim(namespace: string, request: AllocationRequest): string | undefined {
    this.claims.release(request.id);
    const overQuota = this.quotaRefusal(namespace, request);
    if (!overQuota) this.claims.reserve(request.id, namespace, request);
    return overQuota;
  }

  /** A DRA pod's Binding to `node` was sent: its share stays counted while the outcome is unknown. */
  claimBinding(uid: string, node: string): void {
    this.claims.binding(uid, node);
  }

  /** A DRA pod's Binding landed (true) or was refused (false). */
  claimBound(uid: string, ok: boolean): void {
    if (ok) this.claims.bound(uid);
    else this.claims.release(uid);
  }

  /** Where a DRA pod's Binding was sent, if one was: landed, on the wire, or of unknown outcome. */
  claimSentTo(uid: string): { node: string; landed: boolean } | undefined {
    return this.claims.sentTo(uid);
  }

  /** Why `request` of a pod in `namespace` may not be placed now, if a quota of the namespace has no room for it. */
  quotaRefusal(namespace: string, request: AllocationRequest): string | undefined {
    this.claims.expire();
    const quotas = this.quotasIn(namespace);
    if (quotas.length === 0 || request.gpuCount === 0) return undefined;
    const e = totalExcess(this.ledger.used(namespace), quotaUsage(request, request.gpuCount), quotas);
    return e && excessMessage(namespace, e);
  }

  /** What the namespace's held and reserved shares add up to (milli-TFLOPS, bytes, pods). */
  quotaUsed(namespace: string): QuotaAmounts {
    return this.ledger.used(namespace);
  }

  /** Counts for metrics and benchmarks. */
  stats(): { held: number; reserved: number } {
    return { held: this.held.size, reserved: this.reserved.size };
  }
}

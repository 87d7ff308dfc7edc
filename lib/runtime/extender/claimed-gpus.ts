/**
 * What DRA claims hold of our GPUs, as allocations the extender's allocator counts: kube-scheduler's
 * allocator picks a DRA pod's GPUs and writes them in its claim's status (claim-results.ts reads
 * them), so the extender learns them from the claims cache, not from its own placements. One
 * allocation per allocated claim, held from allocation to deallocation or deletion, as kube-scheduler
 * counts it, with its pod's CPU and memory: one shape per pod, as the pool's learned workload mix
 * (MinFragmentation) must see it, not a GPU share of no CPU beside CPU of no GPU.
 */
import type { Allocation } from '../../allocator';
import type { K8sObject } from '../kube/cluster';
import { claimGpus, claimPod, ResourceClaim } from '../shared/dra/claim-results';
import { isTerminal } from '../shared/pod-lifecycle';
import { podRequests } from '../shared/pod-requests';

/** The allocator id of a claim's allocation: apart from pod UIDs, which key every other allocation. */
export const claimAllocationId = (claimUid: string) => `claim/${claimUid}`;

/**
 * The allocation a claim holds on a node of a pool (`poolOf`: the pool of a node), with `requests`,
 * its pod's CPU and memory (none while the pod is not known, or finished); undefined before it is
 * allocated, for a claim of no GPU of ours, or on a node of no pool. Per-GPU amounts are what the
 * claim consumed of its first GPU: the one request of a claim consumes the same of each.
 */
export function claimAllocation(
  claim: ResourceClaim,
  poolOf: (node: string) => string | undefined,
  requests: { cpu: number; memory: number } = { cpu: 0, memory: 0 },
): Allocation | undefined {
  const uid = claim.metadata.uid;
  const gpus = claimGpus(claim).sort((a, b) => a.index - b.index);
  const node = gpus[0]?.node;
  const pool = node === undefined ? undefined : poolOf(node);
  if (!uid || pool === undefined) return undefined;
  const { tflops, vram } = gpus[0];
  return {
    id: claimAllocationId(uid),
    pool,
    node: node!,
    // A claim's devices come from one node's slice; a result naming another node is not counted here.
    gpuIds: gpus.filter((g) => g.node === node).map((g) => g.gpu),
    tflopsRequest: tflops,
    tflopsLimit: tflops,
    vramRequest: vram,
    vramLimit: vram,
    cpu: requests.cpu,
    memory: requests.memory,
    // Not read by placement.
    qos: 'medium',
  };
}

/** The pod a claim belongs to: its UID and its key in the pods cache. */
interface ClaimOwner {
  readonly uid: string;
  readonly key: string;
}

/** An allocated claim's allocation and the pod it belongs to. */
interface Claimed {
  readonly claim: ResourceClaim;
  readonly allocation: Allocation;
  readonly pod?: ClaimOwner;
}

/** How what one claim holds changed: the allocation to release, the one to count, and its pod. */
export interface ClaimChange {
  readonly released?: Allocation;
  readonly restored?: Allocation;
  readonly pod?: ClaimOwner;
}

export interface ClaimedGpusOptions {
  /** The pods cache, by `namespace/name`. */
  readonly pod: (key: string) => K8sObject | undefined;
  /** The pool of a GPU node. */
  readonly poolOf: (node: string) => string | undefined;
  /** Whether a pod's share was released (deleted or finished) though the cache may still show it. */
  readonly released: (podUid: string) => boolean;
}

/**
 * The allocations that allocated claims hold, by claim UID, each with its pod's CPU and memory while
 * the pod is live (it then counts no background usage of its own: {@link countsPod}).
 */
export class ClaimedGpus {
  private readonly claimed = new Map<string, Claimed>();
  /** The claim UID counting each pod's CPU and memory, by pod UID. */
  private readonly claimOf = new Map<string, string>();

  constructor(private readonly opts: ClaimedGpusOptions) {}

  /** Whether a claim counts the pod's CPU and memory. */
  countsPod(podUid: string): boolean {
    return this.claimOf.has(podUid);
  }

  /** The claim that counts the pod's CPU and memory, as last seen. */
  claimOfPod(podUid: string): ResourceClaim | undefined {
    const uid = this.claimOf.get(podUid);
    return uid === undefined ? undefined : this.claimed.get(uid)?.claim;
  }

  /** Counts what a claim holds now (nothing once it is deallocated or `gone`); undefined when that did not change. */
  observe(claim: ResourceClaim, gone = false): ClaimChange | undefined {
    const uid = claim.metadata.uid;
    if (!uid) return undefined;
    const next = gone ? undefined : this.claimedOf(claim);
    const prev = this.claimed.get(uid);
    if (JSON.stringify(prev?.allocation) === JSON.stringify(next?.allocation)) {
      if (prev && next) this.claimed.set(uid, next);
      return undefined;
    }
    if (prev) {
      this.claimed.delete(uid);
      if (prev.pod) this.claimOf.delete(prev.pod.uid);
    }
    if (next) this.add(uid, next);
    return { released: prev?.allocation, restored: next?.allocation, pod: (next ?? prev)?.pod };
  }

  /** Counts `claims` afresh (node membership may have changed); returns their allocations. */
  reset(claims: readonly ResourceClaim[]): Allocation[] {
    this.claimed.clear();
    this.claimOf.clear();
    for (const c of claims) {
      const e = this.claimedOf(c);
      if (e) this.add(c.metadata.uid!, e);
    }
    return [...this.claimed.values()].map((c) => c.allocation);
  }

  private add(uid: string, c: Claimed): void {
    this.claimed.set(uid, c);
    if (c.pod) this.claimOf.set(c.pod.uid, uid);
  }

  /** What a claim holds now, with its pod's CPU and memory while the pod is live here. */
  private claimedOf(claim: ResourceClaim): Claimed | undefined {
    const owner = claimPod(claim);
    const key = owner && `${claim.metadata.namespace ?? ''}/${owner.name}`;
    const pod = key === undefined ? undefined : this.opts.pod(key);
    const live = pod && owner && pod.metadata.uid === owner.uid && !isTerminal(pod) && !this.opts.released(owner.uid);
    const allocation = claimAllocation(claim, this.opts.poolOf, live ? podRequests(pod) : undefined);
    return allocation && { claim, allocation, pod: owner && { uid: owner.uid, key: key! } };
  }
}

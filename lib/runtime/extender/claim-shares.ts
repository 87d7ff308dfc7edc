/**
 * The shares of DRA pods in the namespace quota ledger. kube-scheduler's allocator picks their GPUs
 * (the claim's status says which), so the extender places nothing for them; it still counts them in
 * their namespace's quotas, with the same check-and-count step as a GPU reservation, so that two pods
 * filtered at once cannot both take a quota's last room, whichever way their shares are delivered.
 */
import type { AllocationRequest } from '../../allocator';
import type { K8sObject } from '../kube/cluster';
import { boundNode, isTerminal } from '../shared/pod-lifecycle';
import { draShareOf } from '../shared/dra/pod-claim';
import { QuotaAmounts, shareUsage } from '../shared/quota';
import { CountedMap, QuotaLedger } from './quota-ledger';

interface ClaimShare {
  readonly namespace: string;
  readonly usage: QuotaAmounts;
  /** When it was reserved (filter) or learned bound. */
  readonly at: number;
  readonly bound: boolean;
  /** The node its Binding was sent for (landed when `bound`, else on the wire or of unknown outcome). */
  readonly node?: string;
}

const usageOf = (request: Pick<AllocationRequest, 'gpuCount' | 'tflopsRequest' | 'vramRequest' | 'tflopsLimit' | 'vramLimit'>) =>
  shareUsage({
    gpuCount: request.gpuCount,
    tflopsRequest: request.tflopsRequest,
    vramRequest: request.vramRequest,
    tflopsLimit: request.tflopsLimit ?? request.tflopsRequest,
    vramLimit: request.vramLimit ?? request.vramRequest,
  });

export class ClaimShares {
  private readonly shares: CountedMap<ClaimShare>;

  constructor(
    ledger: QuotaLedger,
    private readonly now: () => number,
    /** How long a reservation not yet bound counts. */
    private readonly ttlMs: number,
  ) {
    this.shares = new CountedMap<ClaimShare>(ledger, 'claim/', (_uid, s) => ({ namespace: s.namespace, usage: s.usage }));
  }

  /** Counts a DRA pod's share from filter until its bind (or the reservation's time). */
  reserve(uid: string, namespace: string, request: AllocationRequest): void {
    this.shares.set(uid, { namespace, usage: usageOf(request), at: this.now(), bound: false });
  }

  /**
   * Its Binding to `node` was sent: the share counts, its time starting again, until the outcome is
   * known (or for a reservation's time when it never is).
   */
  binding(uid: string, node: string): void {
    const s = this.shares.get(uid);
    if (s) this.shares.set(uid, { ...s, node, at: this.now() });
  }

  /** Its Binding landed: the share counts until the pod goes (learned now: newer than a list sent before). */
  bound(uid: string): void {
    const s = this.shares.get(uid);
    if (s) this.shares.set(uid, { ...s, bound: true, at: this.now() });
  }

  /** The node a Binding of the pod was sent for, if one was: landed, on the wire, or of unknown outcome. */
  sentTo(uid: string): { node: string; landed: boolean } | undefined {
    const s = this.shares.get(uid);
    return s?.node === undefined ? undefined : { node: s.node, landed: s.bound };
  }

  has(uid: string): boolean {
    return this.shares.has(uid);
  }

  release(uid: string): boolean {
    return this.shares.delete(uid);
  }

  /** Drops reservations whose bind never came. */
  expire(): void {
    const cutoff = this.now() - this.ttlMs;
    for (const [uid, s] of this.shares) if (!s.bound && s.at < cutoff) this.shares.delete(uid);
  }

  /** What a pod event says: a bound DRA pod holds its share, a finished one holds none. */
  observe(pod: K8sObject): void {
    const uid = pod.metadata.uid;
    if (!uid) return;
    if (isTerminal(pod)) return void this.shares.delete(uid);
    const share = draShareOf(pod);
    const node = boundNode(pod);
    if (share && node && !this.shares.get(uid)?.bound)
      this.shares.set(uid, { namespace: pod.metadata.namespace ?? '', usage: usageOf(share), at: this.now(), bound: true, node });
  }

  /**
   * Replaces the bound shares learned before `listedAt` with a list's. Shares learned bound since stay
   * (the list may predate their bind), as do reservations, whenever made: a list cannot show a pod
   * between its filter and its bind, and dropping its reservation would let another pod take its
   * quota room (the expiry ends the ones whose bind never comes). Released pods stay released (`released`).
   */
  reset(pods: readonly K8sObject[], listedAt: number, released: (uid: string) => boolean): void {
    for (const [uid, s] of this.shares) if (s.bound && s.at < listedAt) this.shares.delete(uid);
    for (const p of pods) if (p.metadata.uid && !released(p.metadata.uid)) this.observe(p);
  }
}

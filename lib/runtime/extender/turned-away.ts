/**
 * The pods filter turned away, kept until they are placed or gone, so that room reaches them even when
 * its announcement does not. A RetrySignal announcement is an edge: one kube-scheduler handled before
 * the pod's retry was refused, or one lost, leaves a refused pod in its unschedulable pool until the
 * 5-minute flush. The sweep is the level: it asks whether a pod turned away would fit now on a node
 * kube-scheduler offered it, and names that node to announce. Any node event retries every pod an
 * extender turned away, so one node per sweep is enough.
 */
import type { AllocationRequest } from '../../allocator';
import { WAIT_KINDS } from './node-reasons';

export interface TurnedAwayPod {
  namespace: string;
  name: string;
  uid: string;
}

/** One feasible-node list kube-scheduler sent, shared by the pods it was sent for. */
interface NodeList {
  id: number;
  key: string;
  nodes: readonly string[];
  users: number;
}

interface Entry {
  pod: TurnedAwayPod;
  request: AllocationRequest;
  /** The request without its id, and the namespace (its quota): pods asking the same on the same nodes are checked once. */
  requestKey: string;
  list: NodeList;
  at: number;
  /** Why filter turned it away, as a short kind (see reasonKind). */
  reason: string;
}

export interface SweepOptions {
  /** The node where `request` of `pod` fits now among `nodes`, if any (the state's choice and its namespace's quota, as filter judges them). */
  fits: (request: AllocationRequest, nodes: readonly string[], pod: TurnedAwayPod) => string | undefined;
  /** Whether the pod still waits to be placed (exists with this UID, unbound, not terminating). */
  waiting: (pod: TurnedAwayPod) => boolean;
  now: number;
}

export class TurnedAway {
  private readonly pods = new Map<string, Entry>();
  /**
   * kube-scheduler offers most waiting pods the same feasible nodes: one copy of each list, counted by
   * its users (a thousand pods × a thousand node names would otherwise hold tens of megabytes).
   */
  private readonly lists = new Map<string, NodeList>();
  private nextListId = 0;
  private lastAnnouncement = -Infinity;

  /** Where the next sweep starts, when the last one stopped at `maxChecks`. */
  private cursor = 0;

  /**
   * @param reannounceMs A fit already announced is announced again after this long if its pods still wait.
   * @param maxChecks Fit checks per sweep (each judges the pod's nodes, as filter does): many different
   *   waiting requests are checked over several sweeps rather than in one long pause of the extender.
   */
  constructor(
    private readonly reannounceMs = 60_000,
    private readonly maxChecks = 32,
  ) {}

  get size(): number {
    return this.pods.size;
  }

  record(pod: TurnedAwayPod, request: AllocationRequest, nodes: readonly string[], now: number, reason: string = WAIT_KINDS.noRoom): void {
    this.forget(pod.uid);
    const key = nodes.join('\n');
    let list = this.lists.get(key);
    if (!list) this.lists.set(key, (list = { id: this.nextListId++, key, nodes: [...nodes], users: 0 }));
    list.users++;
    const { id: _id, ...rest } = request;
    this.pods.set(pod.uid, { pod, request, requestKey: JSON.stringify([pod.namespace, rest]), list, at: now, reason });
  }

  forget(uid: string): void {
    const e = this.pods.get(uid);
    if (!e) return;
    this.pods.delete(uid);
    if (--e.list.users === 0) this.lists.delete(e.list.key);
  }

  /** The pods still waiting, counted by pool and reason. */
  waitingCounts(waiting: (pod: TurnedAwayPod) => boolean): { pool: string; reason: string; pods: number }[] {
    const counts = new Map<string, { pool: string; reason: string; pods: number }>();
    for (const e of this.pods.values()) {
      if (!waiting(e.pod)) continue;
      const key = `${e.request.pool}\n${e.reason}`;
      const c = counts.get(key) ?? { pool: e.request.pool, reason: e.reason, pods: 0 };
      c.pods++;
      counts.set(key, c);
    }
    return [...counts.values()];
  }

  /** Room was announced at `now` (a stamp by the RetrySignal): every pod turned away before is retried. */
  announced(now: number): void {
    this.lastAnnouncement = Math.max(this.lastAnnouncement, now);
  }

  /**
   * A node where a waiting pod fits now, or undefined. After an announcement, only pods turned away
   * again are considered until `reannounceMs` has passed: the announcement retried them all, and a pod
   * that still does not fit for kube-scheduler (a constraint that changed since) must not make every
   * sweep retry every waiting pod.
   */
  sweep(opts: SweepOptions): string | undefined {
    const fresh = (e: Entry) => e.at > this.lastAnnouncement || opts.now - this.lastAnnouncement >= this.reannounceMs;
    const entries = [...this.pods.values()];
    const start = this.cursor % Math.max(1, entries.length);
    const checked = new Set<string>();
    for (let i = 0; i < entries.length && checked.size < this.maxChecks; i++) {
      const e = entries[(start + i) % entries.length];
      this.cursor = start + i + 1;
      if (!opts.waiting(e.pod)) {
        this.forget(e.pod.uid);
        continue;
      }
      const key = `${e.list.id} ${e.requestKey}`;
      if (!fresh(e) || checked.has(key)) continue;
      checked.add(key);
      const node = opts.fits(e.request, e.list.nodes, e.pod);
      if (node !== undefined) {
        this.announced(opts.now);
        return node;
      }
    }
    return undefined;
  }
}

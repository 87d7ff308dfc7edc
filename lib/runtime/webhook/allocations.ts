/**
 * The per-pool ledgers of this replica, and the leader's sweep that releases finished or never-born
 * allocations and restores missing ones (see lifecycle.ts).
 */
import type { AllocateResult, Allocation, AllocationRequest } from '../../scheduler';
import type { Cluster, K8sObject } from '../cluster';
import { LedgerEntry, PoolLedger, PoolTopology } from './ledger';
import { planCollection } from './lifecycle';

export interface AllocationsOptions {
  cluster: Cluster;
  /** Namespace of the ledger ConfigMaps. */
  namespace: string;
  topology: PoolTopology;
  /** @default Date.now */
  now?: () => number;
}

export interface SweepResult {
  released: number;
  restored: number;
}

export class Allocations {
  private readonly ledgers = new Map<string, PoolLedger>();
  private readonly now: () => number;

  constructor(private readonly opts: AllocationsOptions) {
    this.now = opts.now ?? Date.now;
  }

  ledger(pool: string): PoolLedger {
    let l = this.ledgers.get(pool);
    if (!l) {
      l = new PoolLedger({ ...this.opts, pool });
      this.ledgers.set(pool, l);
    }
    return l;
  }

  reserve(request: AllocationRequest, namespace: string, dryRun: boolean): Promise<AllocateResult> {
    return this.ledger(request.pool).reserve(request, namespace, dryRun);
  }

  /** The allocation with this id in the pool's ledger, re-reading the ledger once on a miss. */
  async allocation(pool: string, id: string): Promise<Allocation | undefined> {
    const ledger = this.ledger(pool);
    const hit = ledger.entry(id);
    if (hit) return hit.allocation;
    await ledger.refresh();
    return ledger.entry(id)?.allocation;
  }

  /** Every entry this replica last read, across pools. */
  entries(): LedgerEntry[] {
    return [...this.ledgers.values()].flatMap((l) => l.list());
  }

  /** Releases allocations of pods that are gone; any replica may call it, the leader does. */
  async release(pool: string, ids: readonly string[]): Promise<number> {
    return ids.length ? this.ledger(pool).release(ids) : 0;
  }

  /**
   * Leader only: re-reads the ledgers of `pools`, then releases and restores as {@link planCollection} says.
   */
  async sweep(pools: readonly string[], pods: readonly K8sObject[], graceMs: number, seen: Set<string>): Promise<SweepResult> {
    const all = new Set(pools);
    for (const l of this.ledgers.keys()) all.add(l);
    await Promise.all([...all].map((p) => this.ledger(p).refresh()));
    const plan = planCollection(this.entries(), pods, this.now(), graceMs, seen);
    let released = 0;
    let restored = 0;
    for (const [pool, ids] of plan.release) released += await this.ledger(pool).release(ids);
    for (const [pool, entries] of plan.restore) restored += await this.ledger(pool).restore(entries);
    return { released, restored };
  }
}

/**
 * Which ledger entries to release and which to restore, from the pods the leader sees. Pure: the
 * leader's sweep feeds it the ledger and its pod cache.
 *
 * - An entry is backed by an active pod (not terminating, not Succeeded/Failed) carrying its id in the
 *   allocation annotation. Unbacked entries are released when their pod finished or was seen before
 *   (it was deleted), or, for pods never seen (admission rejected later by another webhook or by
 *   validation), once the grace period has passed since the entry was made.
 * - An active pod whose allocation is missing from the ledger (the ledger was lost or restored from a
 *   backup) is restored into it: pods are the ground truth of what runs.
 */
import type { K8sObject } from '../cluster';
import { recordedAllocation } from './admit';
import type { LedgerEntry } from './ledger';

export interface CollectionPlan {
  /** Allocation ids to release, per pool. */
  readonly release: ReadonlyMap<string, string[]>;
  /** Entries to add back, per pool. */
  readonly restore: ReadonlyMap<string, LedgerEntry[]>;
}

export function isActivePod(pod: K8sObject): boolean {
  const phase = (pod.status as { phase?: string } | undefined)?.phase;
  return !pod.metadata.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed';
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/**
 * @param seen allocation ids observed on a pod since this leader started; ids of active pods are added.
 */
export function planCollection(entries: Iterable<LedgerEntry>, pods: Iterable<K8sObject>, now: number, graceMs: number, seen: Set<string>): CollectionPlan {
  const active = new Map<string, K8sObject>();
  const finished = new Set<string>();
  const restore = new Map<string, LedgerEntry[]>();
  const known = new Set<string>();
  const list = [...entries];
  for (const e of list) known.add(e.allocation.id);
  for (const pod of pods) {
    const a = recordedAllocation(pod);
    if (!a) continue;
    if (!isActivePod(pod)) {
      finished.add(a.id);
      continue;
    }
    if (active.has(a.id)) continue;
    active.set(a.id, pod);
    seen.add(a.id);
    if (!known.has(a.id)) {
      known.add(a.id);
      push(restore, a.pool, { allocation: a, createdAt: now, namespace: pod.metadata.namespace ?? '' });
    }
  }
  const release = new Map<string, string[]>();
  for (const e of list) {
    const id = e.allocation.id;
    if (active.has(id)) continue;
    if (finished.has(id) || seen.has(id) || now - e.createdAt > graceMs) push(release, e.allocation.pool, id);
  }
  return { release, restore };
}

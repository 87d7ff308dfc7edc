/**
 * A reconciler's own creates and deletes that its cache may not show yet: what kube-scheduler calls
 * assuming and the ReplicaSet controller calls expectations. A pass that runs before the watch brings
 * its last pass's writes must neither make an object again (under another name) nor count one it
 * deleted. An entry goes once the cache agrees, or after `ttlMs`, so that a watch event lost for good
 * is not waited for longer than a relist would take.
 */
import type { K8sObject } from './cluster';

/** How long a write is assumed without the cache showing it. */
export const ASSUMED_TTL_MS = 30_000;

function keyOf(o: K8sObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

export class AssumedWrites<T extends K8sObject> {
  private readonly made = new Map<string, { obj: T; atMs: number }>();
  private readonly gone = new Map<string, { uid?: string; atMs: number }>();

  constructor(private readonly ttlMs = ASSUMED_TTL_MS) {}

  /** `obj` was created (as the server returned it). */
  created(obj: T, nowMs: number): void {
    this.gone.delete(keyOf(obj));
    this.made.set(keyOf(obj), { obj, atMs: nowMs });
  }

  /** `obj` was deleted. */
  deleted(obj: T, nowMs: number): void {
    this.made.delete(keyOf(obj));
    this.gone.set(keyOf(obj), { uid: obj.metadata.uid, atMs: nowMs });
  }

  /**
   * `cached` (the cache's objects of one scope) as the cache will show them once it has caught up:
   * with the objects made in that scope that it lacks, without those deleted that it still has.
   */
  view(cached: readonly T[], inScope: (obj: T) => boolean, nowMs: number): T[] {
    const byKey = new Map(cached.map((o) => [keyOf(o), o]));
    for (const [key, m] of this.made) {
      const seen = byKey.get(key);
      if (nowMs - m.atMs >= this.ttlMs || (seen && (!m.obj.metadata.uid || seen.metadata.uid === m.obj.metadata.uid)))
        this.made.delete(key);
    }
    for (const [key, g] of this.gone) {
      const seen = byKey.get(key);
      if (nowMs - g.atMs >= this.ttlMs || !seen || (g.uid && seen.metadata.uid !== g.uid)) this.gone.delete(key);
    }
    for (const key of this.gone.keys()) byKey.delete(key);
    // A made object replaces a cached one of the same name that is still on its way out.
    for (const [key, { obj }] of this.made) if (inScope(obj)) byKey.set(key, obj);
    return [...byKey.values()];
  }
}

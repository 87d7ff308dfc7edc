/**
 * What each reconciler watches, declared in the spirit of controller-runtime's builder
 * (`For(&Primary).Owns(&Child).Watches(&Other, mapFunc)`), and the one place that turns those
 * declarations into informer handlers adding keys to the work queue.
 */
import type { K8sObject } from '../kube/cluster';
import type { WorkQueue } from '../kube/workqueue';
import { CACHE_NAMES, CacheName, CachedObject, Caches, ReadCaches } from './caches';
import { ControllerKey, encodeKey } from './keys';

/** One watched cache and how an event on it maps to keys of one reconciler. */
export interface WatchOn<K, C extends CacheName> {
  readonly cache: C;
  /** The keys an added, updated (see `old`) or deleted object enqueues. */
  readonly keys: (obj: CachedObject<C>, caches: ReadCaches) => K[];
  /** An update also maps the old object: a moved label leaves its previous owner to be redone. @default false */
  readonly old?: boolean;
  /** An update enqueues only when this holds (a predicate, as controller-runtime's). @default always */
  readonly changed?: (old: CachedObject<C>, cur: CachedObject<C>) => boolean;
  /** Enqueue after the pod-status delay instead of at once (folds bursts into one write). @default false */
  readonly delayed?: boolean;
}

export type Watch<K> = { [C in CacheName]: WatchOn<K, C> }[CacheName];

export interface Watches<K> {
  /** The primary kind: each object is one key (also what is enqueued once at start). */
  readonly for: Watch<K>;
  /** Kinds this reconciler writes, mapped back to the key that wrote them. */
  readonly owns?: readonly Watch<K>[];
  /** Other inputs, mapped to the keys they affect. */
  readonly watches?: readonly Watch<K>[];
}

/** An update predicate: the spec or the annotations changed (a status-only update did not). */
export function specOrAnnotationsChanged(old: K8sObject, cur: K8sObject): boolean {
  return JSON.stringify(old.spec) !== JSON.stringify(cur.spec) || JSON.stringify(old.metadata.annotations) !== JSON.stringify(cur.metadata.annotations);
}

/** Every watch of every reconciler, primary ones first. */
export function allWatches(declared: readonly Watches<ControllerKey>[]): Watch<ControllerKey>[] {
  return [
    ...declared.map((d) => d.for),
    ...declared.flatMap((d) => [...(d.owns ?? []), ...(d.watches ?? [])]),
  ];
}

/** The keys of every object of the primary kinds, to enqueue once when reconciling starts. */
export function primaryKeys(caches: ReadCaches, declared: readonly Watches<ControllerKey>[]): ControllerKey[] {
  return declared.flatMap(({ for: w }) => caches[w.cache].list().flatMap((o) => mapKeys(w, o, caches)));
}

/**
 * Registers one handler set per watched cache; each event adds the keys of every watch on that
 * cache to `queue` (after `delayMs` for delayed watches).
 */
export function wireWatches(caches: Caches, declared: readonly Watches<ControllerKey>[], queue: WorkQueue, delayMs: number): void {
  const watches = allWatches(declared);
  for (const name of CACHE_NAMES) {
    const on = watches.filter((w) => w.cache === name);
    if (on.length === 0) continue;
    const enqueue = (w: Watch<ControllerKey>, obj: K8sObject) => {
      for (const k of mapKeys(w, obj, caches)) {
        if (w.delayed) queue.addAfter(encodeKey(k), delayMs);
        else queue.add(encodeKey(k));
      }
    };
    const every = (obj: K8sObject) => on.forEach((w) => enqueue(w, obj));
    (caches[name] as Caches[CacheName] as { on(h: object): unknown }).on({
      add: every,
      delete: every,
      update: (old: K8sObject, cur: K8sObject) => {
        const passing = on.filter((w) => !w.changed || (w.changed as (a: K8sObject, b: K8sObject) => boolean)(old, cur));
        passing.filter((w) => w.old).forEach((w) => enqueue(w, old));
        passing.forEach((w) => enqueue(w, cur));
      },
    });
  }
}

function mapKeys(w: Watch<ControllerKey>, obj: K8sObject, caches: ReadCaches): ControllerKey[] {
  return (w.keys as (o: K8sObject, c: ReadCaches) => ControllerKey[])(obj, caches);
}

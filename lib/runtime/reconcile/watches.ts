/**
 * What each reconciler watches, declared in the spirit of controller-runtime's builder
 * (`For(&Primary).Owns(&Child).Watches(&Other, mapFunc)`), and the one place that turns those
 * declarations into informer handlers adding keys to the work queue.
 */
import type { K8sObject } from '../kube/cluster';
import type { WorkQueue } from '../kube/workqueue';
import type { Informer } from '../kube/informer';
import { CACHE_NAMES, CacheName, CachedObject, ReadCaches } from '../shared/caches';
import { ControllerKey, encodeKey } from './queue-keys';

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
  /** Kinds made for or owned by the primary (by name, owner label or reference), mapped back to its key. */
  readonly owns?: readonly Watch<K>[];
  /** Other inputs, mapped to the keys they affect. */
  readonly watches?: readonly Watch<K>[];
}

/** An update predicate: the spec or the annotations changed (a status-only update did not). */
export function specOrAnnotationsChanged(old: K8sObject, cur: K8sObject): boolean {
  return (
    JSON.stringify(old.spec) !== JSON.stringify(cur.spec) ||
    JSON.stringify(old.metadata.annotations) !== JSON.stringify(cur.metadata.annotations)
  );
}

/** A watch with its cache's object type erased, for the wiring that serves every cache. */
interface AnyWatch {
  readonly cache: CacheName;
  readonly keys: (obj: K8sObject, caches: ReadCaches) => ControllerKey[];
  readonly old?: boolean;
  readonly changed?: (old: K8sObject, cur: K8sObject) => boolean;
  readonly delayed?: boolean;
}

/** Every watch of every reconciler, primary ones first. */
function allWatches(declared: readonly Watches<ControllerKey>[]): AnyWatch[] {
  return [...declared.map((d) => d.for), ...declared.flatMap((d) => [...(d.owns ?? []), ...(d.watches ?? [])])] as AnyWatch[];
}

/** The keys of every object of the primary kinds, to enqueue once when reconciling starts. */
export function primaryKeys(caches: ReadCaches, declared: readonly Watches<ControllerKey>[]): ControllerKey[] {
  return declared.flatMap(({ for: w }) => caches[w.cache].list().flatMap((o) => (w as AnyWatch).keys(o, caches)));
}

/** The caches as event sources: what {@link wireWatches} needs of them. */
export type EventSources = { readonly [C in CacheName]: ReadCaches[C] & Pick<Informer<CachedObject<C>>, 'on'> };

/**
 * Registers one handler set per watched cache; each event adds the keys of every watch on that
 * cache to `queue`, in declaration order (after `delayMs` for delayed watches).
 */
export function wireWatches(
  caches: EventSources,
  declared: readonly Watches<ControllerKey>[],
  queue: Pick<WorkQueue, 'add' | 'addAfter'>,
  delayMs: number,
): void {
  const watches = allWatches(declared);
  const enqueue = (w: AnyWatch, obj: K8sObject) => {
    for (const k of w.keys(obj, caches)) {
      if (w.delayed) queue.addAfter(encodeKey(k), delayMs);
      else queue.add(encodeKey(k));
    }
  };
  for (const name of CACHE_NAMES) {
    const on = watches.filter((w) => w.cache === name);
    if (on.length === 0) continue;
    const every = (obj: K8sObject) => on.forEach((w) => enqueue(w, obj));
    (caches[name] as Pick<Informer<K8sObject>, 'on'>).on({
      add: every,
      delete: every,
      update: (old, cur) => {
        const passing = on.filter((w) => !w.changed || w.changed(old, cur));
        passing.filter((w) => w.old).forEach((w) => enqueue(w, old));
        passing.forEach((w) => enqueue(w, cur));
      },
    });
  }
}

/**
 * A reflector + indexed cache following client-go: list, then watch from the list's resourceVersion
 * with bookmarks and a jittered timeoutSeconds; resume from the last seen resourceVersion after a
 * clean close; relist and diff on 410 Gone (HTTP status or in-stream ERROR); back off with jitter and
 * honour Retry-After otherwise; abort watches that go silent. Hand-written because client-node 1.4.0's
 * informer has none of this (ts-controller.md §2.2).
 */
import type { Counter, Gauge } from 'prom-client';
import type { Logger } from 'pino';
import { ApiError, Cluster, K8sObject, WatchEvent, isGone } from './cluster';
import { Clock, realClock, sleep } from './clock';
import { ResourceType, keyOf } from './resources';

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(oldObj: T, newObj: T): void;
  delete?(obj: T): void;
}

/** The counters an informer keeps, by resource (the runtime's RuntimeMetrics has them). */
export interface InformerMetrics {
  readonly watchRestarts: Pick<Counter<'resource' | 'cause'>, 'inc'>;
  readonly relists: Pick<Counter<'resource'>, 'inc'>;
  readonly cachedObjects: Pick<Gauge<'resource'>, 'set'>;
  readonly handlerErrors: Pick<Counter<'resource'>, 'inc'>;
}

export interface InformerOptions<T extends K8sObject> {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  clock?: Clock;
  metrics?: InformerMetrics;
  logger?: Logger;
  /** Watches ask for timeoutSeconds in [min, 2·min). @default 300 */
  minWatchTimeoutSeconds?: number;
  /** A watch with no event and no bookmark for this long is aborted. @default watch timeout + 30 s */
  idleTimeoutMs?: number;
  /** @default 800 */
  backoffInitialMs?: number;
  /** @default 30000 */
  backoffMaxMs?: number;
  /** A broken watch counts as unhealthy only after this long without an event or bookmark. @default 90000 */
  unhealthyAfterMs?: number;
  /** List page size. @default 500 */
  pageSize?: number;
  /** Applied to every object before caching. @default strips metadata.managedFields */
  transform?: (obj: T) => T;
  /** @default Math.random */
  random?: () => number;
}

/** Drops managedFields: they are often the largest part of an object and the runtime never reads them. */
export function stripManagedFields<T extends K8sObject>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}

export class Informer<T extends K8sObject = K8sObject> {
  private readonly store = new Map<string, T>();
  private readonly indexers = new Map<string, (obj: T) => string[]>();
  private readonly indices = new Map<string, Map<string, Set<string>>>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly clock: Clock;
  private readonly transform: (obj: T) => T;
  private readonly random: () => number;
  private resourceVersion = '';
  private synced = false;
  private stopped = true;
  private disconnectedSince: number | undefined;
  private abort?: AbortController;
  private loop?: Promise<void>;
  private syncWaiters: Array<() => void> = [];

  constructor(
    private readonly cluster: Cluster,
    readonly resource: ResourceType,
    private readonly opts: InformerOptions<T> = {},
  ) {
    this.clock = opts.clock ?? realClock;
    this.transform = opts.transform ?? stripManagedFields;
    this.random = opts.random ?? Math.random;
  }

  /** Registers handlers; they run synchronously for each change, exceptions are caught and counted. */
  on(handlers: InformerHandlers<T>): this {
    this.handlers.push(handlers);
    return this;
  }

  /** Maintains an index: `fn` returns the index values of an object (e.g. a pod's node name). */
  addIndex(name: string, fn: (obj: T) => string[]): this {
    this.indexers.set(name, fn);
    this.indices.set(name, new Map());
    for (const [key, obj] of this.store) this.indexAdd(name, key, obj);
    return this;
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  size(): number {
    return this.store.size;
  }

  /** Objects whose index `name` includes `value`. */
  byIndex(name: string, value: string): T[] {
    const keys = this.indices.get(name)?.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const o = this.store.get(k);
      if (o) out.push(o);
    }
    return out;
  }

  /** True once the first list has been applied. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** Synced, and any broken watch has been broken for less than `unhealthyAfterMs`. */
  isHealthy(): boolean {
    if (!this.synced) return false;
    return this.disconnectedSince === undefined || this.clock.now() - this.disconnectedSince < (this.opts.unhealthyAfterMs ?? 90_000);
  }

  /** Last resourceVersion seen (opaque). */
  lastSyncResourceVersion(): string {
    return this.resourceVersion;
  }

  /** Resolves once synced (or stopped). */
  waitForSync(): Promise<void> {
    if (this.synced || this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  start(): this {
    if (!this.stopped) return this;
    this.stopped = false;
    this.abort = new AbortController();
    this.loop = this.run(this.abort.signal);
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    await this.loop;
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private get name(): string {
    return this.resource.plural;
  }

  private async run(signal: AbortSignal): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.relist(signal);
          needList = false;
          failures = 0;
        }
        const cause = await this.watchOnce(signal, () => {
          failures = 0;
        });
        if (signal.aborted) break;
        this.opts.metrics?.watchRestarts.inc({ resource: this.name, cause });
      } catch (err) {
        if (signal.aborted) break;
        this.disconnectedSince ??= this.clock.now();
        if (isGone(err)) {
          // Our resourceVersion is compacted away: only a fresh list restores a consistent view.
          needList = true;
          this.opts.metrics?.watchRestarts.inc({ resource: this.name, cause: 'gone' });
          this.opts.logger?.info({ resource: this.name }, 'watch expired (410); relisting');
          continue;
        }
        failures++;
        const base = Math.min((this.opts.backoffInitialMs ?? 800) * 2 ** (failures - 1), this.opts.backoffMaxMs ?? 30_000);
        let delay = base * (0.5 + this.random()); // jitter so that replicas do not retry in step
        if (err instanceof ApiError && err.retryAfterSeconds !== undefined) delay = Math.max(delay, err.retryAfterSeconds * 1000);
        this.opts.metrics?.watchRestarts.inc({ resource: this.name, cause: err instanceof ApiError ? String(err.code) : 'error' });
        this.opts.logger?.warn({ resource: this.name, err: String(err), delayMs: Math.round(delay) }, 'list/watch failed; backing off');
        await sleep(this.clock, delay, signal);
      }
    }
  }

  /**
   * Lists everything and reconciles the cache with the result, firing add/update/delete for
   * differences. Pages are folded in as they arrive (transformed, so only the slim form is kept), so
   * the peak is the cache plus one raw page, not the cache plus the whole raw list. A list that fails
   * half way leaves the cache updated with what it read; the retry's full list completes it.
   */
  private async relist(signal?: AbortSignal): Promise<void> {
    this.opts.metrics?.relists.inc({ resource: this.name });
    // Keys of the cache this list has not returned yet, deleted at the end. Pruned as pages arrive
    // rather than grown from every listed key: it only shrinks, and is empty on the first list.
    const unseen = new Set(this.store.keys());
    const list = await this.cluster.list<T>(this.resource, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      limit: this.opts.pageSize,
      signal,
      onPage: (items) => {
        for (const raw of items) {
          const obj = this.transform(raw as T);
          const key = keyOf(obj.metadata);
          unseen.delete(key);
          this.upsert(key, obj);
        }
      },
    });
    for (const key of unseen) {
      const old = this.store.get(key);
      if (old) this.remove(key, old);
    }
    this.resourceVersion = list.resourceVersion;
    this.opts.metrics?.cachedObjects.set({ resource: this.name }, this.store.size);
    this.disconnectedSince = undefined;
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  /** One watch stream; resolves with the reason it ended. */
  private async watchOnce(signal: AbortSignal, onProgress: () => void): Promise<string> {
    const minTimeout = this.opts.minWatchTimeoutSeconds ?? 300;
    const timeoutSeconds = Math.floor(minTimeout * (1 + this.random()));
    const idleMs = this.opts.idleTimeoutMs ?? timeoutSeconds * 1000 + 30_000;
    const local = new AbortController();
    const onOuterAbort = () => local.abort();
    signal.addEventListener('abort', onOuterAbort, { once: true });
    // stop() may have aborted between the list and this watch: the listener above came too late.
    if (signal.aborted) local.abort();
    let idle = false;
    let timer: unknown;
    const arm = () => {
      this.clock.clearTimeout(timer);
      timer = this.clock.setTimeout(() => {
        idle = true;
        local.abort();
      }, idleMs);
    };
    arm();
    try {
      await this.cluster.watch<T>(
        this.resource,
        {
          namespace: this.opts.namespace,
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
          signal: local.signal,
        },
        (event) => {
          arm();
          this.disconnectedSince = undefined;
          onProgress();
          this.apply(event);
        },
      );
    } finally {
      this.clock.clearTimeout(timer);
      signal.removeEventListener('abort', onOuterAbort);
    }
    if (idle) {
      this.opts.logger?.warn({ resource: this.name, idleMs }, 'watch silent; restarting it');
      return 'idle';
    }
    return 'closed';
  }

  private apply(event: WatchEvent<T>): void {
    if (event.type === 'ERROR') {
      const s = event.object as unknown as { code?: number; reason?: string; message?: string };
      throw new ApiError(s.code ?? 500, s.reason ?? 'Unknown', s.message ?? 'watch error');
    }
    const rv = event.object?.metadata?.resourceVersion;
    if (event.type === 'BOOKMARK') {
      if (rv) this.resourceVersion = rv;
      return;
    }
    const obj = this.transform(event.object);
    const key = keyOf(obj.metadata);
    if (event.type === 'DELETED') {
      const old = this.store.get(key);
      if (old) this.remove(key, obj);
    } else {
      this.upsert(key, obj);
    }
    if (rv) this.resourceVersion = rv;
    this.opts.metrics?.cachedObjects.set({ resource: this.name }, this.store.size);
  }

  private upsert(key: string, obj: T): void {
    const old = this.store.get(key);
    // resourceVersions are opaque: equal means unchanged, anything else means changed.
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    if (old) this.indexRemove(key, old);
    this.store.set(key, obj);
    this.indexAddAll(key, obj);
    if (old) this.dispatch((h) => h.update?.(old, obj));
    else this.dispatch((h) => h.add?.(obj));
  }

  private remove(key: string, last: T): void {
    const old = this.store.get(key);
    if (old) this.indexRemove(key, old);
    this.store.delete(key);
    this.dispatch((h) => h.delete?.(last));
  }

  private dispatch(fn: (h: InformerHandlers<T>) => void): void {
    for (const h of this.handlers) {
      try {
        fn(h);
      } catch (err) {
        this.opts.metrics?.handlerErrors.inc({ resource: this.name });
        this.opts.logger?.error({ resource: this.name, err: String(err) }, 'informer handler threw');
      }
    }
  }

  private indexAdd(name: string, key: string, obj: T): void {
    const index = this.indices.get(name)!;
    for (const v of this.indexers.get(name)!(obj)) {
      let keys = index.get(v);
      if (!keys) index.set(v, (keys = new Set()));
      keys.add(key);
    }
  }

  private indexAddAll(key: string, obj: T): void {
    for (const name of this.indexers.keys()) this.indexAdd(name, key, obj);
  }

  private indexRemove(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name)!;
      for (const v of fn(obj)) {
        const keys = index.get(v);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(v);
      }
    }
  }
}

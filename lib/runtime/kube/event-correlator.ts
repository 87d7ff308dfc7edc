/**
 * Event aggregation as client-go's EventRecorder does it (tools/record/events_cache.go), hand-written
 * because client-node has no recorder:
 * - similar events (same object, type and reason, any message) seen `maxSimilar` times with different
 *   messages within `windowMs` collapse into one event whose message says "(combined from similar
 *   events)", so a message naming a node does not make a new event per node;
 * - an event seen again (same key and message) patches the existing Event's count instead of creating one;
 * - a token bucket per object (burst 25, one more every 5 minutes) drops the rest.
 * Caches are bounded LRUs of `cacheSize` keys, as client-go's (4096).
 */

/** What to do with one event. */
export type EventAction =
  | { readonly action: 'create'; readonly key: string; readonly message: string }
  | {
      readonly action: 'patch';
      readonly key: string;
      readonly name: string;
      readonly count: number;
      readonly message: string;
      readonly firstTimestampMs: number;
    }
  | { readonly action: 'drop' };

export interface EventCorrelatorOptions {
  /** Distinct messages of similar events before they are combined. @default 10 (client-go) */
  maxSimilar?: number;
  /** Window in which similar events count towards `maxSimilar`. @default 600000 (client-go) */
  windowMs?: number;
  /** Keys kept per cache. @default 4096 (client-go) */
  cacheSize?: number;
  /** Events an object may get at once. @default 25 (client-go) */
  burst?: number;
  /** One more event per object after this long. @default 300000 (client-go: qps 1/300) */
  refillMs?: number;
}

/** The message prefix client-go gives combined events. */
export const COMBINED_PREFIX = '(combined from similar events): ';

/** A Map used as an LRU: reads move a key to the end, inserts evict from the front. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly size: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, v: V): void {
    this.map.delete(key);
    this.map.set(key, v);
    if (this.map.size > this.size) this.map.delete(this.map.keys().next().value as string);
  }
  delete(key: string): void {
    this.map.delete(key);
  }
  get length(): number {
    return this.map.size;
  }
}

export interface CorrelatedEvent {
  /** Identity of the involved object (uid, or kind/namespace/name). */
  readonly object: string;
  readonly type: string;
  readonly reason: string;
  readonly message: string;
}

export class EventCorrelator {
  private readonly similar: Lru<{ messages: Set<string>; lastMs: number }>;
  private readonly seen: Lru<{ name: string; count: number; firstMs: number }>;
  private readonly buckets: Lru<{ tokens: number; atMs: number }>;
  private readonly o: Required<EventCorrelatorOptions>;

  constructor(opts: EventCorrelatorOptions = {}) {
    this.o = { maxSimilar: 10, windowMs: 600_000, cacheSize: 4096, burst: 25, refillMs: 300_000, ...opts };
    this.similar = new Lru(this.o.cacheSize);
    this.seen = new Lru(this.o.cacheSize);
    this.buckets = new Lru(this.o.cacheSize);
  }

  /** Keys held, for tests and reports: every cache stays within `cacheSize`. */
  sizes(): { similar: number; seen: number; buckets: number } {
    return { similar: this.similar.length, seen: this.seen.length, buckets: this.buckets.length };
  }

  /** Decides one event at `nowMs`. */
  correlate(e: CorrelatedEvent, nowMs: number): EventAction {
    if (!this.allow(e.object, nowMs)) return { action: 'drop' };
    const aggregateKey = `${e.object}\u0000${e.type}\u0000${e.reason}`;
    let group = this.similar.get(aggregateKey);
    if (!group || nowMs - group.lastMs > this.o.windowMs) group = { messages: new Set(), lastMs: nowMs };
    group.messages.add(e.message);
    group.lastMs = nowMs;
    const combined = group.messages.size >= this.o.maxSimilar;
    // As client-go: the set never grows past the limit (one message is let go once it is reached).
    if (combined) group.messages.delete(group.messages.values().next().value as string);
    this.similar.set(aggregateKey, group);
    const key = combined ? aggregateKey : `${aggregateKey}\u0000${e.message}`;
    const message = combined ? `${COMBINED_PREFIX}${e.message}` : e.message;
    const prior = this.seen.get(key);
    if (!prior) return { action: 'create', key, message };
    prior.count++;
    return { action: 'patch', key, name: prior.name, count: prior.count, message, firstTimestampMs: prior.firstMs };
  }

  /** Records the Event object created for `key` (its generated name), to patch it next time. */
  created(key: string, name: string, nowMs: number): void {
    this.seen.set(key, { name, count: 1, firstMs: nowMs });
  }

  /** Forgets `key` (its Event is gone): the next one is created anew. */
  forget(key: string): void {
    this.seen.delete(key);
  }

  /** A token bucket per object, refilled continuously as client-go's flowcontrol bucket. */
  private allow(object: string, nowMs: number): boolean {
    const b = this.buckets.get(object) ?? { tokens: this.o.burst, atMs: nowMs };
    b.tokens = Math.min(this.o.burst, b.tokens + (nowMs - b.atMs) / this.o.refillMs);
    b.atMs = nowMs;
    const ok = b.tokens >= 1;
    if (ok) b.tokens -= 1;
    this.buckets.set(object, b);
    return ok;
  }
}

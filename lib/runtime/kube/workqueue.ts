/**
 * A keyed work queue with client-go semantics (util/workqueue): keys are deduplicated while waiting,
 * a key being processed is never handed out again until `done`, failures back off exponentially per
 * key under a global token bucket, and `addAfter` requeues later. Memory is bounded by the number of
 * distinct live keys: nothing is stored per event. Hand-written: no npm package has these semantics.
 */
import { Clock, realClock } from './clock';

export interface WorkQueueOptions {
  clock?: Clock;
  /** First per-key retry delay. @default 5 */
  baseDelayMs?: number;
  /** Cap of the per-key retry delay. @default 1000000 */
  maxDelayMs?: number;
  /** Global rate of rate-limited re-adds (token bucket). @default 10 */
  qps?: number;
  /** @default 100 */
  burst?: number;
}

export class WorkQueue {
  private readonly clock: Clock;
  private readonly queue: string[] = [];
  private head = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  /** Earliest due time per delayed key, with its timer. */
  private readonly delayed = new Map<string, { at: number; timer: unknown }>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private shuttingDown = false;
  private tokens: number;
  private lastRefill: number;
  private readonly opts: Required<Omit<WorkQueueOptions, 'clock'>>;

  constructor(opts: WorkQueueOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.opts = {
      baseDelayMs: opts.baseDelayMs ?? 5,
      maxDelayMs: opts.maxDelayMs ?? 1_000_000,
      qps: opts.qps ?? 10,
      burst: opts.burst ?? 100,
    };
    this.tokens = this.opts.burst;
    this.lastRefill = this.clock.now();
  }

  /** Queues a key unless it is already waiting; a key in progress is queued again after `done`. */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
    } else this.queue.push(key);
  }

  /** Queues a key after `ms`; of several pending delays for one key the earliest wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const at = this.clock.now() + ms;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) this.clock.clearTimeout(existing.timer);
    const timer = this.clock.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { at, timer });
  }

  /** Re-queues a failed key after max(per-key exponential backoff, global token-bucket wait). */
  addRateLimited(key: string): void {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const perKey = Math.min(this.opts.baseDelayMs * 2 ** n, this.opts.maxDelayMs);
    this.addAfter(key, Math.max(perKey, this.reserveToken()));
  }

  /** Delay until a token is available, consuming it (golang.org/x/time/rate Reserve semantics). */
  private reserveToken(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.opts.burst, this.tokens + ((now - this.lastRefill) / 1000) * this.opts.qps);
    this.lastRefill = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.opts.qps) * 1000;
  }

  /** Clears the failure count of a key (after a success or when the object is gone). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Next key to process; waits when empty; undefined once shut down. */
  get(): Promise<string | undefined> {
    if (this.head < this.queue.length) {
      const key = this.queue[this.head++];
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      this.dirty.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks a key finished; if it was added meanwhile, it is queued again now. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  /** Keys waiting (not counting delayed or in-progress keys). */
  len(): number {
    return this.queue.length - this.head;
  }

  /** In-progress plus delayed keys, for metrics. */
  stats(): { depth: number; processing: number; delayed: number; retrying: number } {
    return { depth: this.len(), processing: this.processing.size, delayed: this.delayed.size, retrying: this.failures.size };
  }

  /** Stops handing out keys; waiting `get` calls resolve undefined. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const d of this.delayed.values()) this.clock.clearTimeout(d.timer);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }
}

/** What a reconcile asks of the queue. */
export interface ReconcileResult {
  /** Process this key again after this many ms even if nothing changes. */
  requeueAfterMs?: number;
}

/**
 * Runs `workers` loops that take keys and reconcile them. Errors re-queue with backoff; success
 * forgets the key's failures; `requeueAfterMs` schedules the next pass. Resolves after shutdown.
 */
export async function runWorkers(
  queue: WorkQueue,
  workers: number,
  reconcile: (key: string) => Promise<ReconcileResult | void>,
  onError: (key: string, err: unknown) => void = () => undefined,
): Promise<void> {
  const loop = async () => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        const result = await reconcile(key);
        queue.forget(key);
        if (result?.requeueAfterMs) queue.addAfter(key, result.requeueAfterMs);
      } catch (err) {
        onError(key, err);
        if (!queue.isShuttingDown) queue.addRateLimited(key);
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
}

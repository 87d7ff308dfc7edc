/**
 * Time as the runtime sees it, injectable so that tests drive leases and backoffs without waiting.
 */

export interface Clock {
  /** Monotonic milliseconds (for deadlines and observed times). */
  now(): number;
  /** Wall-clock time (for Lease MicroTime fields). */
  wallNow(): Date;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The process clock: `performance.now()` for deadlines, immune to wall-clock jumps. */
export const realClock: Clock = {
  now: () => performance.now(),
  wallNow: () => new Date(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Resolves after `ms` on `clock`, or at once when `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clock.clearTimeout(handle);
      resolve();
    };
    const handle = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A clock that only moves when told to. `advance` fires due timers in time order and lets promise
 * callbacks run between them, so async code waiting on timers progresses as it would in real time.
 */
export class ManualClock implements Clock {
  private t = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(private readonly wallStart = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.t;
  }

  wallNow(): Date {
    return new Date(this.wallStart + this.t);
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward by `ms`, firing timers as their time comes. `settle` lets I/O run between steps. */
  async advance(ms: number, settle: () => Promise<void> = flush): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.t = Math.max(this.t, next[1].at);
      this.timers.delete(next[0]);
      next[1].fn();
      await settle();
    }
    this.t = end;
    await settle();
  }

  /** Number of pending timers (for tests that check nothing is left scheduled). */
  pending(): number {
    return this.timers.size;
  }
}

/** Lets queued promise callbacks and ready I/O callbacks run. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * When the status reconcile a pod event asks for may run. A quiet object's status follows the event
 * after a short delay; while its pods keep changing (a Deployment scaled up, a scheduler draining its
 * queue), its reconciles are spaced by a longer interval, so that a node that takes a hundred pods
 * writes its GPUs' status a few times, not once a second for as long as the burst lasts. Each write
 * of a GPU's status is a custom-resource update that costs the API server several milliseconds and
 * every watcher of GPUs an event, in competition with the placements themselves.
 */
import type { Clock } from '../kube/clock';

export class StatusPacer {
  /** Per key, when its latest booked reconcile was or is due; an entry `intervalMs` old says nothing. */
  private readonly due = new Map<string, number>();
  /** Size of `due` above which stale entries are swept (amortized over the calls that grew it). */
  private sweepAbove = 1024;

  constructor(private readonly clock: Pick<Clock, 'now'>, readonly delayMs: number, private readonly intervalMs: number) {}

  /**
   * How long from now the reconcile of `key` should wait, booked as its next one: `delayMs`, and at
   * least `intervalMs` after its previous booked reconcile; the time of one already pending when it
   * is. The caller must schedule it (the work queue's addAfter keeps the earliest).
   */
  delay(key: string): number {
    const now = this.clock.now();
    const at = this.next(key, now);
    if (at !== this.due.get(key)) {
      this.due.set(key, at);
      if (this.due.size > this.sweepAbove) this.sweep(now);
    }
    return at - now;
  }

  /**
   * The same time, not booked: for a change that needs a reconcile but must not push the key's next
   * one back, such as the echo of a status write of the reconcile itself. Booked, every write would
   * leave the key a whole interval from quiet, and the next pod event waiting that long.
   */
  peek(key: string): number {
    const now = this.clock.now();
    return this.next(key, now) - now;
  }

  /** Keys remembered (for tests: the sweep keeps this bounded by the keys booked in the last interval). */
  get size(): number {
    return this.due.size;
  }

  private next(key: string, now: number): number {
    const previous = this.due.get(key);
    if (previous === undefined) return now + this.delayMs;
    return previous > now ? previous : Math.max(now + this.delayMs, previous + this.intervalMs);
  }

  private sweep(now: number): void {
    for (const [key, at] of this.due) if (at + this.intervalMs <= now) this.due.delete(key);
    this.sweepAbove = Math.max(1024, this.due.size * 2);
  }
}

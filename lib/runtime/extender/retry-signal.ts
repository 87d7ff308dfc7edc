/**
 * Tells kube-scheduler that GPU room appeared. It retries a pod our extender turned away on the next
 * cluster event, but the event of a pod leaving may reach it before it reaches our cache, and room
 * from GPUs, GPU nodes or pools makes no event it watches; a pod refused then would wait for some
 * later event (up to the scheduler's 5-minute flush; TurnedAway is the backstop should an
 * announcement still lose its race). So once our state has the room, we make an
 * event of our own: an annotation on the node, which the scheduler sees as a node update (any event
 * retries a pod an extender turned away). Coalesced per node, and only by the extender its scheduler
 * is using. A signal that fails (the API server throttling or unreachable) is sent again a little
 * later, since a lost one is exactly the wait it exists to prevent; one for a node that is gone is
 * dropped.
 */
import type { Logger } from 'pino';
import { SHARE_RELEASED_ANNOTATION } from '../../model/metadata-keys';
import { isNotFound, type Cluster } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';

export interface RetrySignalOptions {
  cluster: Pick<Cluster, 'mergePatch'>;
  /** Whether this replica's allocator is the one in use (asked when a window's updates are due). */
  active: () => boolean | Promise<boolean>;
  logger?: Logger;
  /** Room within this window is announced with one update per node. @default 200 */
  coalesceMs?: number;
  /** A failed update is sent again after this long. @default 2000 */
  retryMs?: number;
  /**
   * Called when an update was made, with the time (ms) it was sent: pods turned away before then are
   * retried once kube-scheduler sees it.
   */
  sent?: (at: number) => void;
}

export class RetrySignal {
  private readonly pending = new Set<string>();
  private timer?: NodeJS.Timeout;
  private readonly failed = new Set<string>();
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;
  private sending = 0;

  constructor(private readonly opts: RetrySignalOptions) {}

  /** Whether an update is still to be sent (waiting out its window, being sent, or to be sent again). */
  busy(): boolean {
    return this.timer !== undefined || this.sending > 0 || this.failed.size > 0;
  }

  /** Room may have appeared on `node` (see PlacementStateOptions.onRoom). */
  roomAt(node: string): void {
    if (this.stopped) return;
    this.pending.add(node);
    this.timer ??= setTimeout(() => void this.flush(), this.opts.coalesceMs ?? 200);
  }

  private retryLater(node: string): void {
    if (this.stopped) return;
    this.failed.add(node);
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = undefined;
      for (const n of this.failed) this.roomAt(n);
      this.failed.clear();
    }, this.opts.retryMs ?? 2_000);
  }

  private async flush(): Promise<void> {
    this.timer = undefined;
    const nodes = [...this.pending];
    this.pending.clear();
    this.sending++;
    try {
      if (!(await this.opts.active())) return;
      const sentAt = Date.now();
      const at = new Date(sentAt).toISOString();
      await Promise.all(
        nodes.map((name) =>
          this.opts.cluster.mergePatch(RESOURCES.nodes, { name }, { metadata: { annotations: { [SHARE_RELEASED_ANNOTATION]: at } } }).then(
            () => this.opts.sent?.(sentAt),
            (err) => {
              this.opts.logger?.debug({ node: name, err: String(err) }, 'retry signal not sent');
              if (!isNotFound(err)) this.retryLater(name);
            },
          ),
        ),
      );
    } finally {
      this.sending--;
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.retryTimer);
    this.pending.clear();
    this.failed.clear();
  }
}

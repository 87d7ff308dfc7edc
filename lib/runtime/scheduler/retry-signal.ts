/**
 * Tells kube-scheduler that GPU room appeared. It retries a pod our extender turned away on the next
 * cluster event, but the event of a pod leaving may reach it before it reaches our cache, and a pod
 * refused then would wait for some later event (up to the scheduler's 5-minute flush). So after our
 * state has a release, we make an event of our own: an annotation on the node, which the scheduler
 * sees as a node update. Coalesced per node, and only by the extender its scheduler is using.
 */
import type { Logger } from 'pino';
import { SHARE_RELEASED_ANNOTATION } from '../../model/keys';
import type { Cluster } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';

export interface RetrySignalOptions {
  cluster: Pick<Cluster, 'mergePatch'>;
  /** True while this extender is the one being called (its scheduler leads). */
  active: () => boolean;
  logger?: Logger;
  /** Releases within this window are sent as one update per node. @default 200 */
  coalesceMs?: number;
}

export class RetrySignal {
  private readonly pending = new Set<string>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly opts: RetrySignalOptions) {}

  released(node: string): void {
    if (!this.opts.active()) return;
    this.pending.add(node);
    this.timer ??= setTimeout(() => void this.flush(), this.opts.coalesceMs ?? 200);
  }

  private async flush(): Promise<void> {
    this.timer = undefined;
    const nodes = [...this.pending];
    this.pending.clear();
    const at = new Date().toISOString();
    await Promise.all(nodes.map((name) => this.opts.cluster.mergePatch(RESOURCES.nodes, { name }, { metadata: { annotations: { [SHARE_RELEASED_ANNOTATION]: at } } })
      .catch((err) => this.opts.logger?.debug({ node: name, err: String(err) }, 'retry signal not sent'))));
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }
}

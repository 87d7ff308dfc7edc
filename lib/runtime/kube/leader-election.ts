/**
 * Lease-based leader election following client-go's tools/leaderelection: acquire by writing a
 * coordination.k8s.io/v1 Lease with its resourceVersion as precondition, renew every retry period,
 * give up when no renewal succeeded within the renew deadline. Other holders' leases are judged by
 * when *we* observed them change (local monotonic clock), never by their timestamps, so clock skew
 * between nodes does not matter. Hand-written: client-node has no elector (ts-controller.md §2.3).
 */
import type { Logger } from 'pino';
import { Cluster, K8sObject, isConflict } from './cluster';
import { Clock, realClock, sleep } from './clock';
import { RESOURCES } from './resources';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends K8sObject {
  spec?: LeaseSpec;
}

export interface LeaderElectionOptions {
  cluster: Cluster;
  namespace: string;
  /** Lease name. */
  name: string;
  /** Unique per process: pod name plus a random suffix. */
  identity: string;
  clock?: Clock;
  /** How long others wait after the last observed renewal before taking over. @default 15000 */
  leaseDurationMs?: number;
  /** The leader gives up when it could not renew for this long. @default 10000 */
  renewDeadlineMs?: number;
  /** Pause between attempts. @default 2000 */
  retryPeriodMs?: number;
  logger?: Logger;
  random?: () => number;
  onStartedLeading?: () => void;
  /** Called once when leadership is lost; the process is expected to exit. */
  onStoppedLeading?: () => void;
}

/** Thrown by fenced writes when this replica is not (or no longer) the leader. */
export class NotLeaderError extends Error {
  constructor() {
    super('not the leader: write refused');
    this.name = 'NotLeaderError';
  }
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const JITTER_FACTOR = 1.2;

export class LeaderElector {
  private readonly clock: Clock;
  private readonly leaseMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;
  private readonly random: () => number;
  private observedRecord = '';
  private observedTime = 0;
  private renewedAt = -Infinity;
  private leading = false;
  private leaseResourceVersion?: string;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.clock = opts.clock ?? realClock;
    this.leaseMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryMs = opts.retryPeriodMs ?? 2_000;
    this.random = opts.random ?? Math.random;
    if (!(this.leaseMs > this.renewDeadlineMs && this.renewDeadlineMs > JITTER_FACTOR * this.retryMs)) {
      throw new Error(
        `leader election: need leaseDuration > renewDeadline > ${JITTER_FACTOR} x retryPeriod, got ${this.leaseMs}/${this.renewDeadlineMs}/${this.retryMs} ms`,
      );
    }
  }

  /**
   * True while this replica may write: it won the lease and renewed it less than renewDeadline ago.
   * Checked against the clock on every call, so a stalled event loop cannot keep a stale leader writing.
   */
  isLeader(): boolean {
    return this.leading && this.clock.now() - this.renewedAt < this.renewDeadlineMs;
  }

  /**
   * Campaigns until leader, then renews until leadership is lost or `signal` aborts.
   * Resolves 'lost' (after onStoppedLeading) or 'stopped'.
   */
  async run(signal: AbortSignal): Promise<'lost' | 'stopped'> {
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew()) break;
      await sleep(this.clock, this.retryMs * (1 + this.random() * JITTER_FACTOR), signal);
    }
    if (signal.aborted) return 'stopped';
    this.leading = true;
    this.opts.logger?.info({ identity: this.opts.identity, lease: this.opts.name }, 'became leader');
    this.opts.onStartedLeading?.();
    while (!signal.aborted) {
      await sleep(this.clock, this.retryMs, signal);
      if (signal.aborted) break;
      let renewed = false;
      while (!signal.aborted && this.clock.now() - this.renewedAt < this.renewDeadlineMs) {
        if ((renewed = await this.tryAcquireOrRenew())) break;
        await sleep(this.clock, this.retryMs, signal);
      }
      if (signal.aborted) break;
      if (!renewed || !this.isLeader()) {
        this.leading = false;
        this.opts.logger?.error({ identity: this.opts.identity }, 'leader election lost');
        this.opts.onStoppedLeading?.();
        return 'lost';
      }
    }
    return 'stopped';
  }

  /** Gives the lease up (holder cleared, 1 s duration) so a successor need not wait; call only after work stopped. */
  async release(): Promise<void> {
    if (!this.leading || this.leaseResourceVersion === undefined) return;
    this.leading = false;
    const now = microTime(this.clock.wallNow());
    try {
      await this.opts.cluster.replace<Lease>(RESOURCES.leases, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.opts.name, namespace: this.opts.namespace, resourceVersion: this.leaseResourceVersion },
        spec: { holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
      });
    } catch (err) {
      this.opts.logger?.warn({ err: String(err) }, 'could not release the lease');
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { cluster, namespace, name, identity } = this.opts;
    const started = this.clock.now();
    const wall = microTime(this.clock.wallNow());
    const durationSeconds = Math.ceil(this.leaseMs / 1000);
    try {
      const lease = await cluster.get<Lease>(RESOURCES.leases, { namespace, name });
      if (!lease) {
        const created = await cluster.create<Lease>(RESOURCES.leases, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: wall,
            renewTime: wall,
            leaseTransitions: 0,
          },
        });
        this.observe(created, started);
        this.renewedAt = started;
        return true;
      }
      const spec = lease.spec ?? {};
      this.observe(lease, started);
      const holder = spec.holderIdentity ?? '';
      const otherDurationMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      if (holder && holder !== identity && this.observedTime + otherDurationMs > started) return false;
      const mine = holder === identity;
      const updated = await cluster.replace<Lease>(RESOURCES.leases, {
        ...lease,
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          renewTime: wall,
          acquireTime: mine ? spec.acquireTime : wall,
          leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
        },
      });
      this.observe(updated, started);
      // The renewal counts from before the request was sent: conservative for fencing.
      this.renewedAt = started;
      return true;
    } catch (err) {
      if (!isConflict(err)) this.opts.logger?.warn({ err: String(err) }, 'lease acquire/renew failed');
      return false;
    }
  }

  private observe(lease: Lease, at: number): void {
    this.leaseResourceVersion = lease.metadata.resourceVersion;
    const record = JSON.stringify(lease.spec ?? {});
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedTime = at;
    }
  }
}

const WRITES = new Set(['create', 'replace', 'replaceStatus', 'apply', 'jsonPatch', 'mergePatch', 'delete']);

/**
 * Wraps a cluster so that every write first checks `mayWrite()` and throws {@link NotLeaderError}
 * otherwise; events from a non-leader are dropped. Reads pass through (caches stay warm on all replicas).
 */
export function fenceWrites(cluster: Cluster, mayWrite: () => boolean): Cluster {
  return new Proxy(cluster, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === 'recordEvent') return (...args: unknown[]) => (mayWrite() ? value.apply(target, args) : Promise.resolve());
      if (!WRITES.has(String(prop))) return value.bind(target);
      return (...args: unknown[]) => (mayWrite() ? value.apply(target, args) : Promise.reject(new NotLeaderError()));
    },
  });
}

/**
 * The reconciling controller: informer caches of the kinds it reads, one work queue of typed keys
 * (keys.ts), and one level-based reconciler per key kind (gpu-node.ts, pool-status.ts, workload.ts, growth.ts),
 * each declaring what it watches (watches.ts). Reconcilers read the caches and write through a
 * Cluster fenced by leader election in the process.
 */
import type { Logger } from 'pino';
import type { Cluster, K8sObject } from '../kube/cluster';
import { Clock, realClock } from '../kube/clock';
import type { Informer, InformerOptions } from '../kube/informer';
import { microTime } from '../kube/leader-election';
import { WorkQueue, WorkQueueOptions, runWorkers, ReconcileResult } from '../kube/workqueue';
import type { RuntimeMetrics } from '../shared/metrics';
import { CACHE_NAMES, Caches, createCaches } from '../shared/caches';
import { GpuUsage, PodLike, usageFromPods } from '../shared/capacity';
import type { ReconcileContext, Reconciler } from './reconcile-context';
import { nodeReconciler } from './gpu-node';
import { ControllerKey, ControllerKind, encodeKey, parseKey } from './queue-keys';
import { poolReconciler } from './pool-status';
import { TopOwners } from '../shared/top-owner';
import { primaryKeys, wireWatches } from './watches';
import { workloadReconciler } from './workload';
import { quotaReconciler } from './quota-status';
import { growthReconciler } from './growth';

export interface ControllerOptions {
  /** Used by the informers (reads). */
  cluster: Cluster;
  clock?: Clock;
  logger?: Logger;
  metrics?: RuntimeMetrics;
  /** Concurrent reconciles (never two for one key). @default 2 */
  workers?: number;
  /** Overrides for every informer (short timings in tests). */
  informer?: Partial<InformerOptions<K8sObject>>;
  queue?: WorkQueueOptions;
  /** Allocated amounts per GPU; the allocator plugs in here. @default usageFromPods over the node's pods */
  usage?: (pods: PodLike[]) => GpuUsage;
  /**
   * How long a pod event waits before its node's and workload's status are written. Pods arrive in
   * bursts (a Deployment scaled up, a scheduler draining its queue): every event in the window is
   * folded into one write per object, instead of a write of the GPU, GPUNode, pool and workload
   * status per pod that competes with the placements themselves. Placement never reads these
   * statuses (the extender counts the pods' own records), so only the status shown lags.
   * @default 1000
   */
  podStatusDelayMs?: number;
  /**
   * Whether to watch DRA ResourceClaims (the install's `dra`): the GPU status then counts DRA pools'
   * shares. Off, the claims cache is never started, so a cluster that serves no resource.k8s.io/v1,
   * or a controller without the DRA role, keeps its caches synced and its replicas ready.
   * @default false
   */
  dra?: boolean;
}

/** The reconcilers, by the kind of key each takes; their watches are wired in this order. */
const RECONCILERS: { readonly [K in ControllerKey as K['kind']]: Reconciler<K> } = {
  node: nodeReconciler,
  pool: poolReconciler,
  workload: workloadReconciler,
  quota: quotaReconciler,
  growth: growthReconciler,
};
const DECLARED = Object.values(RECONCILERS).map((r) => r.watches);

export class Controller {
  readonly nodes: Caches['nodes'];
  readonly pods: Caches['pods'];
  readonly pools: Caches['pools'];
  readonly gpuNodes: Caches['gpuNodes'];
  readonly gpus: Caches['gpus'];
  readonly workloads: Caches['workloads'];
  /** Read to resolve pods whose generated workload names a profile (and by the webhook). */
  readonly profiles: Caches['profiles'];
  /** Read by the extender (quota enforcement) and the quota reconciler. */
  readonly quotas: Caches['quotas'];
  /** DRA claims; empty unless {@link ControllerOptions.dra}. */
  readonly claims: Caches['claims'];
  readonly queue: WorkQueue;
  private readonly caches: Caches;
  private readonly ctx: ReconcileContext;
  private writer?: Cluster;
  private workersDone?: Promise<void>;

  constructor(private readonly opts: ControllerOptions) {
    const clock = opts.clock ?? realClock;
    this.caches = createCaches(opts.cluster, { clock, metrics: opts.metrics, logger: opts.logger, informer: opts.informer });
    ({
      nodes: this.nodes,
      pods: this.pods,
      pools: this.pools,
      gpuNodes: this.gpuNodes,
      gpus: this.gpus,
      workloads: this.workloads,
      profiles: this.profiles,
      quotas: this.quotas,
      claims: this.claims,
    } = this.caches);
    this.queue = new WorkQueue({ clock, ...opts.queue });
    this.ctx = this.context(clock);
    wireWatches(this.caches, DECLARED, this.queue, opts.podStatusDelayMs ?? 1_000);
  }

  private context(clock: Clock): ReconcileContext {
    const topOwners = new TopOwners(this.opts.cluster);
    const self = () => this.writer;
    return {
      caches: this.caches,
      get writer(): Cluster {
        const w = self();
        if (!w) throw new Error('controller is not reconciling');
        return w;
      },
      now: () => microTime(clock.wallNow()).replace(/\.\d+Z$/, 'Z'),
      usage: this.opts.usage ?? usageFromPods,
      topOwnerOf: (pod) => topOwners.of(pod),
      logger: this.opts.logger,
      metrics: this.opts.metrics,
    };
  }

  private get informers(): Informer<K8sObject>[] {
    return CACHE_NAMES.filter((c) => c !== 'claims' || this.opts.dra).map((c) => this.caches[c] as Informer<K8sObject>);
  }

  /** Starts every informer (all replicas keep warm caches). */
  startInformers(): void {
    for (const i of this.informers) i.start();
  }

  async waitForSync(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.waitForSync()));
  }

  /** Caches synced and every watch healthy (for reports; readiness uses {@link hasSynced}). */
  isReady(): boolean {
    return this.informers.every((i) => i.isHealthy());
  }

  /** Every cache has had its first list. */
  hasSynced(): boolean {
    return this.informers.every((i) => i.hasSynced());
  }

  /** Starts the workers; writes go through `writer` (the leader-fenced cluster). Enqueues every primary object once. */
  async startReconciling(writer: Cluster): Promise<void> {
    this.writer = writer;
    await this.waitForSync();
    for (const k of primaryKeys(this.caches, DECLARED)) this.queue.add(encodeKey(k));
    this.workersDone = runWorkers(
      this.queue,
      this.opts.workers ?? 2,
      (key) => this.reconcile(key),
      (key, err) => {
        this.opts.logger?.warn({ key, err: String(err) }, 'reconcile failed; will retry');
      },
    );
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.informers.map((i) => i.stop()));
    await this.workersDone;
  }

  /** Dispatches one queue key to its reconciler, with metrics; a string that is no key is dropped. */
  async reconcile(queued: string): Promise<ReconcileResult | void> {
    const key = parseKey(queued);
    if (!key) return;
    const kind: ControllerKind = key.kind;
    const m = this.opts.metrics;
    const end = m?.reconcileSeconds.startTimer({ controller: kind });
    try {
      const r = await (RECONCILERS[kind] as Reconciler<ControllerKey>).reconcile(this.ctx, key);
      m?.reconciles.inc({ controller: kind, result: r?.requeueAfterMs ? 'requeue' : 'success' });
      return r;
    } catch (err) {
      m?.reconciles.inc({ controller: kind, result: 'error' });
      m?.reconcileErrors.inc({ controller: kind });
      throw err;
    } finally {
      end?.();
      m?.queueDepth.set(this.queue.len());
      m?.queueRetrying.set(this.queue.stats().retrying);
    }
  }
}

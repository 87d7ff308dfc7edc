/**
 * The controller's Prometheus metrics, on a registry of their own so that two controllers in one
 * process (tests, benchmarks) do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CONTROLLER_METRICS as M } from '../../contract/metrics';
import { QUOTA_RESOURCES, QuotaAmounts } from './quota';

export class RuntimeMetrics {
  readonly registry = new Registry();

  // Metrics on this instance's registry; field initializers below call these, in declaration order.
  private counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]): Histogram<L> {
    return new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  readonly reconciles = this.counter(M.reconciles, 'Reconciles by controller and result (success, error, requeue).', [
    'controller',
    'result',
  ]);
  readonly reconcileErrors = this.counter(M.reconcileErrors, 'Reconciles that failed, by controller.', ['controller']);
  readonly reconcileSeconds = this.histogram(
    M.reconcileSeconds,
    'Time spent in one reconcile.',
    ['controller'],
    [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
  );
  readonly queueDepth = this.gauge(M.queueDepth, 'Keys waiting in the work queue.');
  readonly queueRetrying = this.gauge(M.queueRetrying, 'Keys currently backing off after a failure.');
  readonly watchRestarts = this.counter(M.watchRestarts, 'Watch streams re-opened, by resource and cause.', ['resource', 'cause']);
  readonly relists = this.counter(M.relists, 'Full lists, by resource (initial sync, 410 Gone, errors).', ['resource']);
  readonly handlerErrors = this.counter(M.handlerErrors, 'Exceptions thrown by informer event handlers.', ['resource']);
  readonly cachedObjects = this.gauge(M.cachedObjects, 'Objects held in informer caches.', ['resource']);
  readonly isLeader = this.gauge(M.leader, '1 while this replica holds the leader lease.');

  /** Like kube-state-metrics' `kube_resourcequota`: one series per bound and per usage. */
  readonly gpuQuota = this.gauge(
    M.gpuQuota,
    'GPUResourceQuota totals by namespace, quota, resource (requests.tflops and limits.tflops in TFLOPS, requests.vram and limits.vram in bytes, workers in pods) and type: hard (the bound) or used (what the pods record).',
    ['namespace', 'quota', 'resource', 'type'],
  );

  /** Sets a quota's series from its bounds and usage (milli-TFLOPS, bytes, pods); without them, removes its series. */
  observeQuota(namespace: string, quota: string, counts?: { used: QuotaAmounts; hard: Partial<QuotaAmounts> }): void {
    for (const resource of QUOTA_RESOURCES) {
      const scale = resource.endsWith('.tflops') ? 1000 : 1;
      for (const type of ['used', 'hard'] as const) {
        const labels = { namespace, quota, resource, type };
        const value = counts?.[type][resource];
        if (value === undefined) this.gpuQuota.remove(labels);
        else this.gpuQuota.set(labels, value / scale);
      }
    }
  }

  readonly poolTflops = {
    capacity: this.poolGauge(M.poolCapacityTflops, "Physical TFLOPS of the pool's GPUs."),
    virtual: this.poolGauge(M.poolVirtualTflops, 'TFLOPS the allocator may hand out in the pool: capacity times the oversell ratio.'),
    requested: this.poolGauge(M.poolRequestedTflops, 'TFLOPS requested by the GPU shares placed in the pool.'),
  };
  readonly poolVram = {
    capacity: this.poolGauge(M.poolCapacityVram, "VRAM of the pool's GPUs, bytes."),
    requested: this.poolGauge(M.poolRequestedVram, 'VRAM requested by the GPU shares placed in the pool, bytes.'),
  };
  readonly gpuShares = this.gauge(M.gpuShares, 'GPU shares (pods) placed on each GPU.', ['gpu', 'node', 'pool']);
  /** The GPUs each node's series were last set for, so that a GPU gone or moved loses its series. */
  private readonly gpusOfNode = new Map<string, { gpu: string; node: string; pool: string }[]>();
  private readonly autoscale = {
    recommendedTflops: this.workloadGauge(M.autoscaleRecommendedTflops, 'Recommended TFLOPS request per GPU of the workload.'),
    requestedTflops: this.workloadGauge(M.autoscaleRequestedTflops, "TFLOPS request per GPU in the workload's spec."),
    recommendedVram: this.workloadGauge(M.autoscaleRecommendedVram, 'Recommended VRAM request per GPU of the workload, bytes.'),
    requestedVram: this.workloadGauge(M.autoscaleRequestedVram, "VRAM request per GPU in the workload's spec, bytes."),
  };

  private poolGauge(name: string, help: string): Gauge<'pool'> {
    return this.gauge(name, help, ['pool']);
  }

  private workloadGauge(name: string, help: string): Gauge<'namespace' | 'workload'> {
    return this.gauge(name, help, ['namespace', 'workload']);
  }

  /** Sets a pool's capacity and requests (TFLOPS, bytes); without them (the pool is gone), removes its series. */
  observePool(
    pool: string,
    amounts?: { tflops: number; virtualTflops: number; requestedTflops: number; vram: number; requestedVram: number },
  ): void {
    const set = (g: Gauge<'pool'>, v: number | undefined) => (v === undefined ? g.remove({ pool }) : g.set({ pool }, v));
    set(this.poolTflops.capacity, amounts?.tflops);
    set(this.poolTflops.virtual, amounts?.virtualTflops);
    set(this.poolTflops.requested, amounts?.requestedTflops);
    set(this.poolVram.capacity, amounts?.vram);
    set(this.poolVram.requested, amounts?.requestedVram);
  }

  /** Sets the shares of a node's GPUs, replacing what was set for the node before (none: the node has no GPUs of ours). */
  observeGpuShares(node: string, gpus: readonly { gpu: string; pool: string; shares: number }[]): void {
    for (const labels of this.gpusOfNode.get(node) ?? []) this.gpuShares.remove(labels);
    const now = gpus.map(({ gpu, pool }) => ({ gpu, node, pool }));
    gpus.forEach((g, i) => this.gpuShares.set(now[i], g.shares));
    if (now.length > 0) this.gpusOfNode.set(node, now);
    else this.gpusOfNode.delete(node);
  }

  /**
   * Sets a workload's recommended and requested TFLOPS and VRAM per GPU; without a recommendation
   * (autoscaling off, or none yet, or the workload gone), removes its series.
   */
  observeAutoscale(
    namespace: string,
    workload: string,
    r?: { recommended: { tflops: number; vram: number }; requested: { tflops: number; vram: number } },
  ): void {
    const labels = { namespace, workload };
    const a = this.autoscale;
    const pairs: [Gauge<'namespace' | 'workload'>, number | undefined][] = [
      [a.recommendedTflops, r?.recommended.tflops],
      [a.requestedTflops, r?.requested.tflops],
      [a.recommendedVram, r?.recommended.vram],
      [a.requestedVram, r?.requested.vram],
    ];
    for (const [g, v] of pairs) {
      if (v === undefined) g.remove(labels);
      else g.set(labels, v);
    }
  }

  /** Adds process metrics (memory, event-loop lag); only for the real process, not for tests. */
  withDefaultMetrics(): this {
    collectDefaultMetrics({ register: this.registry });
    return this;
  }
}

/** Seconds buckets of one call a server answers (an admission review, an extender call): 0.5 ms to 1 s. */
const CALL_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1];

interface MetricSpec<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
}

/** A server's calls on `registry`: a counter of them and a histogram of the seconds each took. */
export function callMetrics<C extends string, S extends string>(
  registry: Registry,
  calls: MetricSpec<C>,
  seconds: MetricSpec<S>,
): { calls: Counter<C>; seconds: Histogram<S> } {
  const registers = [registry];
  return { calls: new Counter({ ...calls, registers }), seconds: new Histogram({ ...seconds, buckets: CALL_BUCKETS, registers }) };
}

/**
 * The controller's Prometheus metrics, on a registry of their own so that two controllers in one
 * process (tests, benchmarks) do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { QUOTA_RESOURCES, QuotaAmounts } from './quota';

export class RuntimeMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({
    name: 'tf_controller_reconcile_total',
    help: 'Reconciles by controller and result (success, error, requeue).',
    labelNames: ['controller', 'result'] as const,
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: 'tf_controller_reconcile_errors_total',
    help: 'Reconciles that failed, by controller.',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  });
  readonly reconcileSeconds = new Histogram({
    name: 'tf_controller_reconcile_duration_seconds',
    help: 'Time spent in one reconcile.',
    labelNames: ['controller'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'tf_controller_workqueue_depth',
    help: 'Keys waiting in the work queue.',
    registers: [this.registry],
  });
  readonly queueRetrying = new Gauge({
    name: 'tf_controller_workqueue_retrying_keys',
    help: 'Keys currently backing off after a failure.',
    registers: [this.registry],
  });
  readonly watchRestarts = new Counter({
    name: 'tf_controller_watch_restarts_total',
    help: 'Watch streams re-opened, by resource and cause.',
    labelNames: ['resource', 'cause'] as const,
    registers: [this.registry],
  });
  readonly relists = new Counter({
    name: 'tf_controller_relists_total',
    help: 'Full lists, by resource (initial sync, 410 Gone, errors).',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });
  readonly handlerErrors = new Counter({
    name: 'tf_controller_informer_handler_errors_total',
    help: 'Exceptions thrown by informer event handlers.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });
  readonly cachedObjects = new Gauge({
    name: 'tf_controller_cached_objects',
    help: 'Objects held in informer caches.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });
  readonly isLeader = new Gauge({
    name: 'tf_controller_leader',
    help: '1 while this replica holds the leader lease.',
    registers: [this.registry],
  });

  /** Like kube-state-metrics' `kube_resourcequota`: one series per bound and per usage. */
  readonly gpuQuota = new Gauge({
    name: 'tf_gpu_quota',
    help: 'GPUResourceQuota totals by namespace, quota, resource (requests.tflops and limits.tflops in TFLOPS, requests.vram and limits.vram in bytes, workers in pods) and type: hard (the bound) or used (what the pods record).',
    labelNames: ['namespace', 'quota', 'resource', 'type'] as const,
    registers: [this.registry],
  });

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

  /** Adds process metrics (memory, event-loop lag); only for the real process, not for tests. */
  withDefaultMetrics(): this {
    collectDefaultMetrics({ register: this.registry });
    return this;
  }
}

/**
 * The controller's metric names (and the labels the dashboard and alert rules read), one home for
 * the runtime that exports them (lib/runtime/shared/metrics.ts, the webhook and the extender) and the
 * Grafana dashboard and alert rules that query them (lib/render/controller/dashboard.ts, alert-rules.ts):
 * a rename changes both. The node agent's names are in ./agent.ts.
 */

/** Metric names; units are in the names, as Prometheus recommends. */
export const CONTROLLER_METRICS = {
  /** Counter: reconciles by controller and result (success, error, requeue). */
  reconciles: 'tf_controller_reconcile_total',
  /** Counter: failed reconciles by controller. */
  reconcileErrors: 'tf_controller_reconcile_errors_total',
  /** Histogram, seconds: one reconcile, by controller. */
  reconcileSeconds: 'tf_controller_reconcile_duration_seconds',
  /** Gauge: keys waiting in the work queue. */
  queueDepth: 'tf_controller_workqueue_depth',
  /** Gauge: keys backing off after a failure. */
  queueRetrying: 'tf_controller_workqueue_retrying_keys',
  /** Counter: watch streams re-opened, by resource and cause. */
  watchRestarts: 'tf_controller_watch_restarts_total',
  /** Counter: full lists, by resource. */
  relists: 'tf_controller_relists_total',
  /** Counter: exceptions thrown by informer event handlers, by resource. */
  handlerErrors: 'tf_controller_informer_handler_errors_total',
  /** Gauge: objects in informer caches, by resource. */
  cachedObjects: 'tf_controller_cached_objects',
  /** Gauge, 0 or 1: whether this replica holds the leader lease. */
  leader: 'tf_controller_leader',
  /** Gauge: GPUResourceQuota bounds and usage by namespace, quota, resource and type (hard or used). */
  gpuQuota: 'tf_gpu_quota',
  /** Gauge, TFLOPS: physical TFLOPS of a pool's GPUs (pool). Leader only, as every reconciler's series. */
  poolCapacityTflops: 'tf_pool_capacity_tflops',
  /** Gauge, TFLOPS: what the allocator may hand out in a pool: capacity × the oversell ratio (pool). */
  poolVirtualTflops: 'tf_pool_virtual_capacity_tflops',
  /** Gauge, TFLOPS: TFLOPS requested by the GPU shares placed in a pool (pool). */
  poolRequestedTflops: 'tf_pool_requested_tflops',
  /** Gauge, bytes: VRAM of a pool's GPUs (pool). */
  poolCapacityVram: 'tf_pool_capacity_vram_bytes',
  /** Gauge, bytes: VRAM requested by the GPU shares placed in a pool (pool). */
  poolRequestedVram: 'tf_pool_requested_vram_bytes',
  /** Gauge: GPU shares (pods) placed on each GPU (gpu, node, pool). */
  gpuShares: 'tf_gpu_shares',
  /** Gauge: GPU pods the extender turned away that still wait, by pool and reason (a short kind such as InsufficientTflops). */
  pendingGpuPods: 'tf_pending_gpu_pods',
  /** Gauge, TFLOPS: a workload's recommended TFLOPS request per GPU (namespace, workload); only for workloads with a recommendation. */
  autoscaleRecommendedTflops: 'tf_autoscale_recommended_tflops',
  /** Gauge, TFLOPS: the TFLOPS request per GPU of that workload's spec (namespace, workload). */
  autoscaleRequestedTflops: 'tf_autoscale_requested_tflops',
  /** Gauge, bytes: a workload's recommended VRAM request per GPU (namespace, workload). */
  autoscaleRecommendedVram: 'tf_autoscale_recommended_vram_bytes',
  /** Gauge, bytes: the VRAM request per GPU of that workload's spec (namespace, workload). */
  autoscaleRequestedVram: 'tf_autoscale_requested_vram_bytes',
  /** Counter: admission reviews by outcome (allowed, denied, error, bad-request). */
  webhookAdmissions: 'tf_webhook_admissions_total',
  /** Histogram, seconds: one admission review, by outcome. */
  webhookSeconds: 'tf_webhook_admission_duration_seconds',
  /** Counter: scheduler extender calls by verb (filter, prioritize, bind) and outcome (ok, error). */
  extenderCalls: 'tf_extender_calls_total',
  /** Histogram, seconds: one extender call, by verb. */
  extenderSeconds: 'tf_extender_call_duration_seconds',
  /** Counter: nodes stamped by the extender's sweep for a pod turned away. */
  extenderSweeps: 'tf_extender_sweep_room_total',
} as const;

/** Outcomes of `tf_webhook_admissions_total` that are failures of the webhook, not refusals of a pod. */
export const WEBHOOK_FAILURE_OUTCOMES = ['error', 'bad-request'] as const;
/** The failure outcome of `tf_extender_calls_total`. */
export const EXTENDER_FAILURE_OUTCOME = 'error';

/**
 * The PromQL of the Grafana dashboard and the alert rules, built from the metric names of
 * lib/contract (one home: a renamed metric changes the queries with it). Both files take their shared
 * queries from here, so a panel and the alert about it never disagree.
 */
import { AGENT_METRICS, AGENT_NODE_LABEL } from '../../contract/agent';
import { CONTROLLER_METRICS as C, EXTENDER_FAILURE_OUTCOME, WEBHOOK_FAILURE_OUTCOMES } from '../../contract/metrics';

/** Window of the rates and quantiles. */
export const RATE_WINDOW = '5m';

const by = (labels: readonly string[]) => (labels.length > 0 ? ` by (${labels.join(', ')})` : '');

/**
 * Share of a counter's increase that matches `failed`, by `labels`. The `or ... * 0` keeps the series
 * at 0 while nothing failed (a labelled counter has no failure series until the first failure), so the
 * ratio exists whenever the counter does and an alert on it is not silently empty.
 */
export function failureRatio(counter: string, failed: string, labels: readonly string[] = []): string {
  const rate = (sel: string) => `sum${by(labels)} (rate(${counter}${sel}[${RATE_WINDOW}]))`;
  return `(${rate(`{${failed}}`)} or ${rate('')} * 0) / ${rate('')}`;
}

/** A quantile of a histogram over the rate window, by `labels`. */
export function quantile(q: number, histogram: string, labels: readonly string[] = []): string {
  return `histogram_quantile(${q}, sum by (${['le', ...labels].join(', ')}) (rate(${histogram}_bucket[${RATE_WINDOW}])))`;
}

/** The controller's series of a pool (every replica that reconciled it; the leader's is current). */
export function poolSeries(metric: string, poolMatcher = ''): string {
  return `max by (pool) (${metric}${poolMatcher})`;
}

/**
 * An agent series summed by node and pool: the agent labels its series with its node, the controller's
 * tf_gpu_shares says which pool each node's GPUs are in.
 */
export function agentByPool(metric: string, poolMatcher = '', labels: readonly string[] = ['pool']): string {
  const n = AGENT_NODE_LABEL;
  return `sum by (${labels.join(', ')}) (sum by (${n}) (${metric}) * on (${n}) group_left (pool) group by (${n}, pool) (${C.gpuShares}${poolMatcher}))`;
}

/** What the pool's shares requested over what the allocator may hand out (TFLOPS) or what there is (VRAM). */
export const POOL_RESERVED_RATIO = {
  tflops: `${poolSeries(C.poolRequestedTflops)} / ${poolSeries(C.poolVirtualTflops)}`,
  vram: `${poolSeries(C.poolRequestedVram)} / ${poolSeries(C.poolCapacityVram)}`,
};

const quotaSeries = (type: 'used' | 'hard') => `max by (namespace, quota, resource) (${C.gpuQuota}{type="${type}"})`;
/** Each quota bound's use: used over hard, by namespace, quota and resource. */
export const QUOTA_USE_RATIO = `${quotaSeries('used')} / ${quotaSeries('hard')}`;

/** Webhook failures (errors and malformed reviews, not refused pods) over all admission reviews. */
export const WEBHOOK_FAILURE_RATIO = failureRatio(C.webhookAdmissions, `outcome=~"${WEBHOOK_FAILURE_OUTCOMES.join('|')}"`);
/** Extender calls that failed over all calls, by verb. */
export const EXTENDER_FAILURE_RATIO = failureRatio(C.extenderCalls, `outcome="${EXTENDER_FAILURE_OUTCOME}"`, ['verb']);
/** Failed reconciles over all, by controller. */
export const RECONCILE_FAILURE_RATIO = failureRatio(C.reconciles, 'result="error"', ['controller']);
/**
 * Seconds since each node's agent last collected. Over an hour of samples, so that an agent that stopped
 * being scraped still has a value (its series went stale) and grows old rather than vanishing.
 */
export const AGENT_COLLECT_AGE = `time() - max by (${AGENT_NODE_LABEL}) (max_over_time(${AGENT_METRICS.lastCollect}[1h]))`;
/**
 * Each GPU's hard-isolation readiness (1 or 0, with the IsolationReady reason) by node; 1 where no agent
 * reports any (no hard isolation), so that the signal has data on every cluster. In parentheses: `or`
 * binds more loosely than the comparison an alert appends.
 */
export const GPU_ISOLATION_READY = `(min by (${AGENT_NODE_LABEL}, gpu_uuid, reason) (${AGENT_METRICS.isolationReady}) or on () vector(1))`;

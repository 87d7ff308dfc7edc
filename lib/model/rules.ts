/**
 * Enums and value rules shared by the API schemas, the annotation codec, the components and the
 * admission webhook. Each rule lives here once so that every entry point reports the same message.
 */
import { FieldIssue, fieldIssue } from './errors';

/** Quality-of-service levels, lowest first. */
export const QOS_LEVELS = ['low', 'medium', 'high', 'critical'] as const;
/** A quality-of-service level. */
export type QosLevel = (typeof QOS_LEVELS)[number];
/** QoS level when nothing sets one (TensorFusion's documented default). */
export const DEFAULT_QOS: QosLevel = 'medium';

/**
 * The scheduling priority of each QoS level (its PriorityClass's value). Small, so GPU pods stay near
 * ordinary pods (priority 0) in the kubelet's eviction order and below the classes clusters define for
 * their own services; spaced, so a cluster can put its own classes between them. A PriorityClass's
 * value cannot be changed later.
 */
export const QOS_PRIORITY_VALUES: Readonly<Record<QosLevel, number>> = { low: 100, medium: 200, high: 300, critical: 400 };
/** A pod's QoS never evicts another pod. */
export const QOS_PREEMPTION_POLICY = 'Never';

/**
 * How the allocator places a request on a pool's GPUs. The last three are TensorFusion's upstream
 * placement modes; `MinFragmentation` is ours and the default.
 */
export const PLACEMENT_MODES = ['MinFragmentation', 'CompactFirst', 'LowLoadFirst', 'NodeCompactGPULowLoad'] as const;
/** A placement mode of the allocator. */
export type PlacementMode = (typeof PLACEMENT_MODES)[number];
/** Placement mode when the pool sets none. */
export const DEFAULT_PLACEMENT_MODE: PlacementMode = 'MinFragmentation';

/**
 * How a pool's nodes hold GPU shares to their limits (`spec.nodeManagerConfig.defaultIsolationMode`,
 * upstream's field and values): `hard`, one MPS control daemon per share holding its VRAM and thread
 * limits, with the GPU, the daemon and the limits delivered by the kubelet (device plugin); `shared`,
 * no isolation: the limits reach the pod as variables only and are advisory. Upstream's `soft` (an
 * LD_PRELOAD limiter) and `partitioned` (MIG) are not provided by this runtime.
 */
export const ISOLATION_MODES = ['hard', 'shared'] as const;
/** An isolation mode. */
export type IsolationMode = (typeof ISOLATION_MODES)[number];
/** Isolation of a pool that sets none: limits that hold. */
export const DEFAULT_ISOLATION_MODE: IsolationMode = 'hard';

/** A pool's isolation mode (its CRD admits only ISOLATION_MODES). */
export function poolIsolation(pool: { spec?: { nodeManagerConfig?: { defaultIsolationMode?: string } } } | undefined): IsolationMode {
  const mode = pool?.spec?.nodeManagerConfig?.defaultIsolationMode;
  return ISOLATION_MODES.includes(mode as IsolationMode) ? (mode as IsolationMode) : DEFAULT_ISOLATION_MODE;
}

/** Fewest GPUs per worker. */
export const GPU_COUNT_MIN = 1;
/** Most GPUs per worker. */
export const GPU_COUNT_MAX = 128;

/** Formats a list of allowed values for a message: `one of low, medium, high, critical`. */
export function oneOf(values: readonly string[]): string {
  return `one of ${values.join(', ')}`;
}

/** An issue for `field` when `value` is not one of `allowed`. */
export function checkEnum<T extends string>(field: string, value: unknown, allowed: readonly T[]): FieldIssue | undefined {
  return allowed.includes(value as T) ? undefined : fieldIssue(field, value, oneOf(allowed));
}

/** Upstream isolation modes this runtime does not provide, and what they are there. */
const UPSTREAM_ONLY_ISOLATION: Readonly<Record<string, string>> = { soft: 'an LD_PRELOAD limiter', partitioned: 'MIG partitions' };

/** An issue for `field` when `value` is not an isolation mode this runtime provides. */
export function checkIsolation(field: string, value: unknown): FieldIssue | undefined {
  if (ISOLATION_MODES.includes(value as IsolationMode)) return undefined;
  const upstream = typeof value === 'string' ? UPSTREAM_ONLY_ISOLATION[value] : undefined;
  return fieldIssue(
    field,
    value,
    `${oneOf(ISOLATION_MODES)}${upstream ? ` (upstream's ${JSON.stringify(value)}, ${upstream}, is not provided by this runtime; "hard" holds limits with MPS)` : ''}`,
  );
}

/** An issue for `field` when `value` is not a QoS level. */
export function checkQos(field: string, value: unknown): FieldIssue | undefined {
  return checkEnum(field, value, QOS_LEVELS);
}

/** An issue for `field` when `value` is not a GPU count from GPU_COUNT_MIN to GPU_COUNT_MAX. */
export function checkGpuCount(field: string, value: unknown): FieldIssue | undefined {
  return Number.isInteger(value) && (value as number) >= GPU_COUNT_MIN && (value as number) <= GPU_COUNT_MAX
    ? undefined
    : fieldIssue(field, value, `an integer from ${GPU_COUNT_MIN} to ${GPU_COUNT_MAX}`);
}

/**
 * Most vGPU workers of one workload. Kubernetes is tested up to 150,000 pods per cluster; one workload
 * of more than 10,000 workers would be a large part of any cluster and is far more likely a typo than
 * a plan. Without a bound, int32 would let 2 billion through and larger values fail the CRD schema.
 */
export const REPLICAS_MAX = 10_000;

/** An issue for `field` when `value` is not a replica count from 0 to REPLICAS_MAX. */
export function checkReplicas(field: string, value: unknown): FieldIssue | undefined {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= REPLICAS_MAX
    ? undefined
    : fieldIssue(field, value, `an integer from 0 to ${REPLICAS_MAX}`);
}

/**
 * A limit must not be below its request. `limit`/`request` are parsed values; `limitInput` is what
 * the user wrote, shown in the message.
 */
export function checkLimitAtLeastRequest(
  limitField: string,
  limit: number | undefined,
  limitInput: unknown,
  requestField: string,
  request: number | undefined,
  requestInput: unknown,
): FieldIssue | undefined {
  if (limit === undefined || request === undefined || limit >= request) return undefined;
  return fieldIssue(limitField, limitInput, `at least ${requestField} (${String(requestInput)})`);
}

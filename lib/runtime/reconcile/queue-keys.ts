/**
 * The controller's typed work-queue keys: one kind per reconciler. The work queue deduplicates on
 * strings, so each key has one string form, {@link encodeKey}, and {@link parseKey} reads it back.
 */
import { workloadCacheKey } from '../shared/caches';

/** A Node, reconciled into its xgn taint, GPUNode and GPU objects. */
export interface NodeKey {
  readonly kind: 'node';
  readonly name: string;
}
/** A GPUPool, whose status is reconciled. */
export interface PoolKey {
  readonly kind: 'pool';
  readonly name: string;
}
/** A TensorFusionWorkload (possibly still to be generated from its pods), whose status is reconciled. */
export interface WorkloadKey {
  readonly kind: 'workload';
  readonly namespace: string;
  readonly name: string;
}

/** A GPUResourceQuota, whose status (usage) is reconciled. */
export interface QuotaKey {
  readonly kind: 'quota';
  readonly namespace: string;
  readonly name: string;
}

/** A GPUPool that grows, whose placeholder pods are reconciled (growth.ts). */
export interface GrowthKey {
  readonly kind: 'growth';
  readonly name: string;
}

export type ControllerKey = NodeKey | PoolKey | WorkloadKey | QuotaKey | GrowthKey;
/** The reconcilers, by the kind of key they take (also the `controller` label of the metrics). */
export type ControllerKind = ControllerKey['kind'];

export const nodeKey = (name: string): NodeKey => ({ kind: 'node', name });
export const poolKey = (name: string): PoolKey => ({ kind: 'pool', name });
export const workloadKey = (namespace: string, name: string): WorkloadKey => ({ kind: 'workload', namespace, name });
export const growthKey = (name: string): GrowthKey => ({ kind: 'growth', name });
export const quotaKey = (namespace: string, name: string): QuotaKey => ({ kind: 'quota', namespace, name });

/** The cache key of a workload (`namespace/name`), from the caches that index by it. */
export { workloadCacheKey };

/** The queue's string: `node/<name>`, `pool/<name>`, `growth/<name>`, `workload/<namespace>/<name>`, `quota/<namespace>/<name>`. */
export function encodeKey(key: ControllerKey): string {
  return key.kind === 'workload' || key.kind === 'quota' ? `${key.kind}/${workloadCacheKey(key)}` : `${key.kind}/${key.name}`;
}

/** The key a queue string encodes, or undefined when it encodes none. */
export function parseKey(s: string): ControllerKey | undefined {
  const slash = s.indexOf('/');
  const kind = s.slice(0, slash);
  const rest = s.slice(slash + 1);
  if (slash < 0 || !rest) return undefined;
  if (kind === 'node') return nodeKey(rest);
  if (kind === 'pool') return poolKey(rest);
  if (kind === 'growth') return growthKey(rest);
  if (kind !== 'workload' && kind !== 'quota') return undefined;
  const sep = rest.indexOf('/');
  if (sep <= 0 || sep >= rest.length - 1) return undefined;
  return (kind === 'workload' ? workloadKey : quotaKey)(rest.slice(0, sep), rest.slice(sep + 1));
}

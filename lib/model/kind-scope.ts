/**
 * Where each of our tensor-fusion.ai/v1 kinds lives. Kept apart from the kind registry
 * (lib/api/kinds.ts, which adds the schemas) so that the controller bundle can know a kind's scope
 * without carrying every schema; test/model/kind-scope.test.ts checks that the two agree.
 */
import { CLUSTER_SCOPED_KINDS, type Scope } from '../k8s/scope';
import { API_VERSION } from './group';

export const KIND_SCOPES = {
  GPUPool: 'Cluster',
  GPUNode: 'Cluster',
  GPU: 'Cluster',
  TensorFusionWorkload: 'Namespaced',
  WorkloadProfile: 'Namespaced',
  GPUResourceQuota: 'Namespaced',
} as const satisfies Record<string, Scope>;

/**
 * Whether an object of this apiVersion and kind is cluster-scoped: built-in kinds from lib/k8s/scope.ts,
 * ours from {@link KIND_SCOPES}, so neither list is written twice.
 */
export function isClusterScoped(apiVersion: string, kind: string): boolean {
  if (apiVersion !== API_VERSION) return CLUSTER_SCOPED_KINDS.has(kind);
  return Object.hasOwn(KIND_SCOPES, kind) && KIND_SCOPES[kind as keyof typeof KIND_SCOPES] === 'Cluster';
}

/**
 * The scope of any kind the package renders or the runtime addresses: built-in kinds from
 * lib/k8s/scope.ts, ours from lib/model/kinds.ts, so neither list is written twice.
 */
import { CLUSTER_SCOPED_KINDS } from './k8s/scope';
import { API_VERSION } from './model/group';
import { KIND_SCOPES } from './model/kinds';

export { CLUSTER_SCOPED_KINDS };

/** Whether an object of this apiVersion and kind is cluster-scoped. */
export function isClusterScoped(apiVersion: string, kind: string): boolean {
  if (apiVersion !== API_VERSION) return CLUSTER_SCOPED_KINDS.has(kind);
  return Object.hasOwn(KIND_SCOPES, kind) && KIND_SCOPES[kind as keyof typeof KIND_SCOPES] === 'Cluster';
}

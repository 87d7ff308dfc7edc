/**
 * The scope of any kind the package renders: built-in kinds from lib/k8s/scope.ts, ours from the kind
 * registry (lib/api/kinds.ts), so neither list is written twice.
 */
import { KINDS, KindName } from './api/kinds';
import { CLUSTER_SCOPED_KINDS } from './k8s/scope';
import { API_VERSION } from './model/group';

export { CLUSTER_SCOPED_KINDS };

/** Whether an object of this apiVersion and kind is cluster-scoped. */
export function isClusterScoped(apiVersion: string, kind: string): boolean {
  if (apiVersion !== API_VERSION) return CLUSTER_SCOPED_KINDS.has(kind);
  return Object.hasOwn(KINDS, kind) && KINDS[kind as KindName].scope === 'Cluster';
}

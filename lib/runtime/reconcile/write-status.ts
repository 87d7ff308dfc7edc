/** Status writes shared by the reconcilers. */
import { Cluster, K8sObject, isNotFound, updateWithRetry } from '../kube/cluster';
import type { ResourceType } from '../kube/resources';

/**
 * Writes `.status` through /status when it differs, retrying 409s from a fresh read; a deleted object
 * is left alone. `keep` names status fields another writer owns (a GPU's conditions are the node
 * agent's): they are carried over from the object as read.
 */
export async function writeStatus(
  w: Cluster,
  rt: ResourceType,
  cached: K8sObject,
  status: Record<string, unknown>,
  keep: readonly string[] = [],
): Promise<void> {
  const ref = { namespace: cached.metadata.namespace, name: cached.metadata.name! };
  const withKept = (cur: K8sObject) => {
    const have = (cur.status ?? {}) as Record<string, unknown>;
    return { ...status, ...Object.fromEntries(keep.filter((k) => have[k] !== undefined).map((k) => [k, have[k]])) };
  };
  try {
    await updateWithRetry(
      w,
      rt,
      ref,
      (cur) => {
        const next = withKept(cur);
        return JSON.stringify(cur.status) === JSON.stringify(next) ? undefined : { ...cur, status: next };
      },
      (next) => w.replaceStatus(rt, next),
      { cached },
    );
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

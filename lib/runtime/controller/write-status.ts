/** Status writes shared by the reconcilers. */
import { Cluster, K8sObject, isNotFound, updateWithRetry } from '../kube/cluster';
import type { ResourceType } from '../kube/resources';

/** Writes `.status` through /status when it differs, retrying 409s from a fresh read; a deleted object is left alone. */
export async function writeStatus(w: Cluster, rt: ResourceType, cached: K8sObject, status: unknown): Promise<void> {
  const want = JSON.stringify(status);
  const ref = { namespace: cached.metadata.namespace, name: cached.metadata.name! };
  try {
    await updateWithRetry(w, rt, ref,
      (cur) => (JSON.stringify(cur.status) === want ? undefined : { ...cur, status }),
      (next) => w.replaceStatus(rt, next), { cached });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

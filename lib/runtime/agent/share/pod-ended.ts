/**
 * When a pod's share is over: the pod finished (Succeeded, Failed), or it is being deleted and none
 * of its containers runs any more. Not at `deletionTimestamp`: a container's SIGTERM handler (a
 * training job saving its checkpoint from GPU memory) still uses the GPU through its grace period.
 * A pod gone from the API is over too; its caller sees that by its absence.
 */
import type { K8sObject } from '../../kube/cluster';

interface ContainerStatus {
  state?: { running?: unknown; waiting?: unknown; terminated?: unknown };
}

export function podEnded(p: K8sObject): boolean {
  const status = (p.status ?? {}) as { phase?: string; containerStatuses?: ContainerStatus[]; initContainerStatuses?: ContainerStatus[] };
  if (status.phase === 'Succeeded' || status.phase === 'Failed') return true;
  if (!p.metadata.deletionTimestamp) return false;
  return ![...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].some((c) => c.state?.running !== undefined);
}

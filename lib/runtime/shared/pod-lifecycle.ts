/**
 * Where a pod is in its life, in the terms the runtime's decisions use. A terminating pod still runs
 * (its processes use the GPU until they are gone), so only a terminal phase ends what it holds.
 */
import type { K8sObject } from '../kube/cluster';

/** Succeeded or Failed: the pod runs nothing any more. */
export function isTerminal(pod: K8sObject): boolean {
  const phase = (pod.status as { phase?: string } | undefined)?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** Neither terminating nor finished. */
export function isActivePod(pod: K8sObject): boolean {
  return !pod.metadata.deletionTimestamp && !isTerminal(pod);
}

/** The node the pod is bound to, if any. */
export function boundNode(pod: K8sObject): string | undefined {
  return (pod.spec as { nodeName?: string } | undefined)?.nodeName || undefined;
}

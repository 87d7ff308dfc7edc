/**
 * A bound DRA pod's share as an allocation record would state it: the GPUs its claim holds, with what
 * the claim consumed of each as the requests (kube-scheduler rounds a request up to the GPU's request
 * policy, and that is what the GPU no longer offers) and the share record's limits (what its MPS
 * daemon gets). The pool view (`kubectl tf top`, the web view) and `kubectl tf plan` show DRA shares
 * through it beside the extender's records.
 */
import type { Allocation } from '../../../allocator';
import type { K8sObject } from '../../kube/cluster';
import { boundNode, isTerminal } from '../pod-lifecycle';
import { podRequests } from '../pod-requests';
import { claimGpus, claimPodUid, HeldGpu, ResourceClaim } from './claim-results';
import { draShareOf } from './pod-claim';

/** The GPUs the claims hold, by the UID of the pod each claim belongs to. */
export function heldByPod(claims: Iterable<ResourceClaim>): Map<string, HeldGpu[]> {
  const out = new Map<string, HeldGpu[]>();
  for (const c of claims) {
    const uid = claimPodUid(c);
    const gpus = claimGpus(c);
    if (uid && gpus.length) out.set(uid, [...(out.get(uid) ?? []), ...gpus]);
  }
  return out;
}

/**
 * The allocation of a bound, unfinished DRA pod whose claim is allocated (`held`: its entry of
 * {@link heldByPod}); undefined for any other pod. Per-GPU amounts are the first GPU's: the one request
 * of a claim consumes the same of every GPU it gets.
 */
export function claimAllocationOf(pod: K8sObject, held: readonly HeldGpu[] | undefined): Allocation | undefined {
  const share = draShareOf(pod);
  const node = boundNode(pod);
  const uid = pod.metadata.uid;
  if (!share || !node || !uid || isTerminal(pod) || !held?.length) return undefined;
  const gpus = held.filter((g) => g.node === node).sort((a, b) => a.index - b.index);
  if (gpus.length === 0) return undefined;
  const { cpu, memory } = podRequests(pod);
  return {
    id: uid,
    pool: share.pool,
    node,
    gpuIds: gpus.map((g) => g.gpu),
    tflopsRequest: gpus[0].tflops,
    tflopsLimit: share.tflopsLimit,
    vramRequest: gpus[0].vram,
    vramLimit: share.vramLimit,
    cpu,
    memory,
    qos: share.qos,
  };
}

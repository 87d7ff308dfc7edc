/**
 * Whether a pod's share is delivered by DRA: the webhook gave it the claim {@link DRA_POD_CLAIM} from a
 * ResourceClaimTemplate (lib/runtime/webhook/admit.ts). Its GPU is then chosen by kube-scheduler's
 * allocator and recorded in the claim's status, not by our extender in the pod's annotations.
 */
import { DRA_POD_CLAIM } from '../../../model/dra';
import type { K8sObject } from '../../kube/cluster';
import { ShareRequest, shareOf } from '../share';

/** True when the pod names our claim in `spec.resourceClaims`. */
export function hasDraClaim(pod: K8sObject): boolean {
  const claims = (pod.spec as { resourceClaims?: unknown } | undefined)?.resourceClaims;
  return Array.isArray(claims) && claims.some((c) => (c as { name?: unknown } | null)?.name === DRA_POD_CLAIM);
}

/** The share recorded on an opted-in pod whose share DRA delivers; undefined for any other pod. */
export function draShareOf(pod: K8sObject): ShareRequest | undefined {
  return hasDraClaim(pod) ? shareOf(pod) : undefined;
}

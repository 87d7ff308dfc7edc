/** A pod's ResourceClaim as kube-controller-manager makes it and kube-scheduler allocates it. */
import type { K8sObject } from '../../lib/runtime/kube/cluster';

export interface ClaimOf {
  name: string;
  namespace: string;
  /** The pod it belongs to (its owner). */
  pod: { name: string; uid: string };
  /** Where it is allocated: our driver's device `gpu-<index>` of `node`, `consumed` of it; none: not allocated. */
  at?: { node: string; index: number; consumed: Record<string, string>; shareID?: string };
  /** Also reserved for its pod. @default false */
  reserved?: boolean;
}

export function allocatedClaim(c: ClaimOf): K8sObject {
  const { name, uid } = c.pod;
  const result = c.at && {
    request: 'gpu',
    driver: 'gpu.tensor-fusion.ai',
    pool: c.at.node,
    device: `gpu-${c.at.index}`,
    ...(c.at.shareID !== undefined ? { shareID: c.at.shareID } : {}),
    consumedCapacity: c.at.consumed,
  };
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name: c.name, namespace: c.namespace, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name, uid, controller: true }] },
    status: {
      ...(result ? { allocation: { devices: { results: [result] } } } : {}),
      ...(c.reserved ? { reservedFor: [{ resource: 'pods', name, uid }] } : {}),
    },
  };
}

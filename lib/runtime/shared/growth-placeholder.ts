/**
 * The placeholder pod that asks a node autoscaler for one new GPU node of a pool (docs/growth.md):
 * whole GPUs through the resource the pool's new nodes advertise, the CPU and memory of the shares it
 * stands for, the pool's node selector, at a priority below every pod. It never holds a node alive:
 * nothing marks it do-not-disrupt, cluster-autoscaler may evict it, and it is owned by the shares it
 * stands for (so it goes with the last of them, even without the controller).
 */
import type { NodeSelector } from '../../api';
import { GROWTH_PLACEHOLDER_IMAGE, GROWTH_PRIORITY_CLASS } from '../../contract/object-names';
import { GROWTH_POOL_LABEL } from '../../model/metadata-keys';
import type { K8sObject } from '../kube/cluster';
import { fnv1a } from './fnv1a';
import type { NodeAsk } from './growth-plan';

/** cluster-autoscaler moves or removes a node's pods only if each may be evicted; a placeholder may. */
export const SAFE_TO_EVICT_ANNOTATION = 'cluster-autoscaler.kubernetes.io/safe-to-evict';

/**
 * The placeholder's name: the pool and its first share's UID, so that a pass that runs before the
 * cache shows the last one's placeholder makes the same name (refused as existing), not a second node.
 */
export function placeholderName(pool: string, ask: NodeAsk): string {
  const hex = (fnv1a(ask.pods[0].uid) >>> 0).toString(16).padStart(8, '0');
  return `tf-growth-${pool}-${hex}`;
}

/** The pool a placeholder asks for, if the pod is one. */
export function placeholderPool(pod: K8sObject): string | undefined {
  return pod.metadata.labels?.[GROWTH_POOL_LABEL];
}

/** The UIDs of the shares a placeholder stands for: its owners. */
export function placeholderShares(pod: K8sObject): string[] {
  return (pod.metadata.ownerReferences ?? []).filter((r) => r.kind === 'Pod').map((r) => r.uid as string);
}

/** The whole GPUs a placeholder asks for (its one container's limit of the growth resource). */
export function placeholderGpus(pod: K8sObject): number {
  const limits = (pod.spec as { containers?: { resources?: { limits?: Record<string, string> } }[] } | undefined)?.containers?.[0]
    ?.resources?.limits;
  const [value] = Object.entries(limits ?? {}).map(([, v]) => Number(v));
  return Number.isInteger(value) && value > 0 ? value : 0;
}

/** The placeholder for `ask`, in the namespace of its shares (owners must be in the same namespace). */
export function placeholderPod(
  pool: { name: string; nodeSelector?: NodeSelector },
  resource: string,
  ask: NodeAsk,
): K8sObject & { spec: Record<string, unknown> } {
  const gpus = String(ask.gpus);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: placeholderName(pool.name, ask),
      namespace: ask.pods[0].namespace,
      labels: { [GROWTH_POOL_LABEL]: pool.name },
      annotations: { [SAFE_TO_EVICT_ANNOTATION]: 'true' },
      ownerReferences: ask.pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', name: p.name, uid: p.uid })),
    },
    spec: {
      priorityClassName: GROWTH_PRIORITY_CLASS.name,
      terminationGracePeriodSeconds: 0,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      ...(pool.nodeSelector ? { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: pool.nodeSelector } } } : {}),
      // GPU node groups are commonly tainted with the GPU resource's name (EKS, GKE, AKS).
      tolerations: [{ key: resource, operator: 'Exists', effect: 'NoSchedule' }],
      containers: [
        {
          name: 'placeholder',
          image: GROWTH_PLACEHOLDER_IMAGE,
          resources: {
            requests: { cpu: `${Math.max(1, ask.cpu)}m`, memory: String(ask.memory), [resource]: gpus },
            limits: { [resource]: gpus },
          },
        },
      ],
    },
  };
}

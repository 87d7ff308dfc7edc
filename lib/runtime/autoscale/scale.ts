/**
 * The owner a workload's replicas are scaled through: a Deployment or StatefulSet, read and written
 * through its `/scale` subresource (what `kubectl scale` and the HPA use), and the check that no
 * HorizontalPodAutoscaler already targets it (two autoscalers on one owner fight).
 */
import type { Cluster, K8sObject } from '../kube/cluster';
import { ResourceType, resourceType } from '../kube/resources';

const apps = (plural: string, kind: string) => resourceType('apps/v1', plural, kind, { statusSubresource: true });

/** Owners whose replicas can be scaled, by `apiVersion kind` of the owner reference. */
export const SCALABLE_OWNERS: ReadonlyMap<string, ResourceType> = new Map([
  ['apps/v1 Deployment', apps('deployments', 'Deployment')],
  ['apps/v1 StatefulSet', apps('statefulsets', 'StatefulSet')],
]);

export const HPA_RESOURCE: ResourceType = resourceType('autoscaling/v2', 'horizontalpodautoscalers', 'HorizontalPodAutoscaler', {
  statusSubresource: true,
});

export interface ScaleTarget {
  readonly resource: ResourceType;
  readonly namespace: string;
  readonly name: string;
  readonly kind: string;
}

/** The controller owner of a workload when it can be scaled (generated workloads are owned by the pods' top owner). */
export function scaleTargetOf(workload: K8sObject): ScaleTarget | undefined {
  for (const ref of (workload.metadata.ownerReferences ?? []) as Array<{ apiVersion?: string; kind?: string; name?: string }>) {
    const resource = SCALABLE_OWNERS.get(`${ref.apiVersion} ${ref.kind}`);
    if (resource && ref.name) return { resource, namespace: workload.metadata.namespace ?? 'default', name: ref.name, kind: ref.kind! };
  }
  return undefined;
}

/** The HPA that targets `target`, if any. */
export async function hpaFor(cluster: Pick<Cluster, 'list'>, target: ScaleTarget): Promise<K8sObject | undefined> {
  const hpas = await cluster.list(HPA_RESOURCE, { namespace: target.namespace });
  return hpas.items.find((h) => {
    const ref = (h.spec as { scaleTargetRef?: { kind?: string; name?: string } } | undefined)?.scaleTargetRef;
    return ref?.kind === target.kind && ref?.name === target.name;
  });
}

/** Reads `spec.replicas` of the owner and writes it through the `/scale` subresource. */
export interface ScaleClient {
  getReplicas(target: ScaleTarget): Promise<number | undefined>;
  setReplicas(target: ScaleTarget, replicas: number): Promise<void>;
}

export function scaleClient(cluster: Cluster): ScaleClient {
  return {
    async getReplicas(t) {
      const owner = await cluster.get<K8sObject & { spec?: { replicas?: number } }>(t.resource, { namespace: t.namespace, name: t.name });
      return owner?.spec?.replicas;
    },
    async setReplicas(t, replicas) {
      await cluster.mergePatch(t.resource, { namespace: t.namespace, name: t.name }, { spec: { replicas } }, 'scale');
    },
  };
}

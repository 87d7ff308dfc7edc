/**
 * The objects `kubectl tf` reads: listed from the cluster through the user's kubeconfig, or made from
 * manifests (lib/runtime/cli/manifests.ts), and served to the runtime's own readers (the extender's
 * placement state, the pool view) as caches that never change.
 */
import type { GPU, GPUNode, GPUPool, GPUResourceQuota, TensorFusionWorkload, WorkloadProfile } from '../../api';
import { Cluster, isNotFound, K8sObject } from '../kube/cluster';
import type { InformerHandlers } from '../kube/informer';
import { keyOf, RESOURCES } from '../kube/resources';
import { PlacementState } from '../extender/placement-state';
import { INDEX_BY_NAMESPACE, INDEX_BY_NODE, INDEX_BY_OWNER, ReadCaches } from '../shared/caches';
import { managedBy } from '../shared/managed-by';
import type { NodeLike, PodLike } from '../shared/capacity';
import { claimNodes } from '../shared/dra/claim-results';

/** Every kind the plugin reads, as lists. */
export interface ClusterObjects {
  readonly nodes: readonly NodeLike[];
  readonly pods: readonly PodLike[];
  readonly pools: readonly (GPUPool & K8sObject)[];
  readonly gpuNodes: readonly (GPUNode & K8sObject)[];
  readonly gpus: readonly (GPU & K8sObject)[];
  readonly workloads: readonly (TensorFusionWorkload & K8sObject)[];
  readonly profiles: readonly (WorkloadProfile & K8sObject)[];
  readonly quotas: readonly (GPUResourceQuota & K8sObject)[];
  /** DRA ResourceSlices and ResourceClaims (none where the cluster serves no resource.k8s.io/v1). */
  readonly slices?: readonly K8sObject[];
  readonly claims?: readonly K8sObject[];
}

/** Lists every kind at once; a kind whose CRD is missing reads as empty (a cluster without quotas yet). */
export async function readCluster(cluster: Pick<Cluster, 'list'>): Promise<ClusterObjects> {
  const list = async <T extends K8sObject>(rt: (typeof RESOURCES)[keyof typeof RESOURCES], optional = false): Promise<T[]> => {
    try {
      return (await cluster.list<T>(rt)).items;
    } catch (err) {
      if (optional && isNotFound(err)) return [];
      throw err;
    }
  };
  const [nodes, pods, pools, gpuNodes, gpus, workloads, profiles, quotas, slices, claims] = await Promise.all([
    list<NodeLike>(RESOURCES.nodes),
    list<PodLike>(RESOURCES.pods),
    list<GPUPool & K8sObject>(RESOURCES.gpupools),
    list<GPUNode & K8sObject>(RESOURCES.gpunodes),
    list<GPU & K8sObject>(RESOURCES.gpus),
    list<TensorFusionWorkload & K8sObject>(RESOURCES.tensorfusionworkloads),
    list<WorkloadProfile & K8sObject>(RESOURCES.workloadprofiles),
    list<GPUResourceQuota & K8sObject>(RESOURCES.gpuresourcequotas, true),
    list<K8sObject>(RESOURCES.resourceslices, true),
    list<K8sObject>(RESOURCES.resourceclaims, true),
  ]);
  return { nodes, pods, pools, gpuNodes, gpus, workloads, profiles, quotas, slices, claims };
}

/** A cache over a fixed list: the reads of an informer that has synced and sees no change. */
export interface FixedCache<T extends K8sObject> {
  get(key: string): T | undefined;
  list(): T[];
  byIndex(index: string, value: string): T[];
  on(handlers: InformerHandlers<T>): unknown;
  hasSynced(): boolean;
}

function fixedCache<T extends K8sObject>(items: readonly T[], indexes: Record<string, (o: T) => string[]> = {}): FixedCache<T> {
  const byKey = new Map(items.map((o) => [keyOf(o.metadata), o]));
  const built = new Map<string, Map<string, T[]>>();
  const index = (name: string) => {
    let m = built.get(name);
    if (!m) {
      m = new Map();
      for (const o of items) for (const v of indexes[name]?.(o) ?? []) m.set(v, [...(m.get(v) ?? []), o]);
      built.set(name, m);
    }
    return m;
  };
  return {
    get: (key) => byKey.get(key),
    list: () => [...items],
    byIndex: (name, value) => index(name).get(value) ?? [],
    on: () => undefined,
    hasSynced: () => true,
  };
}

/** The objects as the runtime's caches, with the indexes the controller's caches have (shared/caches.ts). */
export type FixedCaches = { readonly [C in keyof ReadCaches]: ReadCaches[C] & FixedCache<ReturnType<ReadCaches[C]['list']>[number]> };

export function fixedCaches(o: ClusterObjects): FixedCaches {
  return {
    nodes: fixedCache(o.nodes),
    pods: fixedCache(o.pods, {
      [INDEX_BY_NODE]: (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []),
      [INDEX_BY_NAMESPACE]: (p) => [p.metadata.namespace ?? ''],
    }),
    pools: fixedCache(o.pools),
    gpuNodes: fixedCache(o.gpuNodes, { [INDEX_BY_OWNER]: managedBy }),
    gpus: fixedCache(o.gpus, { [INDEX_BY_OWNER]: managedBy }),
    workloads: fixedCache(o.workloads),
    profiles: fixedCache(o.profiles),
    quotas: fixedCache(o.quotas),
    claims: fixedCache(o.claims ?? [], { [INDEX_BY_NODE]: claimNodes }),
  };
}

/** The scheduler extender's placement state over the objects: its GPUs, pools, held shares, CPU and memory. */
export function placementStateOf(caches: FixedCaches): PlacementState {
  const state = new PlacementState({ sources: caches });
  state.resetFromCaches();
  return state;
}

/**
 * The controller's informer caches (every replica keeps them warm) with the indexes the reconcilers
 * and their watches read.
 */
import type { GPU, GPUNode, GPUPool, GPUResourceQuota, TensorFusionWorkload, WorkloadProfile } from '../../api';
import { ANNOTATION_PREFIX, WORKLOAD_LABEL } from '../../model/metadata-keys';
import type { Cluster, K8sObject } from '../kube/cluster';
import type { Clock } from '../kube/clock';
import { Informer, InformerOptions } from '../kube/informer';
import { RESOURCES, ResourceType } from '../kube/resources';
import type { RuntimeMetrics } from './metrics';
import type { Logger } from 'pino';
import { podRequests, requestsAsContainer } from './pod-requests';
import { slimOomStatuses } from './oom';
import type { NodeLike, PodLike } from './capacity';
import { placeholderPool } from './growth-placeholder';
import { shareOf } from './share';
import { claimNodes, ResourceClaim, slimClaim } from './dra/claim-results';
import { managedBy } from './managed-by';

/** The cache key of a workload, `namespace/name` (also the value of the pods' workload index). */
export function workloadCacheKey(key: { readonly namespace: string; readonly name: string }): string {
  return `${key.namespace}/${key.name}`;
}

/** Index of the pods cache: the name of the node a pod is bound to (of the claims cache: the nodes of its GPUs). */
export const INDEX_BY_NODE = 'nodeName';
/** Index of the pods cache: `namespace/workload` of the pods labelled with a workload. */
export const INDEX_BY_WORKLOAD = 'workload';
/** Index of the GPUNode and GPU caches: the owner each belongs to (pool, node; shared/managed-by.ts). */
export const INDEX_BY_OWNER = 'managedBy';
/** Pods by namespace (what a namespace's quotas count). */
export const INDEX_BY_NAMESPACE = 'namespace';
/** Pods not bound yet that hold a share, by the share's pool (what a pool's growth counts). */
export const INDEX_UNBOUND_BY_POOL = 'unboundByPool';
/** Growth placeholder pods, by the pool they ask for (shared/growth-placeholder.ts). */
export const INDEX_PLACEHOLDER_BY_POOL = 'placeholderByPool';

export interface Caches {
  readonly nodes: Informer<NodeLike>;
  /** Only what the reconcilers read of each pod ({@link slimPod}). */
  readonly pods: Informer<PodLike>;
  readonly pools: Informer<GPUPool & K8sObject>;
  readonly gpuNodes: Informer<GPUNode & K8sObject>;
  readonly gpus: Informer<GPU & K8sObject>;
  readonly workloads: Informer<TensorFusionWorkload & K8sObject>;
  /** Read to resolve pods whose generated workload names a profile (and by the webhook). */
  readonly profiles: Informer<WorkloadProfile & K8sObject>;
  /** Namespace GPU quotas: the extender enforces them, the quota reconciler reports their usage. */
  readonly quotas: Informer<GPUResourceQuota & K8sObject>;
  /**
   * DRA ResourceClaims, slimmed to our driver's results ({@link slimClaim}): what DRA pools' shares
   * hold. Started only where the install has `dra` (the cluster serves resource.k8s.io/v1 and the
   * controller may read claims); elsewhere it stays empty and out of readiness.
   */
  readonly claims: Informer<ResourceClaim>;
}

export type CacheName = keyof Caches;
/** The object type a cache holds. */
export type CachedObject<C extends CacheName> = Caches[C] extends Informer<infer T> ? T : never;
/** The read side of a cache: what reconcilers and watch mappings use. */
export type Cache<T extends K8sObject> = Pick<Informer<T>, 'get' | 'list' | 'byIndex'>;
export type ReadCaches = { readonly [C in CacheName]: Cache<CachedObject<C>> };

export const CACHE_NAMES: readonly CacheName[] = [
  'nodes',
  'pods',
  'pools',
  'gpuNodes',
  'gpus',
  'workloads',
  'profiles',
  'quotas',
  'claims',
];

export interface CacheOptions {
  clock: Clock;
  metrics?: RuntimeMetrics;
  logger?: Logger;
  /** Overrides for every informer (short timings in tests). */
  informer?: Partial<InformerOptions<K8sObject>>;
}

/** The informers, not yet started, reading through `cluster`. */
export function createCaches(cluster: Cluster, opts: CacheOptions): Caches {
  const inf = <T extends K8sObject>(rt: ResourceType, extra: Partial<InformerOptions<T>> = {}) =>
    new Informer<T>(cluster, rt, {
      clock: opts.clock,
      metrics: opts.metrics,
      logger: opts.logger,
      ...(opts.informer as Partial<InformerOptions<T>>),
      ...extra,
    });
  return {
    nodes: inf<NodeLike>(RESOURCES.nodes),
    // Only pods the controller cares about are cached: GPU-share holders and workload workers.
    pods: inf<PodLike>(RESOURCES.pods, { transform: slimPod })
      .addIndex(INDEX_BY_NODE, (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []))
      .addIndex(INDEX_BY_NAMESPACE, (p) => [p.metadata.namespace ?? ''])
      .addIndex(INDEX_UNBOUND_BY_POOL, (p) => {
        const pool = !p.spec?.nodeName && !p.metadata.deletionTimestamp ? shareOf(p)?.pool : undefined;
        return pool === undefined ? [] : [pool];
      })
      .addIndex(INDEX_PLACEHOLDER_BY_POOL, (p) => {
        const pool = placeholderPool(p);
        return pool === undefined ? [] : [pool];
      })
      .addIndex(INDEX_BY_WORKLOAD, (p) => {
        const w = p.metadata.labels?.[WORKLOAD_LABEL];
        return w ? [workloadCacheKey({ namespace: p.metadata.namespace!, name: w })] : [];
      }),
    pools: inf(RESOURCES.gpupools),
    gpuNodes: inf<GPUNode & K8sObject>(RESOURCES.gpunodes).addIndex(INDEX_BY_OWNER, managedBy),
    gpus: inf<GPU & K8sObject>(RESOURCES.gpus).addIndex(INDEX_BY_OWNER, managedBy),
    workloads: inf(RESOURCES.tensorfusionworkloads),
    profiles: inf(RESOURCES.workloadprofiles),
    quotas: inf(RESOURCES.gpuresourcequotas),
    claims: inf<ResourceClaim>(RESOURCES.resourceclaims, { transform: slimClaim }).addIndex(INDEX_BY_NODE, claimNodes),
  };
}

/**
 * Keeps only what the reconcilers read from a pod: identity, labels, our annotations, node, phase and
 * conditions (with words only for a PodScheduled=False). Container specs dominate a pod's size, so this
 * is most of the cache's memory saving.
 */
export function slimPod(pod: PodLike): PodLike {
  const m = pod.metadata;
  const annotations = m.annotations
    ? Object.fromEntries(Object.entries(m.annotations).filter(([k]) => k.startsWith(ANNOTATION_PREFIX)))
    : undefined;
  return {
    apiVersion: pod.apiVersion,
    kind: pod.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      labels: m.labels,
      annotations,
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      // The generated workload's owner is the pod's top owner (controller/top-owner.ts).
      ownerReferences: m.ownerReferences,
    },
    // Requests as totals, for the scheduler extender's CPU and memory accounting.
    spec: {
      nodeName: pod.spec?.nodeName,
      containers: [requestsAsContainer(podRequests(pod))],
      // A DRA pool's pod names its claim here (lib/runtime/shared/dra/pod-claim.ts).
      ...(pod.spec?.resourceClaims ? { resourceClaims: pod.spec.resourceClaims } : {}),
    },
    // OOM kills (lastState only) feed autoscaling's VRAM bump (lib/runtime/shared/oom.ts).
    status: {
      phase: pod.status?.phase,
      // Why the scheduler has not placed it yet: the web view's pending list shows it.
      conditions: pod.status?.conditions?.map((c) =>
        c.type === 'PodScheduled' && c.status === 'False'
          ? { type: c.type, status: c.status, reason: c.reason, message: c.message }
          : { type: c.type, status: c.status },
      ),
      ...slimOomStatuses(pod),
    },
  };
}

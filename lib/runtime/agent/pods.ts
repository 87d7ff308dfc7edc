/**
 * Names pods of this node by UID, from a LIST of the node's pods (field selector spec.nodeName) that
 * is refreshed when an unknown UID or container id shows up (at most every `minRefreshMs`). A LIST
 * per refresh rather than an informer: the agent only needs names, and a GPU process of a new pod is
 * rare.
 */
import type { Cluster, K8sObject } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';
import { PLACEMENT_ANNOTATIONS } from '../../model/metadata-keys';
import type { PodResolver, ResolvedPod } from './collector';

interface Named {
  namespace: string;
  pod: string;
  containers: Map<string, string>;
  /** The pod's `tensor-fusion.ai/mps-thread-percentage` (its compute cap per GPU), when it holds a share. */
  threadPercentage?: number;
}

/** The id part of a containerStatuses[].containerID (`containerd://<id>` -> `<id>`). */
export function containerIdOf(containerID: string | undefined): string | undefined {
  return containerID?.split('://').pop() || undefined;
}

/** Builds the UID index from pod objects (exported for tests). */
export function indexPods(pods: K8sObject[]): Map<string, Named> {
  const out = new Map<string, Named>();
  for (const p of pods) {
    const status = (p.status ?? {}) as {
      containerStatuses?: { name: string; containerID?: string }[];
      initContainerStatuses?: { name: string; containerID?: string }[];
    };
    const containers = new Map<string, string>();
    for (const c of [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])]) {
      const id = containerIdOf(c.containerID);
      if (id) containers.set(id, c.name);
    }
    const percent = Number(p.metadata.annotations?.[PLACEMENT_ANNOTATIONS.mpsThreadPercentage]);
    if (p.metadata.uid) {
      out.set(p.metadata.uid, {
        namespace: p.metadata.namespace ?? '',
        pod: p.metadata.name ?? '',
        containers,
        ...(percent > 0 && percent <= 100 ? { threadPercentage: percent } : {}),
      });
    }
  }
  return out;
}

export class NodePodResolver implements PodResolver {
  private index = new Map<string, Named>();
  private lastRefresh = 0;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly cluster: Cluster,
    private readonly nodeName: string,
    private readonly minRefreshMs = 5_000,
    private readonly log?: (msg: string, fields?: Record<string, unknown>) => void,
  ) {}

  async refresh(): Promise<void> {
    this.refreshing ??= this.cluster
      .list(RESOURCES.pods, { fieldSelector: `spec.nodeName=${this.nodeName}` })
      .then((list) => {
        this.index = indexPods(list.items);
        this.lastRefresh = Date.now();
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  resolve(podUid: string, containerId?: string): ResolvedPod | undefined {
    const hit = this.index.get(podUid);
    const container = hit && containerId ? hit.containers.get(containerId) : undefined;
    // A container unknown to a known pod: listed before the kubelet reported its id, or restarted
    // since (a new id). Both are seen on a real node; the next list names it.
    const stale = !hit || (containerId !== undefined && container === undefined);
    // Not awaited: a scrape does not wait on the API server; the pod is named at a later one.
    if (stale && Date.now() - this.lastRefresh >= this.minRefreshMs)
      void this.refresh().catch((err) => this.log?.('listing the node pods failed; retrying on demand', { err: String(err) }));
    if (!hit) return undefined;
    return {
      namespace: hit.namespace,
      pod: hit.pod,
      container,
      ...(hit.threadPercentage ? { threadPercentage: hit.threadPercentage } : {}),
    };
  }
}

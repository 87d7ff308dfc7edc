/**
 * The webhook's view of the cluster, kept by informers on every replica: GPUPools, WorkloadProfiles,
 * TensorFusionWorkloads and GPUResourceQuotas (GPUs and nodes are the scheduler extender's business now). A profile
 * missing from the cache is read live once, so a profile created a moment ago is not reported missing
 * (the pod would be refused); a missing workload is not (see `workload`).
 */
import type { GPUPool, GPUResourceQuota, TensorFusionWorkload, WorkloadProfile } from '../../api';
import { Cluster, K8sObject } from '../kube/cluster';
import { Informer, InformerOptions } from '../kube/informer';
import { RESOURCES, ResourceType } from '../kube/resources';
import type { AdmissionView } from './admit';
import type { SettingsView } from '../shared/resolve-pod';
import { cachedSettingsView } from '../shared/settings-view';

type Obj<T> = T & K8sObject;

/** The informers the view reads; pass the controller's own to share one set of watches. */
export interface ViewInformers {
  pools: Informer<Obj<GPUPool>>;
  profiles: Informer<Obj<WorkloadProfile>>;
  workloads: Informer<Obj<TensorFusionWorkload>>;
  quotas: Informer<Obj<GPUResourceQuota>>;
}

/** Creates the view's informers (not started). */
export function createViewInformers(cluster: Cluster, opts: InformerOptions<K8sObject> = {}): ViewInformers {
  const inf = <T extends K8sObject>(rt: ResourceType) => new Informer<T>(cluster, rt, opts as unknown as InformerOptions<T>);
  return {
    pools: inf(RESOURCES.gpupools),
    profiles: inf(RESOURCES.workloadprofiles),
    workloads: inf(RESOURCES.tensorfusionworkloads),
    quotas: inf(RESOURCES.gpuresourcequotas),
  };
}

export class InformerView implements AdmissionView {
  private readonly cached: SettingsView;

  constructor(
    private readonly cluster: Cluster,
    readonly informers: ViewInformers,
    readonly nodeAgent = true,
  ) {
    this.cached = cachedSettingsView(informers);
  }

  informerList(): Informer<K8sObject>[] {
    return Object.values(this.informers) as Informer<K8sObject>[];
  }

  synced(): boolean {
    return this.informerList().every((i) => i.hasSynced());
  }

  pool(name: string): GPUPool | undefined {
    return this.cached.pool(name);
  }

  poolNames(): string[] {
    return this.cached.poolNames();
  }

  defaultPool(): string | undefined {
    return this.cached.defaultPool();
  }

  async profile(namespace: string, name: string): Promise<WorkloadProfile | undefined> {
    return (
      this.informers.profiles.get(`${namespace}/${name}`) ??
      this.cluster.get<Obj<WorkloadProfile>>(RESOURCES.workloadprofiles, { namespace, name })
    );
  }

  quotas(namespace: string): GPUResourceQuota[] {
    return this.informers.quotas.list().filter((q) => q.metadata.namespace === namespace);
  }

  cachedWorkload(namespace: string, name: string): TensorFusionWorkload | undefined {
    return this.informers.workloads.get(`${namespace}/${name}`);
  }

  /**
   * The cached workload only, with no live read on a miss: a named workload that does not exist yet is
   * the common case (the controller generates it once the first pod exists), and a read per such pod
   * put an API round trip on every admission of a rollout. A workload written by hand a moment before
   * its pod may be missed by the watch; the pod is then admitted as generating it, and the controller
   * leaves the hand-written one as it is (see generated-workload.ts).
   */
  async workload(namespace: string, name: string): Promise<TensorFusionWorkload | undefined> {
    return this.cachedWorkload(namespace, name);
  }
}

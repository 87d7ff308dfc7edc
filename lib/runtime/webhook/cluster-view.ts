/**
 * The webhook's view of the cluster, kept by informers on every replica: pools, GPU nodes, GPUs,
 * nodes (for taints), WorkloadProfiles and TensorFusionWorkloads. Profiles and workloads missing
 * from the cache are read live once, so an object created a moment ago is not reported missing.
 */
import type { GPU, GPUNode, GPUPool, TensorFusionWorkload, WorkloadProfile } from '../../api';
import { DEFAULT_POOL_ANNOTATION } from '../../labels';
import type { NodeSpec, PoolConfig } from '../../scheduler';
import { Cluster, K8sObject } from '../cluster';
import { Informer, InformerOptions } from '../informer';
import { RESOURCES, ResourceType } from '../resources';
import type { AdmissionView, Taint } from './admit';
import type { PoolTopology } from './ledger';
import { gpuInfo, GpuInfo, nodePools, poolNodeSpecs } from './topology';

type Obj<T> = T & K8sObject;

/** The informers the view reads; pass the controller's own to share one set of watches. */
export interface ViewInformers {
  pools: Informer<Obj<GPUPool>>;
  gpuNodes: Informer<Obj<GPUNode>>;
  gpus: Informer<Obj<GPU>>;
  nodes: Informer<K8sObject>;
  profiles: Informer<Obj<WorkloadProfile>>;
  workloads: Informer<Obj<TensorFusionWorkload>>;
}

/** Creates the view's informers (not started). */
export function createViewInformers(cluster: Cluster, opts: InformerOptions<K8sObject> = {}): ViewInformers {
  const inf = <T extends K8sObject>(rt: ResourceType) => new Informer<T>(cluster, rt, opts as unknown as InformerOptions<T>);
  return {
    pools: inf(RESOURCES.gpupools),
    gpuNodes: inf(RESOURCES.gpunodes),
    gpus: inf(RESOURCES.gpus),
    nodes: inf(RESOURCES.nodes),
    profiles: inf(RESOURCES.workloadprofiles),
    workloads: inf(RESOURCES.tensorfusionworkloads),
  };
}

export class InformerView implements AdmissionView, PoolTopology {
  private topologyVersion = 0;
  private gpuCache?: Map<string, GpuInfo>;
  private poolCache?: Map<string, string>;

  constructor(private readonly cluster: Cluster, readonly informers: ViewInformers) {
    const bump = () => {
      this.topologyVersion++;
      this.gpuCache = undefined;
      this.poolCache = undefined;
    };
    for (const inf of [informers.pools, informers.gpuNodes, informers.gpus] as Informer<K8sObject>[]) {
      inf.on({ add: bump, update: bump, delete: bump });
    }
  }

  informerList(): Informer<K8sObject>[] {
    return Object.values(this.informers) as Informer<K8sObject>[];
  }

  synced(): boolean {
    return this.informerList().every((i) => i.hasSynced());
  }

  version(): number {
    return this.topologyVersion;
  }

  private gpuMap(): Map<string, GpuInfo> {
    if (!this.gpuCache) {
      this.gpuCache = new Map();
      for (const g of this.informers.gpus.list()) {
        const info = gpuInfo(g);
        if (info) this.gpuCache.set(info.name, info);
      }
    }
    return this.gpuCache;
  }

  nodes(pool: string): NodeSpec[] {
    this.poolCache ??= nodePools(this.informers.gpuNodes.list());
    return poolNodeSpecs(pool, this.gpuMap().values(), this.poolCache);
  }

  config(pool: string): PoolConfig {
    const spec = this.pool(pool)?.spec;
    const ratio = spec?.capacityConfig?.oversubscription?.tflopsOversellRatio;
    const mode = spec?.placement?.mode;
    return { ...(ratio !== undefined ? { tflopsOversellRatio: ratio } : {}), ...(mode !== undefined ? { placementMode: mode } : {}) };
  }

  pool(name: string): GPUPool | undefined {
    return this.informers.pools.get(name);
  }

  poolNames(): string[] {
    return this.informers.pools.list().map((p) => p.metadata.name as string).sort();
  }

  defaultPool(): string | undefined {
    return this.informers.pools.list()
      .filter((p) => p.metadata.annotations?.[DEFAULT_POOL_ANNOTATION] === 'true')
      .map((p) => p.metadata.name as string)
      .sort()[0];
  }

  async profile(namespace: string, name: string): Promise<WorkloadProfile | undefined> {
    return this.informers.profiles.get(`${namespace}/${name}`) ?? this.cluster.get<Obj<WorkloadProfile>>(RESOURCES.workloadprofiles, { namespace, name });
  }

  async workload(namespace: string, name: string): Promise<TensorFusionWorkload | undefined> {
    return this.informers.workloads.get(`${namespace}/${name}`) ?? this.cluster.get<Obj<TensorFusionWorkload>>(RESOURCES.tensorfusionworkloads, { namespace, name });
  }

  gpu(name: string): GpuInfo | undefined {
    return this.gpuMap().get(name);
  }

  nodeTaints(node: string): readonly Taint[] {
    const spec = this.informers.nodes.get(node)?.spec as { taints?: Taint[] } | undefined;
    return Array.isArray(spec?.taints) ? spec.taints.filter((t) => t && typeof t.key === 'string') : [];
  }
}

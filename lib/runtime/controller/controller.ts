/**
 * The reconciling controller: informers on the kinds it reads, one work queue of typed keys
 * (`node/<name>`, `pool/<name>`, `workload/<ns>/<name>`), and level-based reconcilers that read the
 * caches and write through a Cluster (fenced by leader election in the process).
 */
import type { Logger } from 'pino';
import type { GPU, GPUNode, GPUPool, TensorFusionWorkload, WorkloadProfile } from '../../api';
import { ANNOTATION } from '../../annotations';
import { MANAGED_BY_LABEL, WORKLOAD_LABEL, GPU_IDS_ANNOTATION, poolMembershipLabel } from '../../model/keys';
import { API_VERSION } from '../../model/group';
import { Cluster, K8sObject, isNotFound, updateWithRetry } from '../kube/cluster';
import { Clock, realClock } from '../kube/clock';
import { Informer, InformerOptions } from '../kube/informer';
import { RuntimeMetrics } from '../metrics';
import { podRequests, requestsAsContainer } from '../pod-requests';
import { RESOURCES, ResourceType, keyOf } from '../kube/resources';
import { WorkQueue, WorkQueueOptions, runWorkers, ReconcileResult } from '../kube/workqueue';
import {
  GpuUsage, NodeLike, PodLike, gpuName, gpuNodeStatus, gpuPoolStatus, gpuStatus, nodeInventory, usageFromPods,
} from './capacity';
import { matchesNodeSelector } from './node-selector';
import { planXgnTaint } from './xgn-taint';
import { workloadStatus } from './workload-status';
import { microTime } from '../kube/leader-election';
import { isGenerated, planGeneratedWorkload } from './generated-workload';
import { TopOwners } from './top-owner';
import { defaultPoolOf } from '../webhook/cluster-view';
import type { SettingsView } from '../webhook/resolve';
import { slimOomStatuses } from '../autoscale/oom';

export interface ControllerOptions {
  /** Used by the informers (reads). */
  cluster: Cluster;
  clock?: Clock;
  logger?: Logger;
  metrics?: RuntimeMetrics;
  /** Concurrent reconciles (never two for one key). @default 2 */
  workers?: number;
  /** Overrides for every informer (short timings in tests). */
  informer?: Partial<InformerOptions<K8sObject>>;
  queue?: WorkQueueOptions;
  /** Allocated amounts per GPU; the allocator plugs in here. @default usageFromPods over the node's pods */
  usage?: (pods: PodLike[]) => GpuUsage;
  /**
   * How long a pod event waits before its node's and workload's status are written. Pods arrive in
   * bursts (a Deployment scaled up, a scheduler draining its queue): every event in the window is
   * folded into one write per object, instead of a write of the GPU, GPUNode, pool and workload
   * status per pod that competes with the placements themselves. Placement never reads these
   * statuses (the extender counts the pods' own records), so only the status shown lags.
   * @default 1000
   */
  podStatusDelayMs?: number;
}

const INDEX_BY_NODE = 'nodeName';
/** Index of the pods cache: `namespace/workload` of the pods labelled with a workload. */
export const INDEX_BY_WORKLOAD = 'workload';
const INDEX_BY_OWNER = 'managedBy';

type Reconcile = (name: string) => Promise<ReconcileResult | void>;

export class Controller {
  readonly nodes: Informer<NodeLike>;
  readonly pods: Informer<PodLike>;
  readonly pools: Informer<GPUPool & K8sObject>;
  readonly gpuNodes: Informer<GPUNode & K8sObject>;
  readonly gpus: Informer<GPU & K8sObject>;
  readonly workloads: Informer<TensorFusionWorkload & K8sObject>;
  /** Read to resolve pods whose generated workload names a profile (and by the webhook). */
  readonly profiles: Informer<WorkloadProfile & K8sObject>;
  readonly queue: WorkQueue;
  private writer?: Cluster;
  private workersDone?: Promise<void>;
  private readonly clock: Clock;
  /** Owners of generated workloads: a pod's Deployment, StatefulSet, Job, CronJob (reads through opts.cluster). */
  private readonly topOwners: TopOwners;

  constructor(private readonly opts: ControllerOptions) {
    this.clock = opts.clock ?? realClock;
    this.topOwners = new TopOwners(opts.cluster);
    const inf = <T extends K8sObject>(rt: ResourceType, extra: Partial<InformerOptions<T>> = {}) =>
      new Informer<T>(opts.cluster, rt, { clock: this.clock, metrics: opts.metrics, logger: opts.logger, ...(opts.informer as Partial<InformerOptions<T>>), ...extra });
    this.nodes = inf<NodeLike>(RESOURCES.nodes);
    // Only pods the controller cares about are cached: GPU-share holders and workload workers.
    this.pods = inf<PodLike>(RESOURCES.pods, { transform: slimPod })
      .addIndex(INDEX_BY_NODE, (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []))
      .addIndex(INDEX_BY_WORKLOAD, (p) => {
        const w = p.metadata.labels?.[WORKLOAD_LABEL];
        return w ? [`${p.metadata.namespace}/${w}`] : [];
      });
    this.pools = inf(RESOURCES.gpupools);
    this.gpuNodes = inf<GPUNode & K8sObject>(RESOURCES.gpunodes).addIndex(INDEX_BY_OWNER, byOwner);
    this.gpus = inf<GPU & K8sObject>(RESOURCES.gpus).addIndex(INDEX_BY_OWNER, byOwner);
    this.workloads = inf(RESOURCES.tensorfusionworkloads);
    this.profiles = inf(RESOURCES.workloadprofiles);
    this.queue = new WorkQueue({ clock: this.clock, ...opts.queue });
    this.wireEvents();
  }

  private get informers(): Informer<K8sObject>[] {
    return [this.nodes, this.pods, this.pools, this.gpuNodes, this.gpus, this.workloads, this.profiles] as Informer<K8sObject>[];
  }

  /** Starts every informer (all replicas keep warm caches). */
  startInformers(): void {
    for (const i of this.informers) i.start();
  }

  async waitForSync(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.waitForSync()));
  }

  /** Caches synced and every watch healthy (for reports; readiness uses {@link hasSynced}). */
  isReady(): boolean {
    return this.informers.every((i) => i.isHealthy());
  }

  /** Every cache has had its first list. */
  hasSynced(): boolean {
    return this.informers.every((i) => i.hasSynced());
  }

  /** Starts the workers; writes go through `writer` (the leader-fenced cluster). Enqueues everything once. */
  async startReconciling(writer: Cluster): Promise<void> {
    this.writer = writer;
    await this.waitForSync();
    for (const n of this.nodes.list()) this.queue.add(`node/${n.metadata.name}`);
    for (const p of this.pools.list()) this.queue.add(`pool/${p.metadata.name}`);
    for (const w of this.workloads.list()) this.queue.add(`workload/${keyOf(w.metadata)}`);
    this.workersDone = runWorkers(this.queue, this.opts.workers ?? 2, (key) => this.reconcile(key), (key, err) => {
      this.opts.logger?.warn({ key, err: String(err) }, 'reconcile failed; will retry');
    });
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.informers.map((i) => i.stop()));
    await this.workersDone;
  }

  private wireEvents(): void {
    const add = (k: string) => this.queue.add(k);
    const allNodes = () => this.nodes.list().forEach((n) => add(`node/${n.metadata.name}`));
    this.nodes.on({
      add: (n) => add(`node/${n.metadata.name}`),
      update: (_o, n) => add(`node/${n.metadata.name}`),
      delete: (n) => add(`node/${n.metadata.name}`),
    });
    // Generated workloads carry pool defaults, so a pool change may change them.
    const generated = () => this.workloads.list().filter(isGenerated).forEach((w) => add(`workload/${keyOf(w.metadata)}`));
    this.pools.on({
      add: (p) => { add(`pool/${p.metadata.name}`); allNodes(); generated(); },
      update: (o, p) => {
        add(`pool/${p.metadata.name}`);
        if (JSON.stringify(o.spec) !== JSON.stringify(p.spec) || JSON.stringify(o.metadata.annotations) !== JSON.stringify(p.metadata.annotations)) {
          allNodes();
          generated();
        }
      },
      delete: (p) => { add(`pool/${p.metadata.name}`); allNodes(); generated(); },
    });
    const gpuNodeChanged = (g: GPUNode & K8sObject) => {
      add(`node/${g.metadata.name}`);
      const pool = g.metadata.labels?.[MANAGED_BY_LABEL];
      if (pool) add(`pool/${pool}`);
    };
    this.gpuNodes.on({ add: gpuNodeChanged, update: (o, n) => { gpuNodeChanged(o); gpuNodeChanged(n); }, delete: gpuNodeChanged });
    const gpuChanged = (g: GPU & K8sObject) => {
      const node = g.metadata.labels?.[MANAGED_BY_LABEL];
      if (!node) return;
      add(`node/${node}`);
      // Pool status counts GPU objects from this cache, so a GPU arriving after its GPUNode's last
      // status change must requeue the pool too.
      const pool = this.gpuNodes.get(node)?.metadata.labels?.[MANAGED_BY_LABEL];
      if (pool) add(`pool/${pool}`);
    };
    this.gpus.on({ add: gpuChanged, update: (_o, n) => gpuChanged(n), delete: gpuChanged });
    const later = (k: string) => this.queue.addAfter(k, this.opts.podStatusDelayMs ?? 1_000);
    const podChanged = (p: PodLike) => {
      if (p.spec?.nodeName && p.metadata.annotations?.[GPU_IDS_ANNOTATION]) later(`node/${p.spec.nodeName}`);
      const w = p.metadata.labels?.[WORKLOAD_LABEL];
      if (w) later(`workload/${p.metadata.namespace}/${w}`);
    };
    this.pods.on({ add: podChanged, update: (o, n) => { podChanged(o); podChanged(n); }, delete: podChanged });
    const wl = (w: K8sObject) => add(`workload/${keyOf(w.metadata)}`);
    this.workloads.on({ add: wl, update: (_o, n) => wl(n), delete: wl });
    // A profile change reaches the workloads generated from pods that name it.
    const profileChanged = (pr: K8sObject) => {
      for (const p of this.pods.list()) {
        const w = p.metadata.labels?.[WORKLOAD_LABEL];
        if (w && p.metadata.namespace === pr.metadata.namespace && p.metadata.annotations?.[ANNOTATION.workloadProfile] === pr.metadata.name) add(`workload/${p.metadata.namespace}/${w}`);
      }
    };
    this.profiles.on({ add: profileChanged, update: (_o, n) => profileChanged(n), delete: profileChanged });
  }

  /** Dispatches one key to its reconciler, with metrics. */
  async reconcile(key: string): Promise<ReconcileResult | void> {
    const slash = key.indexOf('/');
    const kind = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const fn: Reconcile | undefined = kind === 'node' ? (n) => this.reconcileNode(n)
      : kind === 'pool' ? (n) => this.reconcilePool(n)
        : kind === 'workload' ? (n) => this.reconcileWorkload(n) : undefined;
    if (!fn) return;
    const m = this.opts.metrics;
    const end = m?.reconcileSeconds.startTimer({ controller: kind });
    try {
      const r = await fn(name);
      m?.reconciles.inc({ controller: kind, result: r?.requeueAfterMs ? 'requeue' : 'success' });
      return r;
    } catch (err) {
      m?.reconciles.inc({ controller: kind, result: 'error' });
      m?.reconcileErrors.inc({ controller: kind });
      throw err;
    } finally {
      end?.();
      m?.queueDepth.set(this.queue.len());
      m?.queueRetrying.set(this.queue.stats().retrying);
    }
  }

  private get w(): Cluster {
    if (!this.writer) throw new Error('controller is not reconciling');
    return this.writer;
  }

  private now(): string {
    return microTime(this.clock.wallNow()).replace(/\.\d+Z$/, 'Z');
  }

  /** The pool a node belongs to: the first (by name) whose selector matches. */
  private poolsFor(node: NodeLike): Array<GPUPool & K8sObject> {
    return this.pools.list()
      .filter((p) => !p.metadata.deletionTimestamp && matchesNodeSelector({ name: node.metadata.name ?? '', labels: node.metadata.labels }, p.spec?.nodeManagerConfig?.nodeSelector))
      .sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
  }

  /** Node → xgn taint, GPUNode and GPU objects with their status. */
  async reconcileNode(name: string): Promise<void> {
    const node = this.nodes.get(name);
    if (node) await this.reconcileXgnTaint(node);
    const pools = node ? this.poolsFor(node) : [];
    const pool = pools[0];
    const inv = node && pool ? nodeInventory(node.metadata.labels, pool.spec.capacityConfig?.gpuTflops) : undefined;
    const existingGpus = this.gpus.byIndex(INDEX_BY_OWNER, name);
    if (!node || !pool || !inv) {
      // Not (or no longer) a GPU node of any pool: remove what we made for it.
      for (const g of existingGpus) await this.w.delete(RESOURCES.gpus, { name: g.metadata.name! });
      if (this.gpuNodes.get(name)?.metadata.labels?.[MANAGED_BY_LABEL]) await this.w.delete(RESOURCES.gpunodes, { name });
      return;
    }
    if (pools.length > 1) {
      await this.w.recordEvent(node, { type: 'Warning', reason: 'MultiplePools', message: `node matches pools ${pools.map((p) => p.metadata.name).join(', ')}; using ${pool.metadata.name}` });
    }
    if (inv.unknownModel) {
      await this.w.recordEvent(pool, { type: 'Warning', reason: 'UnknownGPUModel', message: `node ${name}: GPU model ${JSON.stringify(inv.product)} is not in the TFLOPS table; set spec.capacityConfig.gpuTflops` });
    }
    const poolName = pool.metadata.name!;
    let gpuNode: K8sObject | undefined = this.gpuNodes.get(name);
    const wantLabels = { [MANAGED_BY_LABEL]: poolName, [poolMembershipLabel(poolName)]: 'true' };
    const poolRef = ownerRef(pool, 'GPUPool');
    if (!gpuNode || !sameLabels(gpuNode.metadata.labels, wantLabels) || !hasOwner(gpuNode, poolRef.uid)) {
      gpuNode = await this.w.apply(RESOURCES.gpunodes, {
        apiVersion: API_VERSION, kind: 'GPUNode',
        metadata: { name, labels: wantLabels, ownerReferences: [poolRef] },
        spec: { manageMode: 'AutoSelect' },
      });
    }
    const nodeRef = ownerRef(gpuNode, 'GPUNode');
    const podsOnNode = this.pods.byIndex(INDEX_BY_NODE, name);
    const usage = (this.opts.usage ?? usageFromPods)(podsOnNode);
    const names: string[] = [];
    const statuses = [];
    for (let i = 0; i < inv.count; i++) {
      const gName = gpuName(name, i);
      names.push(gName);
      let gpu: K8sObject | undefined = this.gpus.get(gName);
      if (!gpu || gpu.metadata.labels?.[MANAGED_BY_LABEL] !== name || !hasOwner(gpu, nodeRef.uid)) {
        gpu = await this.w.apply(RESOURCES.gpus, {
          apiVersion: API_VERSION, kind: 'GPU', metadata: { name: gName, labels: { [MANAGED_BY_LABEL]: name }, ownerReferences: [nodeRef] },
        });
      }
      const status = gpuStatus(node, inv, i, usage.get(gName));
      statuses.push(status);
      await this.writeStatus(RESOURCES.gpus, gpu, status);
    }
    for (const g of existingGpus) {
      if (!names.includes(g.metadata.name!)) await this.w.delete(RESOURCES.gpus, { name: g.metadata.name! });
    }
    const prev = (gpuNode as GPUNode).status;
    await this.writeStatus(RESOURCES.gpunodes, gpuNode, gpuNodeStatus(node, inv, statuses, usage, names, pool, prev, this.now()));
  }

  private async reconcileXgnTaint(node: NodeLike): Promise<void> {
    const ops = planXgnTaint(node);
    if (!ops) return;
    // A failed `test` (422) or a conflict is retried by the queue once the cache has the newer node.
    await this.w.jsonPatch(RESOURCES.nodes, { name: node.metadata.name! }, ops);
  }

  async reconcilePool(name: string): Promise<void> {
    const pool = this.pools.get(name);
    if (!pool || pool.metadata.deletionTimestamp) return;
    const members = this.gpuNodes.byIndex(INDEX_BY_OWNER, name);
    const gpuPhases = members.flatMap((n) => this.gpus.byIndex(INDEX_BY_OWNER, n.metadata.name!).map((g) => g.status?.phase ?? 'Pending'));
    const status = gpuPoolStatus(pool, members.map((m) => m.status), gpuPhases, pool.status, this.now());
    await this.writeStatus(RESOURCES.gpupools, pool, status);
  }

  async reconcileWorkload(key: string): Promise<void> {
    const pods = this.pods.byIndex(INDEX_BY_WORKLOAD, key);
    await this.generateWorkload(key, pods);
    const wl = this.workloads.get(key);
    if (!wl || wl.metadata.deletionTimestamp) return;
    const replicas = (wl.spec as { replicas?: number } | undefined)?.replicas;
    await this.writeStatus(RESOURCES.tensorfusionworkloads, wl, workloadStatus(pods, replicas, wl.status, this.now()));
  }

  /** The settings view over the caches, for resolving pods as the webhook does. */
  private get settingsView(): SettingsView {
    return {
      pool: (name) => this.pools.get(name),
      poolNames: () => this.pools.list().map((p) => p.metadata.name as string).sort(),
      defaultPool: () => defaultPoolOf(this.pools.list()),
      profile: (namespace, name) => this.profiles.get(`${namespace}/${name}`),
    };
  }

  /** Creates or updates the generated workload `key` from the pods labelled for it (server-side apply). */
  private async generateWorkload(key: string, pods: PodLike[]): Promise<void> {
    const slash = key.indexOf('/');
    const existing = this.workloads.get(key);
    if ((pods.length === 0 && !existing) || existing?.metadata.deletionTimestamp) return;
    const [namespace, name] = [key.slice(0, slash), key.slice(slash + 1)];
    const plan = await planGeneratedWorkload(namespace, name, pods, existing, this.settingsView, (p) => this.topOwners.of(p as K8sObject));
    if (plan.skipped) this.opts.logger?.info({ workload: key }, plan.skipped);
    if (plan.apply) await this.w.apply(RESOURCES.tensorfusionworkloads, plan.apply, { force: true });
    if (plan.delete) {
      this.opts.logger?.info({ workload: key }, 'generated TensorFusionWorkload with no owner and no pod deleted');
      await this.w.delete(RESOURCES.tensorfusionworkloads, { namespace, name });
    }
  }

  /** Writes `.status` through /status when it differs, retrying 409s from a fresh read. */
  private async writeStatus(rt: ResourceType, cached: K8sObject, status: unknown): Promise<void> {
    const want = JSON.stringify(status);
    const ref = { namespace: cached.metadata.namespace, name: cached.metadata.name! };
    try {
      await updateWithRetry(this.w, rt, ref,
        (cur) => (JSON.stringify(cur.status) === want ? undefined : { ...cur, status }),
        (next) => this.w.replaceStatus(rt, next), { cached });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

function byOwner(o: K8sObject): string[] {
  const v = o.metadata.labels?.[MANAGED_BY_LABEL];
  return v ? [v] : [];
}

function sameLabels(have: Record<string, string> | undefined, want: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => have?.[k] === v);
}

function hasOwner(o: K8sObject, uid: unknown): boolean {
  return (o.metadata.ownerReferences ?? []).some((r) => r.uid === uid);
}

function ownerRef(owner: K8sObject, kind: string): { apiVersion: string; kind: string; name: string; uid: string; controller: boolean; blockOwnerDeletion: boolean } {
  return { apiVersion: API_VERSION, kind, name: owner.metadata.name!, uid: String(owner.metadata.uid), controller: true, blockOwnerDeletion: true };
}

/**
 * Keeps only what the reconcilers read from a pod: identity, labels, our annotations, node, phase and
 * conditions. Container specs dominate a pod's size, so this is most of the cache's memory saving.
 */
export function slimPod(pod: PodLike): PodLike {
  const m = pod.metadata;
  const annotations = m.annotations
    ? Object.fromEntries(Object.entries(m.annotations).filter(([k]) => k.startsWith('tensor-fusion.ai/')))
    : undefined;
  return {
    apiVersion: pod.apiVersion, kind: pod.kind,
    metadata: {
      name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, labels: m.labels,
      annotations, creationTimestamp: m.creationTimestamp, deletionTimestamp: m.deletionTimestamp,
      // The generated workload's owner is the pod's top owner (controller/top-owner.ts).
      ownerReferences: m.ownerReferences,
    },
    // Requests as totals, for the scheduler extender's CPU and memory accounting.
    spec: { nodeName: pod.spec?.nodeName, containers: [requestsAsContainer(podRequests(pod))] },
    // OOM kills (lastState only) feed autoscaling's VRAM bump (lib/runtime/autoscale/oom.ts).
    status: { phase: pod.status?.phase, conditions: pod.status?.conditions?.map((c) => ({ type: c.type, status: c.status })), ...slimOomStatuses(pod) },
  };
}

/**
 * Publishes this node's GPUs as its ResourceSlice while the node is in a DRA pool (a
 * `tensor-fusion.ai/pool-<pool>` label naming a GPUPool whose delivery is DRA), from the same facts
 * the controller counts a node's capacity from: the GFD labels and the pool's TFLOPS table and
 * oversell ratio, with each GPU's UUID and index from nvidia-smi and its minor from the driver. A GPU
 * whose isolation is not ready keeps its device with a NoSchedule taint: it takes no new claim while
 * its shares run on and stay counted. Each change raises the slice pool's generation; a node that
 * leaves DRA (or has no GPU to publish) has its slice deleted.
 */
import type { GPUPool } from '../../../api';
import { lookupGpuTflops } from '../../../model/gpu-catalog';
import { poolMembershipLabel } from '../../../model/metadata-keys';
import { poolShareDelivery } from '../../../model/dra';
import { isForbidden, type Cluster, type K8sObject } from '../../kube/cluster';
import { RESOURCES } from '../../kube/resources';
import { nodeInventory } from '../../shared/capacity';
import { ownedByNode, resourceSlice, ResourceSlice, resourceSliceName, sameDevices, SliceGpu } from '../../shared/dra/resource-slice';
import type { GpuReadiness } from '../mps/supervisor';
import type { SmiGpu } from '../nvidia-smi';
import { Serial } from '../../shared/serial';

export interface SlicePublisherOptions {
  readonly cluster: Cluster;
  readonly nodeName: string;
  /** The node's GPUs and their readiness now. */
  readonly gpus: () => readonly SmiGpu[];
  readonly readiness: () => ReadonlyMap<string, GpuReadiness>;
  /** Device minor by GPU UUID. */
  readonly minors: () => ReadonlyMap<string, number>;
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** The DRA pool among the pools the node's labels put it in, if any. */
export async function draPoolOf(cluster: Cluster, node: K8sObject): Promise<GPUPool | undefined> {
  const prefix = poolMembershipLabel('');
  const names = Object.entries(node.metadata.labels ?? {})
    .filter(([k, v]) => k.startsWith(prefix) && v === 'true')
    .map(([k]) => k.slice(prefix.length));
  for (const name of names.sort()) {
    const pool = await cluster.get<GPUPool & K8sObject>(RESOURCES.gpupools, { name });
    if (pool && poolShareDelivery(pool) === 'DRA') return pool;
  }
  return undefined;
}

export class SlicePublisher {
  private pool: GPUPool | undefined;
  /** The slice was deleted and nothing published since: a withdrawal needs no second delete. */
  private withdrawn = false;
  private readonly passes = new Serial(() => this.pass());
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: SlicePublisherOptions) {}

  /** Physical TFLOPS of a GPU: the node's pool's table first, then the catalog (0 when neither knows it). */
  tflopsOf(gpu: SmiGpu): number {
    const overrides = this.pool?.spec.capacityConfig?.gpuTflops ?? {};
    return lookupGpuTflops(gpu.name.replace(/\s+/g, '-'), overrides)?.tflops ?? 0;
  }

  /** Refreshes now and every `everyMs` (a node's pool labels and its pool's delivery change without telling the agent). */
  start(everyMs = 30_000): Promise<void> {
    this.timer = setInterval(() => void this.refresh(), everyMs);
    this.timer.unref();
    return this.refresh();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.passes.settled();
  }

  /** Publishes, changes or deletes the slice as the node, its pool and its GPUs are now (one pass at a time). */
  refresh(): Promise<void> {
    return this.passes.run();
  }

  private async pass(): Promise<void> {
    const { cluster, nodeName } = this.opts;
    try {
      const node = await cluster.get(RESOURCES.nodes, { name: nodeName });
      this.pool = node && (await draPoolOf(cluster, node));
      const slice = node && this.pool ? this.slice(node, this.pool) : undefined;
      if (!slice) return await this.withdraw();
      // Read back every pass: the kubelet deletes a node's slices when it starts or loses the plugin.
      const old = await cluster.get<ResourceSlice & K8sObject>(RESOURCES.resourceslices, { name: slice.metadata.name });
      const spec = old?.spec as ResourceSlice['spec'] | undefined;
      if (spec && sameDevices(slice.spec.devices, spec.devices ?? [])) {
        this.withdrawn = false;
        return;
      }
      slice.spec.pool.generation = (spec?.pool.generation ?? 0) + 1;
      await cluster.apply(RESOURCES.resourceslices, ownedByNode(slice, node!.metadata.uid!) as never);
      this.withdrawn = false;
      this.opts.log?.('ResourceSlice published', {
        slice: slice.metadata.name,
        pool: this.pool?.metadata.name,
        generation: slice.spec.pool.generation,
      });
    } catch (err) {
      this.opts.log?.('publishing the ResourceSlice failed; trying again', { err: String(err) });
    }
  }

  /** The slice of this node in `pool`; undefined when the node's labels or nvidia-smi show no GPU. */
  private slice(node: K8sObject, pool: GPUPool): ResourceSlice | undefined {
    const inv = nodeInventory(node.metadata.labels, pool.spec.capacityConfig?.gpuTflops);
    const gpus = this.opts.gpus();
    if (!inv || gpus.length === 0) return undefined;
    const minors = this.opts.minors();
    const ready = this.opts.readiness();
    const slice: SliceGpu[] = gpus.map((g) => {
      const r = ready.get(g.uuid);
      return {
        uuid: g.uuid,
        model: inv.model,
        index: g.index,
        minor: minors.get(g.uuid),
        tflops: inv.tflopsPerGpu,
        vram: inv.vramPerGpu,
        // Not yet checked is not ready: no claim before the first readiness pass says so.
        ...(r?.ready ? {} : { notReady: r?.reason ?? 'NotChecked' }),
      };
    });
    return resourceSlice({ nodeName: this.opts.nodeName, pool, gpus: slice });
  }

  /**
   * Deletes the node's slice (it stopped serving DRA). An install without DRA grants the agent no
   * rights on slices (a 403), so it can have published none: nothing to withdraw, and no retry.
   */
  async withdraw(): Promise<void> {
    if (this.withdrawn) return;
    try {
      if (await this.opts.cluster.delete(RESOURCES.resourceslices, { name: resourceSliceName(this.opts.nodeName) }))
        this.opts.log?.('ResourceSlice deleted: the node is in no DRA pool, or has no GPU to publish');
    } catch (err) {
      if (!isForbidden(err)) throw err;
    }
    this.withdrawn = true;
  }
}

/**
 * The growth reconciler (docs/growth.md): for a GPUPool with `spec.growth`, keeps one placeholder pod
 * per new GPU node that the shares waiting for room need (shared/growth-plan.ts decides, and
 * shared/wait-reasons.ts tells room from what no node fixes), and deletes each as soon as its shares
 * are placed or stop waiting, or its node joined the pool. A pool without growth has none.
 */
import type { GPU, GPUPool } from '../../api';
import { GROWTH_NOT_FOR_DRA, poolShareDelivery } from '../../model/dra';
import { AssumedWrites } from '../kube/assumed-writes';
import type { K8sObject } from '../kube/cluster';
import { isConflict } from '../kube/cluster';
import type { ReconcileResult } from '../kube/workqueue';
import { RESOURCES } from '../kube/resources';
import { INDEX_BY_OWNER, INDEX_PLACEHOLDER_BY_POOL, INDEX_UNBOUND_BY_POOL, ReadCaches } from '../shared/caches';
import { managedBy } from '../shared/managed-by';
import { nodeInventory, num, PodLike } from '../shared/capacity';
import { ExistingPlaceholder, NewGpu, planGrowth, WaitingShare } from '../shared/growth-plan';
import { placeholderGpus, placeholderPod, placeholderPool, placeholderShares } from '../shared/growth-placeholder';
import { podRequests } from '../shared/pod-requests';
import { shareOf } from '../shared/share';
import { waitsForRoom } from '../shared/wait-reasons';
import type { ReconcileContext, Reconciler } from './reconcile-context';
import { GrowthKey, growthKey } from './queue-keys';
import { specOrAnnotationsChanged, Watches } from './watches';

/**
 * A bound placeholder whose node has not joined the pool this long after it was made goes anyway
 * (a node that never gets the pool's labels must not be held alive).
 */
export const GROWTH_BOUND_GRACE_MS = 10 * 60_000;
/** How often a pool with placeholders is looked at again without an event (for the grace above). */
const RECHECK_MS = 30_000;

/**
 * Per controller (its caches): the placeholders it made or deleted that the pods cache may not show
 * yet. A pass that ran before the cache showed the last one's placeholder would otherwise ask again
 * for the same shares, under another name once more shares wait, and the autoscaler would add a node
 * too many.
 */
const assumed = new WeakMap<ReadCaches, AssumedWrites<K8sObject>>();

function assumedFor(caches: ReadCaches): AssumedWrites<K8sObject> {
  let a = assumed.get(caches);
  if (!a) assumed.set(caches, (a = new AssumedWrites()));
  return a;
}

/** The pool's growth, unless it delivers by DRA, where growth asks for nothing ({@link GROWTH_NOT_FOR_DRA}). */
function growthOf(pool: GPUPool | undefined): GPUPool['spec']['growth'] {
  return poolShareDelivery(pool) === 'DRA' ? undefined : pool?.spec?.growth;
}

function grows(pool: string, caches: ReadCaches): boolean {
  return growthOf(caches.pools.get(pool)) !== undefined;
}

export const growthWatches: Watches<GrowthKey> = {
  for: { cache: 'pools', keys: (p) => [growthKey(p.metadata.name!)], changed: specOrAnnotationsChanged },
  owns: [{ cache: 'pods', keys: (p) => (placeholderPool(p) === undefined ? [] : [growthKey(placeholderPool(p)!)]) }],
  watches: [
    // A share that waits (or stops waiting: placed, deleted, refused for another reason).
    {
      cache: 'pods',
      old: true,
      delayed: true,
      keys: (p, caches) => {
        const pool = shareOf(p)?.pool;
        return pool !== undefined && grows(pool, caches) ? [growthKey(pool)] : [];
      },
    },
    // A node's GPUs joining the pool: the room a placeholder asked for came.
    {
      cache: 'gpus',
      delayed: true,
      keys: (g, caches) =>
        managedBy(g)
          .flatMap((node) => (caches.gpuNodes.get(node) ? managedBy(caches.gpuNodes.get(node)!) : []))
          .map(growthKey),
    },
  ],
};

/** The share `pod` waits for GPU room with, per the condition kube-scheduler wrote, if it does. */
function waitingShare(pod: PodLike): WaitingShare | undefined {
  const share = shareOf(pod);
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (!share || scheduled?.status !== 'False' || scheduled.reason !== 'Unschedulable' || !waitsForRoom(scheduled.message)) return undefined;
  const { cpu, memory } = podRequests(pod);
  const { namespace = '', name = '', uid = '' } = pod.metadata;
  return { uid, namespace, name, gpuCount: share.gpuCount, vram: share.vramRequest, tflops: share.tflopsRequest, cpu, memory };
}

/**
 * A node's GPUs whose room is known: made, and given a status by the node reconciler (a GPU is
 * created first and gets its status in a second write; read between the two it has no room at all).
 */
function countedGpus(caches: ReadCaches, node: string): (GPU & K8sObject)[] {
  return caches.gpus.byIndex(INDEX_BY_OWNER, node).filter((g) => g.status?.capacity !== undefined && g.status.available !== undefined);
}

/** The pool's GPUs, per node: their size (capacity) and the room they have left (available). */
function poolGpus(caches: ReadCaches, pool: string): { size: NewGpu; free: NewGpu }[][] {
  return caches.gpuNodes.byIndex(INDEX_BY_OWNER, pool).map((n) =>
    countedGpus(caches, n.metadata.name!).map((g) => ({
      size: { vram: num(g.status?.capacity?.vram), tflops: num(g.status?.capacity?.tflops) },
      free: { vram: num(g.status?.available?.vram), tflops: num(g.status?.available?.tflops) },
    })),
  );
}

/**
 * The node's GPUs have all joined the pool: as many counted as its labels say it has. The node
 * reconciler makes and gives a status to them one at a time; a placeholder dropped once the first
 * one counts would leave its other shares with one GPU's room, and they would ask for another node.
 */
function nodeJoined(caches: ReadCaches, node: string): boolean {
  const count = nodeInventory(caches.nodes.get(node)?.metadata.labels)?.count;
  return count !== undefined && countedGpus(caches, node).length >= count;
}

function existing(caches: ReadCaches, p: K8sObject): ExistingPlaceholder {
  const node = (p.spec as { nodeName?: string } | undefined)?.nodeName;
  return {
    name: p.metadata.name!,
    pods: placeholderShares(p),
    askedAtMs: Date.parse(p.metadata.creationTimestamp ?? '') || 0,
    bound: node !== undefined,
    gpus: placeholderGpus(p),
    nodeJoined: node !== undefined && nodeJoined(caches, node),
  };
}

/** Creates the placeholders the waiting shares need and deletes those no longer needed. */
export async function reconcileGrowth(ctx: ReconcileContext, { name }: GrowthKey): Promise<ReconcileResult | void> {
  const { caches } = ctx;
  const nowMs = Date.parse(ctx.now());
  const writes = assumedFor(caches);
  const pool = caches.pools.get(name) as (GPUPool & K8sObject) | undefined;
  const placeholders = writes.view(caches.pods.byIndex(INDEX_PLACEHOLDER_BY_POOL, name), (p) => placeholderPool(p) === name, nowMs);
  const growth = pool && !pool.metadata.deletionTimestamp ? growthOf(pool) : undefined;
  if (pool?.spec.growth && !growth && !pool.metadata.deletionTimestamp)
    ctx.logger?.warn({ pool: name }, `spec.growth ignored: the pool's shareDelivery is "DRA"; ${GROWTH_NOT_FOR_DRA}`);
  const remove = async (names: readonly string[]) => {
    for (const p of placeholders.filter((x) => names.includes(x.metadata.name!))) {
      await ctx.writer.delete(RESOURCES.pods, { namespace: p.metadata.namespace, name: p.metadata.name! });
      writes.deleted(p, nowMs);
    }
  };
  if (!pool || !growth) return remove(placeholders.map((p) => p.metadata.name!));
  const gpus = poolGpus(caches, name);
  const largest = gpus.flat().reduce<NewGpu | undefined>((a, g) => (a && a.vram >= g.size.vram ? a : g.size), undefined);
  const plan = planGrowth({
    waiting: caches.pods.byIndex(INDEX_UNBOUND_BY_POOL, name).flatMap((p) => waitingShare(p) ?? []),
    existing: placeholders.filter((p) => !p.metadata.deletionTimestamp).map((p) => existing(caches, p)),
    gpusPerNode: growth.gpusPerNode,
    gpu: largest && largest.vram > 0 ? largest : undefined,
    free: gpus.map((node) => node.map((g) => g.free)),
    nowMs,
    boundGraceMs: GROWTH_BOUND_GRACE_MS,
  });
  await remove(plan.remove);
  for (const ask of plan.create) {
    const pod = placeholderPod({ name, nodeSelector: pool.spec.nodeManagerConfig.nodeSelector }, growth.resource, ask);
    try {
      writes.created(await ctx.writer.create(RESOURCES.pods, pod), nowMs);
    } catch (err) {
      // Made by a pass whose result the cache did not show yet: the same shares, the same name.
      if (!isConflict(err)) throw err;
    }
  }
  if (plan.unfit.length > 0)
    ctx.logger?.debug({ pool: name, pods: plan.unfit.map((s) => `${s.namespace}/${s.name}`) }, 'shares no new node of the pool can take');
  if (placeholders.length - plan.remove.length + plan.create.length > 0) return { requeueAfterMs: RECHECK_MS };
}

export const growthReconciler: Reconciler<GrowthKey> = { kind: 'growth', watches: growthWatches, reconcile: reconcileGrowth };

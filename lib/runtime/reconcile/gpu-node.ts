/**
 * The node reconciler: a Node of a GPU pool gets its xgn taint, a GPUNode owned by the pool and one
 * GPU per device owned by the GPUNode, with their status; a node of no pool loses what we made for it.
 */
import type { GPUNode, GPUPool } from '../../api';
import { GPU_IDS_ANNOTATION, MANAGED_BY_LABEL, poolMembershipLabel } from '../../model/metadata-keys';
import { API_VERSION } from '../../model/group';
import type { K8sObject } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';
import { INDEX_BY_NODE, INDEX_BY_OWNER } from '../shared/caches';
import { managedBy, managedByLabels } from '../shared/managed-by';
import { gpuName, gpuNodeStatus, gpuStatus, nodeInventory, sumGpuUsage } from '../shared/capacity';
import { claimNodes, usageFromClaims } from '../shared/dra/claim-results';
import type { ReconcileContext, Reconciler } from './reconcile-context';
import { NodeKey, nodeKey } from './queue-keys';
import { matchingPools } from './node-selector';
import { controllerRefTo } from '../shared/top-owner';
import { Watches, specOrAnnotationsChanged } from './watches';
import { writeStatus } from './write-status';
import { applyXgnTaint } from './xgn-taint';

type Pool = GPUPool & K8sObject;

export const nodeWatches: Watches<NodeKey> = {
  for: { cache: 'nodes', keys: (n) => [nodeKey(n.metadata.name!)] },
  owns: [
    { cache: 'gpuNodes', keys: (g) => [nodeKey(g.metadata.name!)], old: true },
    { cache: 'gpus', keys: (g) => managedBy(g).map(nodeKey) },
  ],
  watches: [
    // A pool's selector decides which nodes are its GPU nodes, its capacity settings their inventory.
    { cache: 'pools', keys: (_p, caches) => caches.nodes.list().map((n) => nodeKey(n.metadata.name!)), changed: specOrAnnotationsChanged },
    // The GPU shares held on a node are its GPUs' usage.
    {
      cache: 'pods',
      old: true,
      delayed: true,
      keys: (p) => (p.spec?.nodeName && p.metadata.annotations?.[GPU_IDS_ANNOTATION] ? [nodeKey(p.spec.nodeName)] : []),
    },
    // So are the DRA claims allocated on its GPUs (a deallocated claim maps its old nodes).
    { cache: 'claims', old: true, delayed: true, keys: (c) => claimNodes(c).map(nodeKey) },
  ],
};

/** Node → xgn taint, GPUNode and GPU objects with their status. */
export async function reconcileNode(ctx: ReconcileContext, { name }: NodeKey): Promise<void> {
  const node = ctx.caches.nodes.get(name);
  if (node) await applyXgnTaint(ctx, node);
  const pools = node ? matchingPools(ctx.caches.pools.list(), node) : [];
  const pool = pools[0];
  const inv = node && pool ? nodeInventory(node.metadata.labels, pool.spec.capacityConfig?.gpuTflops) : undefined;
  const existing = ctx.caches.gpus.byIndex(INDEX_BY_OWNER, name);
  if (!node || !pool || !inv) {
    ctx.metrics?.observeGpuShares(name, []);
    return removeGpuObjects(ctx, name, existing);
  }
  if (pools.length > 1) {
    await ctx.writer.recordEvent(node, {
      type: 'Warning',
      reason: 'MultiplePools',
      message: `node matches pools ${pools.map((p) => p.metadata.name).join(', ')}; using ${pool.metadata.name}`,
    });
  }
  if (inv.unknownModel) {
    await ctx.writer.recordEvent(pool, {
      type: 'Warning',
      reason: 'UnknownGPUModel',
      message: `node ${name}: GPU model ${JSON.stringify(inv.product)} is not in the TFLOPS table; set spec.capacityConfig.gpuTflops`,
    });
  }
  const gpuNode = await ensureGpuNode(ctx, name, pool);
  // Shares placed by the extender are in their pods' records; a DRA pool's, in their claims.
  const usage = sumGpuUsage(
    ctx.usage(ctx.caches.pods.byIndex(INDEX_BY_NODE, name)),
    usageFromClaims(ctx.caches.claims.byIndex(INDEX_BY_NODE, name)),
  );
  const names = Array.from({ length: inv.count }, (_, i) => gpuName(name, i));
  const statuses = [];
  for (let i = 0; i < inv.count; i++) {
    const gpu = await ensureGpu(ctx, name, names[i], gpuNode);
    const status = gpuStatus(node, inv, i, usage.get(names[i]));
    statuses.push(status);
    // The node agent writes each GPU's isolation readiness into its conditions.
    await writeStatus(ctx.writer, RESOURCES.gpus, gpu, status, ['conditions']);
  }
  await removeGpuObjects(ctx, name, existing, names);
  ctx.metrics?.observeGpuShares(
    name,
    names.map((gpu) => ({ gpu, pool: pool.metadata.name!, shares: usage.get(gpu)?.pods ?? 0 })),
  );
  const prev = (gpuNode as GPUNode).status;
  await writeStatus(ctx.writer, RESOURCES.gpunodes, gpuNode, gpuNodeStatus(node, inv, statuses, usage, names, pool, prev, ctx.now()));
}

export const nodeReconciler: Reconciler<NodeKey> = { kind: 'node', watches: nodeWatches, reconcile: reconcileNode };

/**
 * Deletes the node's `existing` GPUs not in `keep`; with no `keep` (not, or no longer, a GPU node of
 * any pool) also the GPUNode we made for it.
 */
async function removeGpuObjects(ctx: ReconcileContext, name: string, existing: K8sObject[], keep?: string[]): Promise<void> {
  for (const g of existing) {
    if (!keep?.includes(g.metadata.name!)) await ctx.writer.delete(RESOURCES.gpus, { name: g.metadata.name! });
  }
  if (!keep && ctx.caches.gpuNodes.get(name)?.metadata.labels?.[MANAGED_BY_LABEL]) await ctx.writer.delete(RESOURCES.gpunodes, { name });
}

/** The node's GPUNode, applied when its labels or owner differ from what the pool wants. */
async function ensureGpuNode(ctx: ReconcileContext, name: string, pool: Pool): Promise<K8sObject> {
  const poolName = pool.metadata.name!;
  const gpuNode = ctx.caches.gpuNodes.get(name);
  const wantLabels = { [MANAGED_BY_LABEL]: poolName, [poolMembershipLabel(poolName)]: 'true' };
  const poolRef = controllerRefTo(pool, 'GPUPool');
  if (gpuNode && sameLabels(gpuNode.metadata.labels, wantLabels) && hasOwner(gpuNode, poolRef.uid)) return gpuNode;
  return ctx.writer.apply(RESOURCES.gpunodes, {
    apiVersion: API_VERSION,
    kind: 'GPUNode',
    metadata: { name, labels: wantLabels, ownerReferences: [poolRef] },
    spec: { manageMode: 'AutoSelect' },
  });
}

/** The GPU `gName` of node `node`, applied when its label or owner differ. */
async function ensureGpu(ctx: ReconcileContext, node: string, gName: string, gpuNode: K8sObject): Promise<K8sObject> {
  const nodeRef = controllerRefTo(gpuNode, 'GPUNode');
  const gpu = ctx.caches.gpus.get(gName);
  const labels = managedByLabels(node);
  if (gpu && sameLabels(gpu.metadata.labels, labels) && hasOwner(gpu, nodeRef.uid)) return gpu;
  return ctx.writer.apply(RESOURCES.gpus, {
    apiVersion: API_VERSION,
    kind: 'GPU',
    // A node name too long for a label value leaves the GPU unlabelled: its owner reference names the node.
    metadata: { name: gName, labels, ownerReferences: [nodeRef] },
  });
}

function sameLabels(have: Record<string, string> | undefined, want: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => have?.[k] === v);
}

function hasOwner(o: K8sObject, uid: unknown): boolean {
  return (o.metadata.ownerReferences ?? []).some((r) => r.uid === uid);
}

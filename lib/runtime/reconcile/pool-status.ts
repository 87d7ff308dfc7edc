/** The pool reconciler: a GPUPool's status, counted from its GPUNodes and their GPUs. */
import { RESOURCES } from '../kube/resources';
import { INDEX_BY_OWNER } from '../shared/caches';
import { managedBy } from '../shared/managed-by';
import { gpuPoolStatus, num } from '../shared/capacity';
import type { ReconcileContext, Reconciler } from './reconcile-context';
import { PoolKey, poolKey } from './queue-keys';
import type { Watches } from './watches';
import { writeStatus } from './write-status';

export const poolWatches: Watches<PoolKey> = {
  for: { cache: 'pools', keys: (p) => [poolKey(p.metadata.name!)] },
  // A GPUNode moving between pools changes both: the old one is mapped too.
  owns: [{ cache: 'gpuNodes', keys: (g) => managedBy(g).map(poolKey), old: true }],
  watches: [
    {
      cache: 'gpus',
      // Pool status counts GPU objects from this cache, so a GPU arriving after its GPUNode's last
      // status change must requeue the pool too.
      keys: (g, caches) =>
        managedBy(g).flatMap((node) => {
          const gpuNode = caches.gpuNodes.get(node);
          return gpuNode ? managedBy(gpuNode).map(poolKey) : [];
        }),
    },
  ],
};

/** Writes the pool's status from its members; a pool being deleted is left alone. */
export async function reconcilePoolStatus(ctx: ReconcileContext, { name }: PoolKey): Promise<void> {
  const pool = ctx.caches.pools.get(name);
  if (!pool || pool.metadata.deletionTimestamp) return ctx.metrics?.observePool(name);
  const members = ctx.caches.gpuNodes.byIndex(INDEX_BY_OWNER, name);
  const gpuPhases = members.flatMap((n) =>
    ctx.caches.gpus.byIndex(INDEX_BY_OWNER, n.metadata.name!).map((g) => g.status?.phase ?? 'Pending'),
  );
  const status = gpuPoolStatus(
    pool,
    members.map((m) => m.status),
    gpuPhases,
    pool.status,
    ctx.now(),
  );
  // Requests are what the status counts as no longer available.
  ctx.metrics?.observePool(name, {
    tflops: num(status.totalTFlops),
    virtualTflops: num(status.virtualTFlops),
    requestedTflops: num(status.totalTFlops) - num(status.availableTFlops),
    vram: num(status.totalVRAM),
    requestedVram: num(status.totalVRAM) - num(status.availableVRAM),
  });
  await writeStatus(ctx.writer, RESOURCES.gpupools, pool, status);
}

export const poolReconciler: Reconciler<PoolKey> = { kind: 'pool', watches: poolWatches, reconcile: reconcilePoolStatus };

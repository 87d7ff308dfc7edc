/**
 * The workload reconciler: generates a TensorFusionWorkload from the pods labelled for it (see
 * generated-workload.ts) and writes its status from those pods.
 */
import { ANNOTATION } from '../../annotations';
import { WORKLOAD_LABEL } from '../../model/metadata-keys';
import type { K8sObject } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';
import { cachedSettingsView } from '../shared/settings-view';
import { INDEX_BY_WORKLOAD, ReadCaches } from '../shared/caches';
import type { TensorFusionWorkloadSpec, TensorFusionWorkloadStatus } from '../../api';
import { num, PodLike } from '../shared/capacity';
import type { ReconcileContext, Reconciler } from './reconcile-context';
import { planGeneratedWorkload } from './generated-workload';
import { isGenerated } from '../shared/workload-origin';
import { WorkloadKey, workloadCacheKey, workloadKey } from './queue-keys';
import { Watches, specOrAnnotationsChanged } from './watches';
import { workloadStatus } from './workload-status';
import { writeStatus } from './write-status';

const keyOfWorkload = (w: K8sObject) => workloadKey(w.metadata.namespace!, w.metadata.name!);

/** The workload a pod is labelled for, if any. */
function labelledFor(p: PodLike): WorkloadKey[] {
  const w = p.metadata.labels?.[WORKLOAD_LABEL];
  return w ? [workloadKey(p.metadata.namespace!, w)] : [];
}

/** The workloads generated from pods that name the profile (in its namespace). */
function namingProfile(profile: K8sObject, caches: ReadCaches): WorkloadKey[] {
  return caches.pods
    .list()
    .filter(
      (p) =>
        p.metadata.namespace === profile.metadata.namespace &&
        p.metadata.annotations?.[ANNOTATION.workloadProfile] === profile.metadata.name,
    )
    .flatMap(labelledFor);
}

export const workloadWatches: Watches<WorkloadKey> = {
  for: { cache: 'workloads', keys: (w) => [keyOfWorkload(w)] },
  watches: [
    { cache: 'pods', keys: labelledFor, old: true, delayed: true },
    // Generated workloads carry pool defaults, so a pool change may change them.
    {
      cache: 'pools',
      keys: (_p, caches) => caches.workloads.list().filter(isGenerated).map(keyOfWorkload),
      changed: specOrAnnotationsChanged,
    },
    // A profile change reaches the workloads generated from pods that name it.
    { cache: 'profiles', keys: namingProfile },
  ],
};

/** Generates the workload from its pods when asked to, then writes its status. */
export async function reconcileWorkload(ctx: ReconcileContext, key: WorkloadKey): Promise<void> {
  const cacheKey = workloadCacheKey(key);
  const pods = ctx.caches.pods.byIndex(INDEX_BY_WORKLOAD, cacheKey);
  await generateWorkload(ctx, key, pods);
  const wl = ctx.caches.workloads.get(cacheKey);
  ctx.metrics?.observeAutoscale(key.namespace, key.name, wl && !wl.metadata.deletionTimestamp ? recommendedAndRequested(wl) : undefined);
  if (!wl || wl.metadata.deletionTimestamp) return;
  const replicas = (wl.spec as { replicas?: number } | undefined)?.replicas;
  await writeStatus(ctx.writer, RESOURCES.tensorfusionworkloads, wl, workloadStatus(pods, replicas, wl.status, ctx.now()));
}

/** The recommender's requests (status.autoscaling) against the spec's, per GPU; none before a recommendation. */
function recommendedAndRequested(wl: { spec?: TensorFusionWorkloadSpec; status?: TensorFusionWorkloadStatus }) {
  const rec = wl.status?.autoscaling?.recommendation?.requests;
  const req = wl.spec?.resources?.requests;
  if (!rec || !req) return undefined;
  return {
    recommended: { tflops: num(rec.tflops), vram: num(rec.vram) },
    requested: { tflops: num(req.tflops), vram: num(req.vram) },
  };
}

export const workloadReconciler: Reconciler<WorkloadKey> = { kind: 'workload', watches: workloadWatches, reconcile: reconcileWorkload };

/** Creates or updates the generated workload from the pods labelled for it (server-side apply). */
async function generateWorkload(ctx: ReconcileContext, key: WorkloadKey, pods: PodLike[]): Promise<void> {
  const workload = workloadCacheKey(key);
  const existing = ctx.caches.workloads.get(workload);
  if ((pods.length === 0 && !existing) || existing?.metadata.deletionTimestamp) return;
  const plan = await planGeneratedWorkload(key.namespace, key.name, pods, existing, cachedSettingsView(ctx.caches), ctx.topOwnerOf);
  if (plan.skipped) ctx.logger?.info({ workload }, plan.skipped);
  if (plan.apply) await ctx.writer.apply(RESOURCES.tensorfusionworkloads, plan.apply, { force: true });
  if (plan.delete) {
    ctx.logger?.info({ workload }, 'generated TensorFusionWorkload with no owner and no pod deleted');
    await ctx.writer.delete(RESOURCES.tensorfusionworkloads, { namespace: key.namespace, name: key.name });
  }
}

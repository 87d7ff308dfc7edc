/**
 * The quota reconciler: a GPUResourceQuota's status, counted from the records of its namespace's
 * pods, as ResourceQuota's `status.used`. It reports; the scheduler extender enforces (it also counts
 * the shares reserved for a bind to come, which no record shows yet). An Event marks usage crossing
 * the alert threshold.
 */
import type { GPUResourceQuota, GPUResourceQuotaStatus } from '../../api';
import { RESOURCES } from '../kube/resources';
import { INDEX_BY_NAMESPACE } from '../shared/caches';
import { setCondition } from '../shared/capacity';
import { QUOTA_RESOURCES, QuotaAmounts, quotaBounds, QuotaResource, recordedUsage, showAmount } from '../shared/quota';
import type { ReconcileContext, Reconciler } from './reconcile-context';
import { QuotaKey, quotaKey } from './queue-keys';
import type { Watches } from './watches';
import { writeStatus } from './write-status';

/** `12.5`: the percent of `bound` still free, to one decimal, as upstream writes it. */
function freePercent(used: number, bound: number): string {
  if (bound <= 0) return used > 0 ? '-100' : '0';
  return String(Math.round(((bound - used) / bound) * 1000) / 10);
}

/** The bounded totals at or above the alert threshold, in words: `TFLOPS requested 390 of 400`. */
function alerts(used: QuotaAmounts, total: Partial<QuotaAmounts>, thresholdPercent: number): string[] {
  return QUOTA_RESOURCES.flatMap((r) => {
    const bound = total[r];
    if (bound === undefined || used[r] * 100 < bound * thresholdPercent || (bound === 0 && used[r] === 0)) return [];
    return [`${r} ${showAmount(r, used[r])} of ${showAmount(r, bound)}`];
  });
}

/** The status of `quota` for what its namespace's pods record. */
export function quotaStatus(
  quota: GPUResourceQuota,
  used: QuotaAmounts,
  previous: GPUResourceQuotaStatus | undefined,
  now: string,
): GPUResourceQuotaStatus {
  const bounds = quotaBounds(quota);
  const show = (r: QuotaResource) => showAmount(r, used[r]);
  const free = (r: QuotaResource) => {
    const bound = bounds.total[r];
    return bound === undefined ? undefined : freePercent(used[r], bound);
  };
  const pair = (tflops: QuotaResource, vram: QuotaResource) => {
    const [t, v] = [free(tflops), free(vram)];
    return t === undefined && v === undefined
      ? undefined
      : { ...(t !== undefined ? { tflops: t } : {}), ...(v !== undefined ? { vram: v } : {}) };
  };
  const usedStatus = {
    requests: { tflops: show('requests.tflops'), vram: show('requests.vram') },
    limits: { tflops: show('limits.tflops'), vram: show('limits.vram') },
    workers: used.workers,
  };
  const [requests, limits, workers] = [pair('requests.tflops', 'requests.vram'), pair('limits.tflops', 'limits.vram'), free('workers')];
  const availablePercent = {
    ...(requests ? { requests } : {}),
    ...(limits ? { limits } : {}),
    ...(workers !== undefined ? { workers } : {}),
  };
  const over = alerts(used, bounds.total, bounds.alertThresholdPercent);
  let conditions = setCondition(
    previous?.conditions,
    { type: 'Ready', status: 'True', reason: 'UsageCounted', message: `${used.workers} GPU worker(s) counted` },
    now,
  );
  conditions = setCondition(
    conditions,
    over.length > 0
      ? {
          type: 'AlertThresholdReached',
          status: 'True',
          reason: 'AboveThreshold',
          message: `at or above ${bounds.alertThresholdPercent}%: ${over.join(', ')}`,
        }
      : {
          type: 'AlertThresholdReached',
          status: 'False',
          reason: 'BelowThreshold',
          message: `every total below ${bounds.alertThresholdPercent}%`,
        },
    now,
  );
  const changed = JSON.stringify(previous?.used) !== JSON.stringify(usedStatus);
  return {
    used: usedStatus,
    ...(Object.keys(availablePercent).length > 0 ? { availablePercent } : {}),
    conditions,
    // When the counts last changed (not when last reconciled, which would write every time).
    lastUpdateTime: changed || !previous?.lastUpdateTime ? now : previous.lastUpdateTime,
  };
}

export const quotaWatches: Watches<QuotaKey> = {
  for: { cache: 'quotas', keys: (q) => [quotaKey(q.metadata.namespace!, q.metadata.name!)] },
  watches: [
    {
      cache: 'pods',
      // Folded like the other pod-driven statuses: a burst of placements is one write per quota.
      delayed: true,
      keys: (p, caches) =>
        caches.quotas
          .list()
          .filter((q) => q.metadata.namespace === p.metadata.namespace)
          .map((q) => quotaKey(q.metadata.namespace!, q.metadata.name!)),
    },
  ],
};

/** Writes the quota's status; an Event when usage crosses its alert threshold. */
export async function reconcileQuotaStatus(ctx: ReconcileContext, { namespace, name }: QuotaKey): Promise<void> {
  const quota = ctx.caches.quotas.get(`${namespace}/${name}`);
  if (!quota || quota.metadata.deletionTimestamp) return ctx.metrics?.observeQuota(namespace, name);
  const used = recordedUsage(ctx.caches.pods.byIndex(INDEX_BY_NAMESPACE, namespace));
  const status = quotaStatus(quota, used, quota.status, ctx.now());
  ctx.metrics?.observeQuota(namespace, name, { used, hard: quotaBounds(quota).total });
  await writeStatus(ctx.writer, RESOURCES.gpuresourcequotas, quota, status as unknown as Record<string, unknown>);
  const alert = status.conditions?.find((c) => c.type === 'AlertThresholdReached');
  const was = quota.status?.conditions?.find((c) => c.type === 'AlertThresholdReached');
  if (alert?.status === 'True' && was?.status !== 'True') {
    await ctx.writer.recordEvent(quota, { type: 'Warning', reason: 'AlertThresholdReached', message: alert.message ?? '' });
  }
}

export const quotaReconciler: Reconciler<QuotaKey> = { kind: 'quota', watches: quotaWatches, reconcile: reconcileQuotaStatus };

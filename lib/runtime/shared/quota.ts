/**
 * Namespace GPU quotas (GPUResourceQuota): what a namespace's GPU shares add up to, the bounds its
 * quotas set, and the words a refusal uses. Pure: the extender counts shares as it places them
 * (extender/quota-ledger.ts), the status reconciler counts the pods' records, the webhook checks the
 * per-pod (`single`) bounds at admission.
 *
 * Amounts are whole numbers, so that adding and removing shares in any order gives the same sums:
 * milli-TFLOPS, bytes and pods. Usage rounds up and bounds down, so rounding never lets a share in. A share counts every GPU it takes: per-GPU amount × GPU count.
 * Every quota of a namespace applies (as ResourceQuota's do), each on its own.
 */
import { quotaWords } from './wait-reasons';
import { DEFAULT_QUOTA_ALERT_THRESHOLD_PERCENT, DEFAULT_QUOTA_MAX_WORKERS, GPUResourceQuota } from '../../api';
import type { Allocation } from '../../allocator';
import { formatBytes, parseQuantity } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import type { K8sObject } from '../kube/cluster';
import type { PodLike } from './capacity';
import { isTerminal } from './pod-lifecycle';
import { allocationOf } from './pod-share/record';
import { draShareOf } from './dra/pod-claim';

/** The totals a quota bounds, as ResourceQuota names its keys. */
export const QUOTA_RESOURCES = ['requests.tflops', 'requests.vram', 'limits.tflops', 'limits.vram', 'workers'] as const;
export type QuotaResource = (typeof QUOTA_RESOURCES)[number];

/** Amounts per resource: milli-TFLOPS, bytes, pods. */
export type QuotaAmounts = Record<QuotaResource, number>;

export const NO_USAGE: QuotaAmounts = Object.freeze({
  'requests.tflops': 0,
  'requests.vram': 0,
  'limits.tflops': 0,
  'limits.vram': 0,
  workers: 0,
});

/** Per-GPU amounts of one share (TFLOPS, bytes) and its GPU count. */
export interface ShareSize {
  readonly tflopsRequest: number;
  readonly tflopsLimit: number;
  readonly vramRequest: number;
  readonly vramLimit: number;
  readonly gpuCount: number;
}

/** TFLOPS in milli-TFLOPS, at 12 significant digits first (31.2 × 1000 is 31200.000000000004). */
const exactMilli = (tflops: number) => Number((tflops * 1000).toPrecision(12));
/**
 * A share's TFLOPS in whole milli-TFLOPS, rounded up: a share below one unit counts as one, so that
 * no number of tiny shares fits in a total they pass together.
 */
const milli = (tflops: number) => Math.ceil(exactMilli(tflops));
/** A bound's TFLOPS in whole milli-TFLOPS, rounded down (as usage rounds up: never more room than set). */
const milliBound = (tflops: number) => Math.floor(exactMilli(tflops));

/** What one share adds to its namespace: every GPU it takes, and one worker. */
export function shareUsage(s: ShareSize): QuotaAmounts {
  return {
    'requests.tflops': milli(s.tflopsRequest) * s.gpuCount,
    'requests.vram': Math.ceil(s.vramRequest) * s.gpuCount,
    'limits.tflops': milli(s.tflopsLimit) * s.gpuCount,
    'limits.vram': Math.ceil(s.vramLimit) * s.gpuCount,
    workers: 1,
  };
}

/** What a recorded or reserved share counts for: every GPU it holds. */
export function allocationUsage(a: Allocation): QuotaAmounts {
  return shareUsage({ ...a, gpuCount: a.gpuIds.length });
}

/**
 * What the recorded shares of `pods` add up to (pods that finished hold nothing; terminating ones still
 * do). A DRA pod has no allocation record (its GPU is in its claim): bound, it counts its share record.
 */
export function recordedUsage(pods: readonly PodLike[]): QuotaAmounts {
  let used = NO_USAGE;
  for (const p of pods) {
    if (isTerminal(p)) continue;
    const a = allocationOf(p as K8sObject);
    if (a && a.gpuIds.length > 0) used = addUsage(used, allocationUsage(a));
    const dra = !a && p.spec?.nodeName ? draShareOf(p as K8sObject) : undefined;
    if (dra) used = addUsage(used, shareUsage(dra));
  }
  return used;
}

/** `a + sign × b`, per resource. */
export function addUsage(a: QuotaAmounts, b: QuotaAmounts, sign: 1 | -1 = 1): QuotaAmounts {
  const out = { ...a };
  for (const r of QUOTA_RESOURCES) out[r] += sign * b[r];
  return out;
}

/** A GPUResourceQuota as far as bounds go. */
export type QuotaObject = Pick<GPUResourceQuota, 'metadata' | 'spec'>;

/** The per-pod bounds of a quota, per GPU (TFLOPS, bytes) and in GPUs. */
export interface SingleBounds {
  readonly tflopsRequest?: number;
  readonly tflopsLimit?: number;
  readonly vramRequest?: number;
  readonly vramLimit?: number;
  readonly gpuCount?: number;
}

/** A quota's bounds in the units of {@link QuotaAmounts}; a resource it does not bound is absent. */
export interface QuotaBounds {
  readonly name: string;
  readonly total: Partial<QuotaAmounts>;
  readonly single: SingleBounds;
  /** Usage at or above this percent of a bound raises the AlertThresholdReached condition. */
  readonly alertThresholdPercent: number;
}

const quantity = (v: string | number | undefined) => (v === undefined ? undefined : parseQuantity(v));
const defined = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/**
 * Bounds by quota object, read once: the extender asks at every filter and the webhook at every
 * admission, and a cached object is replaced on update, never changed.
 */
const boundsOf = new WeakMap<QuotaObject, QuotaBounds>();

/** The bounds a quota object sets (validated objects only: an unreadable quantity bounds nothing). */
export function quotaBounds(q: QuotaObject): QuotaBounds {
  let bounds = boundsOf.get(q);
  if (!bounds) boundsOf.set(q, (bounds = readBounds(q)));
  return bounds;
}

function readBounds(q: QuotaObject): QuotaBounds {
  const total = q.spec?.total;
  const single = q.spec?.single;
  const tflops = (v: string | number | undefined) => {
    const t = quantity(v);
    return t === undefined ? undefined : milliBound(t);
  };
  const bytes = (v: string | number | undefined) => {
    const b = quantity(v);
    return b === undefined ? undefined : Math.floor(b);
  };
  return {
    name: q.metadata.name ?? '',
    total: defined({
      'requests.tflops': tflops(total?.requests?.tflops),
      'requests.vram': bytes(total?.requests?.vram),
      'limits.tflops': tflops(total?.limits?.tflops),
      'limits.vram': bytes(total?.limits?.vram),
      workers: total?.maxWorkers ?? DEFAULT_QUOTA_MAX_WORKERS,
    }),
    single: defined({
      tflopsRequest: quantity(single?.maxRequests?.tflops),
      tflopsLimit: quantity(single?.maxLimits?.tflops),
      vramRequest: quantity(single?.maxRequests?.vram),
      vramLimit: quantity(single?.maxLimits?.vram),
      gpuCount: single?.maxGPUCount,
    }),
    alertThresholdPercent: total?.alertThresholdPercent ?? DEFAULT_QUOTA_ALERT_THRESHOLD_PERCENT,
  };
}

/** One bound a placement would pass: `would` of `of` (units of {@link QuotaAmounts}). */
export interface QuotaExcess {
  readonly quota: string;
  readonly resource: QuotaResource;
  readonly would: number;
  readonly of: number;
}

/**
 * The first bound of `quotas` that `used + adding` would pass. Only resources the share adds to
 * count: a namespace already over a lowered bound is not refused a share that adds nothing to it.
 */
export function totalExcess(used: QuotaAmounts, adding: QuotaAmounts, quotas: readonly QuotaBounds[]): QuotaExcess | undefined {
  for (const q of quotas) {
    for (const r of QUOTA_RESOURCES) {
      const of = q.total[r];
      if (of === undefined || adding[r] <= 0) continue;
      const would = used[r] + adding[r];
      if (would > of) return { quota: q.name, resource: r, would, of };
    }
  }
  return undefined;
}

/** An amount in the words of its resource: `420`, `96Gi`. */
export function showAmount(resource: QuotaResource, amount: number): string {
  if (resource === 'workers') return String(amount);
  return resource.endsWith('.vram') ? formatBytes(amount) : formatTflops(amount / 1000);
}

const WHAT: Record<QuotaResource, string> = {
  'requests.tflops': 'TFLOPS requested',
  'limits.tflops': 'TFLOPS of limits',
  'requests.vram': 'VRAM requested',
  'limits.vram': 'VRAM of limits',
  workers: 'GPU workers',
};

/** `namespace "ml" would use 420 of 400 TFLOPS requested (GPUResourceQuota "team-a")`. */
export function excessMessage(namespace: string, e: QuotaExcess): string {
  return `namespace ${JSON.stringify(namespace)} would use ${showAmount(e.resource, e.would)} of ${showAmount(e.resource, e.of)} ${WHAT[e.resource]} ${quotaWords(e.quota)}`;
}

/** One per-pod bound a share passes, with the bound's field in the quota. */
export interface SingleExcess {
  readonly quota: string;
  /** The share's amount: `tflopsRequest`, ..., `gpuCount`. */
  readonly amount: keyof SingleBounds;
  readonly value: number;
  readonly max: number;
  /** Where the bound is set, e.g. `single.maxRequests.tflops`. */
  readonly field: string;
}

const SINGLE_FIELDS: Record<keyof SingleBounds, string> = {
  tflopsRequest: 'single.maxRequests.tflops',
  tflopsLimit: 'single.maxLimits.tflops',
  vramRequest: 'single.maxRequests.vram',
  vramLimit: 'single.maxLimits.vram',
  gpuCount: 'single.maxGPUCount',
};

/** Every per-pod bound of `quotas` that a share passes (a pod that can never be placed there). */
export function singleExcesses(share: ShareSize, quotas: readonly QuotaBounds[]): SingleExcess[] {
  const out: SingleExcess[] = [];
  for (const q of quotas) {
    for (const amount of Object.keys(SINGLE_FIELDS) as (keyof SingleBounds)[]) {
      const max = q.single[amount];
      const value = share[amount];
      if (max !== undefined && value > max) out.push({ quota: q.name, amount, value, max, field: SINGLE_FIELDS[amount] });
    }
  }
  return out;
}

/** A per-pod amount in its words: `60` TFLOPS, `8Gi`, `4` GPUs. */
export function showSingle(amount: keyof SingleBounds, value: number): string {
  if (amount === 'gpuCount') return String(value);
  return amount.startsWith('vram') ? formatBytes(value) : formatTflops(value);
}

/**
 * Applying a recommendation to one share (per-GPU requests and limits): the webhook does it for a new
 * pod, the in-place resizer for a running one. One function for both, so a pod admitted after a
 * recommendation and a pod resized to it hold the same share. Pure.
 */
import { ANNOTATION } from '../annotations';
import { showQuantity } from '../annotations/check';
import type { TensorFusionWorkload } from '../api';
import { parseQuantity } from '../k8s/quantity';
import { TFLOPS_MAX, VRAM_MAX, VRAM_MIN } from '../model/limits';
import type { Resources } from './recommender';
import type { AutoscaleSettings } from '../api/autoscaling-settings';
import type { TargetResource } from '../api/autoscaling-formats';

/** The recommendation a TensorFusionWorkload's status holds (per GPU, as spec.resources). */
export type StatusRecommendation = NonNullable<NonNullable<NonNullable<TensorFusionWorkload['status']>['autoscaling']>['recommendation']>;

/** The recommendation in a workload's status as numbers (TFLOPS, bytes), when it is complete and parses. */
export function recommendationOf(wl: TensorFusionWorkload | undefined): Resources | undefined {
  const r = wl?.status?.autoscaling?.recommendation;
  const n = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? parseQuantity(v) : undefined);
  const out = {
    tflopsRequest: n(r?.requests?.tflops),
    tflopsLimit: n(r?.limits?.tflops),
    vramRequest: n(r?.requests?.vram),
    vramLimit: n(r?.limits?.vram),
  };
  return Object.values(out).every((v) => v !== undefined && Number.isFinite(v) && v >= 0) ? (out as Resources) : undefined;
}

/** Whether autoSetRequests or autoSetLimits is on: a recommendation is then applied to shares. */
export function appliesToShares(settings: AutoscaleSettings): boolean {
  return settings.requests.enable || settings.limits.enable;
}

const tunes = (enable: boolean, target: TargetResource, r: 'tflops' | 'vram') => enable && (target === 'all' || target === r);

/**
 * The share after applying `recommended` to `current`: requests where autoSetRequests tunes them,
 * limits where autoSetLimits does, the rest unchanged. Bounded by the rules every share keeps: a limit
 * is at least its request, TFLOPS at most {@link TFLOPS_MAX}, VRAM within {@link VRAM_MIN}..{@link VRAM_MAX},
 * VRAM whole bytes (rounded up).
 * @example applyRecommendation(settings, { tflopsRequest: 4, tflopsLimit: 8, vramRequest: 2 ** 30, vramLimit: 2 ** 31 }, current)
 */
export function applyRecommendation(settings: AutoscaleSettings, recommended: Resources, current: Resources): Resources {
  const { requests: rq, limits: lm } = settings;
  const tflops = (v: number) => Math.min(TFLOPS_MAX, Math.max(0, v));
  const vram = (v: number) => Math.min(VRAM_MAX, Math.max(VRAM_MIN, Math.ceil(v)));
  const tflopsRequest = tflops(tunes(rq.enable, rq.target, 'tflops') ? recommended.tflopsRequest : current.tflopsRequest);
  const vramRequest = vram(tunes(rq.enable, rq.target, 'vram') ? recommended.vramRequest : current.vramRequest);
  const tflopsLimit = tflops(tunes(lm.enable, lm.target, 'tflops') ? recommended.tflopsLimit : current.tflopsLimit);
  const vramLimit = vram(tunes(lm.enable, lm.target, 'vram') ? recommended.vramLimit : current.vramLimit);
  return { tflopsRequest, vramRequest, tflopsLimit: Math.max(tflopsLimit, tflopsRequest), vramLimit: Math.max(vramLimit, vramRequest) };
}

/** Whether two shares are the same (TFLOPS to the milli-TFLOPS the allocator counts in, VRAM to the byte). */
export function sameResources(a: Resources, b: Resources): boolean {
  const m = (v: number) => Math.round(v * 1000);
  return (
    m(a.tflopsRequest) === m(b.tflopsRequest) &&
    m(a.tflopsLimit) === m(b.tflopsLimit) &&
    Math.ceil(a.vramRequest) === Math.ceil(b.vramRequest) &&
    Math.ceil(a.vramLimit) === Math.ceil(b.vramLimit)
  );
}

const FIELDS: ReadonlyArray<readonly [keyof Resources, 'tflops' | 'vram']> = [
  ['tflopsRequest', 'tflops'],
  ['tflopsLimit', 'tflops'],
  ['vramRequest', 'vram'],
  ['vramLimit', 'vram'],
];

/**
 * Each amount that differs, named by its annotation and written as annotations are.
 * @example changedAmounts(a, { ...a, tflopsRequest: 4.5 }) // [{ key: 'tensor-fusion.ai/tflops-request', from: '10', to: '4.5' }]
 */
export function changedAmounts(from: Resources, to: Resources): Array<{ key: string; from: string; to: string }> {
  return FIELDS.filter(([f]) => !sameResources({ ...from, [f]: to[f] }, from)).map(([f, kind]) => ({
    key: ANNOTATION[f],
    from: showQuantity(kind, from[f]),
    to: showQuantity(kind, to[f]),
  }));
}

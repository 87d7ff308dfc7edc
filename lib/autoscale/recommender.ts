/**
 * Requests and limits from observed usage, the way VPA recommends them, for one workload (samples are
 * per worker and per GPU, as requests and limits are):
 * - TFLOPS is compressible: every sample goes into a decaying histogram weighted by the request in
 *   force, the request is a percentile of it plus a safety margin, and a limit above it absorbs bursts.
 * - VRAM is incompressible: only the peak of each aggregation window counts, the limit covers the
 *   highest recent peak, and an out-of-memory kill bumps the recommendation above the usage at the kill.
 * - Confidence grows with history; the upper bound is widened and the lower bound narrowed while it
 *   is low, as VPA does.
 * Pure: time is passed in, nothing is read or written.
 */
import { DecayingHistogram } from './histogram';
import { forecast, ForecastStat, Series } from './forecast';
import {
  AutoscaleSettings,
  LIMIT_PERCENTILE,
  LOWER_BOUND_PERCENTILE,
  PredictionSettings,
  UPPER_BOUND_PERCENTILE,
} from '../api/autoscaling-settings';

/** Requests and limits in force (TFLOPS, bytes). */
export interface Resources {
  readonly tflopsRequest: number;
  readonly tflopsLimit: number;
  readonly vramRequest: number;
  readonly vramLimit: number;
}

export interface Estimate {
  readonly lower: number;
  readonly target: number;
  readonly upper: number;
}

export interface Recommendation {
  /** What the requests and limits should be; fields whose block is disabled keep the value in force. */
  readonly resources: Resources;
  readonly tflops: Estimate;
  readonly vram: Estimate;
  /** History in units of the aggregation period (VPA: days). */
  readonly confidence: number;
  /** An out-of-memory kill is being compensated for. */
  readonly oomBump: boolean;
}

const MIB = 2 ** 20;
/** VPA: after an OOM kill, recommend at least 20 % or 100 MiB above the usage at the kill. */
const OOM_BUMP_RATIO = 1.2;
const OOM_MIN_BUMP_BYTES = 100 * MIB;
/** Usage at or above this share of the limit counts as pressure on it. */
const PRESSURE_SHARE = 0.95;
/** Step of the downsampled series the forecasting models read. */
const SERIES_STEP_S = 300;
/** Never recommend less than this (VPA has per-resource minimums too). */
const MIN_TFLOPS = 0.01;
const MIN_VRAM = 16 * MIB;

/** A max-per-step series kept for forecasting, trimmed to the history the model reads. */
class StepSeries {
  private startS: number | undefined;
  private readonly values: number[] = [];
  constructor(private readonly historyS: number) {}
  add(tS: number, v: number): void {
    this.startS ??= Math.floor(tS / SERIES_STEP_S) * SERIES_STEP_S;
    const i = Math.floor((tS - this.startS) / SERIES_STEP_S);
    if (i < 0) return;
    // Gaps (no sample in a step) repeat the last value.
    while (this.values.length < i) this.values.push(this.values.length ? this.values[this.values.length - 1] : v);
    if (this.values.length === i) this.values.push(v);
    else this.values[i] = Math.max(this.values[i], v);
    const keep = Math.ceil(this.historyS / SERIES_STEP_S) + 1;
    if (this.values.length > keep) {
      const drop = this.values.length - keep;
      this.values.splice(0, drop);
      this.startS += drop * SERIES_STEP_S;
    }
  }
  series(): Series | undefined {
    return this.startS === undefined ? undefined : { startS: this.startS, stepS: SERIES_STEP_S, values: this.values };
  }
}

/** Recent samples within a window, for the max over the last `windowS` seconds. */
class RecentMax {
  private readonly samples: { t: number; v: number }[] = [];
  constructor(private readonly windowS: number) {}
  add(t: number, v: number): void {
    this.samples.push({ t, v });
    while (this.samples.length && this.samples[0].t <= t - this.windowS) this.samples.shift();
  }
  max(): number {
    return this.samples.reduce((m, s) => Math.max(m, s.v), 0);
  }
}

export class ResourceRecommender {
  private readonly tflops: DecayingHistogram;
  private readonly vramPeaks: DecayingHistogram;
  private readonly tflopsSeries: StepSeries;
  private readonly vramSeries: StepSeries;
  private readonly recentTflops: RecentMax;
  private readonly recentVram: RecentMax;
  private firstS: number | undefined;
  private lastS = 0;
  private samples = 0;
  /** Samples with TFLOPS above zero: without one, nothing says the TFLOPS in force are too many. */
  private tflopsEvidence = 0;
  private stepS = 60;
  private windowStartS: number | undefined;
  private windowPeak = 0;
  private lastWindowPeak = 0;
  private oomFloor = 0;
  private oomAtS = -Infinity;

  /** @param initial the requests and limits the workload started with. */
  constructor(
    private readonly settings: AutoscaleSettings,
    private current: Resources,
  ) {
    const halfLifeS = settings.requests.aggregationS;
    this.tflops = new DecayingHistogram({ firstBucketSize: 0.01, maxValue: 10_000, halfLifeS });
    this.vramPeaks = new DecayingHistogram({ firstBucketSize: MIB, maxValue: 2 ** 42, halfLifeS });
    const historyS = Math.max(predictionOf(settings).historyS, settings.requests.aggregationS);
    this.tflopsSeries = new StepSeries(historyS);
    this.vramSeries = new StepSeries(historyS);
    this.recentTflops = new RecentMax(settings.limits.evaluationS);
    this.recentVram = new RecentMax(settings.limits.evaluationS);
  }

  /**
   * Records the usage of one worker at `tS`: TFLOPS in use (undefined when nothing measured them, as
   * for a share whose MPS daemon or pmon gave no figure) and VRAM bytes in use.
   */
  observe(tS: number, tflops: number | undefined, vramBytes: number): void {
    if (this.firstS === undefined) this.firstS = tS;
    else if (tS > this.lastS) this.stepS = Math.min(this.stepS, tS - this.lastS);
    this.lastS = Math.max(this.lastS, tS);
    this.samples++;
    if (tflops !== undefined) {
      // VPA weighs CPU samples by the request in force (min 0.1) so that big pods dominate the estimate.
      this.tflops.add(tflops, Math.max(this.current.tflopsRequest, 0.1), tS);
      this.tflopsSeries.add(tS, tflops);
      this.recentTflops.add(tS, tflops);
      if (tflops > 0) this.tflopsEvidence++;
    }
    this.vramSeries.add(tS, vramBytes);
    this.recentVram.add(tS, vramBytes);
    const windowS = this.settings.requests.aggregationS;
    this.windowStartS ??= tS;
    if (tS >= this.windowStartS + windowS) {
      this.vramPeaks.add(this.windowPeak, 1, this.windowStartS);
      this.lastWindowPeak = this.windowPeak;
      this.windowStartS += Math.floor((tS - this.windowStartS) / windowS) * windowS;
      this.windowPeak = 0;
    }
    this.windowPeak = Math.max(this.windowPeak, vramBytes);
  }

  /** Records an out-of-memory kill of a worker that was using `vramBytes`. */
  oom(tS: number, vramBytes: number): void {
    const bumped = Math.max(vramBytes * OOM_BUMP_RATIO, vramBytes + OOM_MIN_BUMP_BYTES);
    this.oomFloor = Math.max(this.oomFloor, bumped);
    this.oomAtS = tS;
    // VPA also feeds the bumped value to the peaks so that it outlives the current window.
    this.vramPeaks.add(bumped, 1, tS);
    this.windowPeak = Math.max(this.windowPeak, bumped);
  }

  /** Tells the recommender which requests and limits are now in force (weights, pressure). */
  applied(resources: Resources): void {
    this.current = resources;
  }

  /** History in aggregation periods: the lesser of the time spanned and the time covered by samples. */
  confidence(): number {
    if (this.firstS === undefined) return 0;
    const a = this.settings.requests.aggregationS;
    return Math.min((this.lastS - this.firstS + this.stepS) / a, (this.samples * this.stepS) / a);
  }

  recommend(nowS: number): Recommendation {
    const { requests, limits } = this.settings;
    const conf = this.confidence();
    const margin = 1 + requests.margin;
    const estimate = (h: DecayingHistogram, floor: number, min: number): Estimate => {
      const lower = Math.max(h.percentile(LOWER_BOUND_PERCENTILE) * margin, min);
      const target = Math.max(h.percentile(requests.percentile) * margin, floor, min);
      const upper = Math.max(h.percentile(UPPER_BOUND_PERCENTILE) * margin, floor, min);
      // VPA: upper * (1 + 1/confidence), lower * (1 + 0.001/confidence)^-2.
      return {
        lower: conf > 0 ? lower * (1 + 0.001 / conf) ** -2 : lower,
        target,
        upper: conf > 0 ? upper * (1 + 1 / conf) : upper,
      };
    };
    const oomActive = this.oomFloor > 0;
    const vramFloor = Math.max(this.windowPeak, this.lastWindowPeak) * margin;
    const tflops = estimate(this.tflops, 0, MIN_TFLOPS);
    const vram = estimate(this.vramPeaks, Math.max(vramFloor, this.oomFloor), MIN_VRAM);
    const reqForecast = this.forecast(requests.prediction, nowS, 'mean');
    const limForecast = this.forecast(limits.prediction, nowS, 'peak');

    const cur = this.current;
    // No TFLOPS sample above zero (all missing, as for a share the agent could not measure, or all zero, as a broken probe
    // reads): the TFLOPS in force stay, never lowered on the absence of data. VRAM is still tuned.
    const measured = (r: 'tflops' | 'vram') => r === 'vram' || this.tflopsEvidence > 0;
    const tunesReq = (r: 'tflops' | 'vram') => requests.enable && (requests.target === 'all' || requests.target === r) && measured(r);
    const tunesLim = (r: 'tflops' | 'vram') => limits.enable && (limits.target === 'all' || limits.target === r) && measured(r);

    const tflopsRequest = tunesReq('tflops') ? Math.max(tflops.target, (reqForecast?.tflops ?? 0) * margin) : cur.tflopsRequest;
    const vramRequest = tunesReq('vram') ? Math.max(vram.target, (reqForecast?.vram ?? 0) * margin) : cur.vramRequest;

    let tflopsLimit = cur.tflopsLimit;
    if (tunesLim('tflops')) {
      const buffer = 1 + limits.tflopsBuffer;
      // The limit covers 99 % of the decayed usage, widened while confidence is low, as VPA's upper bound.
      const covered = this.tflops.percentile(LIMIT_PERCENTILE) * (conf > 0 ? 1 + 1 / conf : 1);
      tflopsLimit = Math.max(this.recentTflops.max(), covered, limForecast?.tflops ?? 0) * buffer;
      // Usage pressing on the limit in force: grow it by one step (burst onto the same GPU).
      if (this.recentTflops.max() >= PRESSURE_SHARE * cur.tflopsLimit)
        tflopsLimit = Math.max(tflopsLimit, cur.tflopsLimit * (1 + limits.scaleUpStep));
      tflopsLimit = Math.min(tflopsLimit, tflopsRequest * limits.maxRatioToRequests);
    }
    let vramLimit = cur.vramLimit;
    if (tunesLim('vram')) {
      // Incompressible: cover the highest recent peak, the upper estimate, a forecast and any OOM bump.
      vramLimit = Math.max(vram.upper, this.recentVram.max() * margin, (limForecast?.vram ?? 0) * margin, vramFloor, this.oomFloor);
      vramLimit = Math.min(vramLimit, vramRequest * limits.maxRatioToRequests);
    }
    const resources: Resources = {
      tflopsRequest,
      vramRequest,
      tflopsLimit: Math.max(tflopsLimit, tflopsRequest),
      vramLimit: Math.max(vramLimit, vramRequest),
    };
    // The OOM floor is spent once a full aggregation window has passed without another kill.
    if (oomActive && nowS - this.oomAtS >= requests.aggregationS) this.oomFloor = 0;
    return { resources, tflops, vram, confidence: conf, oomBump: oomActive };
  }

  private forecast(p: PredictionSettings, nowS: number, stat: ForecastStat): { tflops: number; vram: number } | undefined {
    if (!p.enable) return undefined;
    const t = this.tflopsSeries.series();
    const v = this.vramSeries.series();
    const tflops = t && forecast(p.model, t, nowS, p.horizonS, stat);
    const vram = v && forecast(p.model, v, nowS, p.horizonS, stat);
    return { tflops: Math.max(0, tflops ?? 0), vram: Math.max(0, vram ?? 0) };
  }
}

function predictionOf(s: AutoscaleSettings): PredictionSettings {
  const a = s.requests.prediction;
  const b = s.limits.prediction;
  return a.historyS >= b.historyS ? a : b;
}

/**
 * The value to apply: `next` when it differs from `current` by more than `ignoredDelta` (relative),
 * else `current`. Increases of an incompressible resource pass `force` and are never held back.
 */
export function settle(current: number, next: number, ignoredDelta: number, force = false): number {
  if (force && next > current) return next;
  if (current <= 0) return next;
  return Math.abs(next - current) / current > ignoredDelta ? next : current;
}

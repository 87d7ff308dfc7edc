/**
 * A decaying histogram, the estimator of Kubernetes' Vertical Pod Autoscaler: exponentially growing
 * buckets, each sample added with a weight that doubles every `halfLifeS`, so that recent usage
 * counts more than old usage without a fixed window. Percentiles are read from the cumulative weight.
 *
 * Hand-written (about 80 lines) because no maintained npm package implements VPA's decaying
 * histogram; the bucket layout and the decay follow VPA's `util/histogram.go` and
 * `decaying_histogram.go` (first bucket, 5 % growth, weights relative to a reference time that
 * moves forward so that exponents stay small).
 */

/** Shape of the buckets. */
export interface HistogramOptions {
  /** Upper bound of the first bucket. */
  readonly firstBucketSize: number;
  /** Largest value kept apart; larger samples land in the last bucket. */
  readonly maxValue: number;
  /** Each bucket is this much wider than the previous one. @default 0.05 (VPA) */
  readonly growth?: number;
  /** Time after which a sample's weight halves, in seconds. */
  readonly halfLifeS: number;
}

/** Weights below this are treated as empty (VPA's epsilon). */
const EPSILON = 1e-10;
/** Move the reference time when the weight factor of a new sample would exceed 2^this. */
const MAX_DECAY_EXPONENT = 100;

export class DecayingHistogram {
  private readonly bounds: number[] = [];
  private readonly weights: number[];
  private total = 0;
  private referenceS: number | undefined;

  constructor(private readonly opts: HistogramOptions) {
    const growth = opts.growth ?? 0.05;
    // Bucket i ends at first * ((1+g)^(i+1) - 1) / g, as VPA's exponential histogram.
    for (let i = 0; ; i++) {
      const end = (opts.firstBucketSize * ((1 + growth) ** (i + 1) - 1)) / growth;
      this.bounds.push(end);
      if (end >= opts.maxValue) break;
    }
    this.weights = new Array(this.bounds.length).fill(0);
  }

  private bucketOf(value: number): number {
    let lo = 0;
    let hi = this.bounds.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.bounds[mid] >= value) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** Adds `value` seen at `timeS` (seconds) with `weight` (e.g. the request at that time). */
  add(value: number, weight: number, timeS: number): void {
    if (!(weight > 0) || !Number.isFinite(value)) return;
    this.referenceS ??= timeS;
    let exponent = (timeS - this.referenceS) / this.opts.halfLifeS;
    if (exponent > MAX_DECAY_EXPONENT) {
      this.shiftReference(timeS);
      exponent = 0;
    }
    const w = weight * 2 ** exponent;
    this.weights[this.bucketOf(Math.max(0, value))] += w;
    this.total += w;
  }

  /** Rescales every weight to a new reference time (results are unchanged). */
  private shiftReference(timeS: number): void {
    const factor = 2 ** ((this.referenceS! - timeS) / this.opts.halfLifeS);
    for (let i = 0; i < this.weights.length; i++) this.weights[i] *= factor;
    this.total *= factor;
    this.referenceS = timeS;
  }

  isEmpty(): boolean {
    return this.total < EPSILON;
  }

  /**
   * The value below which `p` (0..1) of the weight lies: the upper bound of the bucket where the
   * cumulative weight reaches `p` (VPA reports bucket ends, which errs on the generous side).
   */
  percentile(p: number): number {
    if (this.isEmpty()) return 0;
    const threshold = p * this.total;
    let sum = 0;
    let last = 0;
    for (let i = 0; i < this.weights.length; i++) {
      if (this.weights[i] <= 0) continue;
      sum += this.weights[i];
      last = i;
      if (sum >= threshold) return this.bounds[i];
    }
    // Rounding can leave the sum a hair under the total for p = 1.
    return this.bounds[last];
  }
}

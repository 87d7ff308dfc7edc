/** The pure recommender: decaying histogram, forecasts, requests/limits with OOM bump, replicas. */
import { decodeAutoScalingConfig } from '../../lib/api/autoscaling-settings';
import { DecayingHistogram, forecast, ReplicaRecommender, ResourceRecommender, Resources, settle } from '../../lib/autoscale';
import type { AutoScalingConfig } from '../../lib/api/workload-profile';

const GIB = 2 ** 30;
const HOUR = 3600;
const settingsOf = (config: AutoScalingConfig) => {
  const { settings, issues } = decodeAutoScalingConfig(config);
  expect(issues).toEqual([]);
  return settings;
};

describe('DecayingHistogram', () => {
  it('reads percentiles as bucket ends within 5 % of the value', () => {
    const h = new DecayingHistogram({ firstBucketSize: 0.01, maxValue: 1000, halfLifeS: HOUR });
    for (let v = 1; v <= 100; v++) h.add(v, 1, 0);
    expect(h.percentile(0.5)).toBeGreaterThanOrEqual(50);
    expect(h.percentile(0.5)).toBeLessThan(50 * 1.06);
    expect(h.percentile(1)).toBeGreaterThanOrEqual(100);
  });
  it('halves the weight of a sample every half-life, so recent usage wins', () => {
    const h = new DecayingHistogram({ firstBucketSize: 0.01, maxValue: 1000, halfLifeS: HOUR });
    h.add(10, 1, 0);
    h.add(100, 1, 2 * HOUR); // weight 4 against 1
    expect(h.percentile(0.21)).toBeGreaterThanOrEqual(100);
    expect(h.percentile(0.19)).toBeLessThan(11);
  });
  it('keeps its results when the reference time moves far forward', () => {
    const h = new DecayingHistogram({ firstBucketSize: 0.01, maxValue: 1000, halfLifeS: 1 });
    h.add(5, 1, 0);
    h.add(50, 1, 500); // exponent 500: the reference shifts
    expect(h.percentile(0.5)).toBeGreaterThanOrEqual(50);
    expect(h.isEmpty()).toBe(false);
  });
});

describe('forecast', () => {
  const day = Array.from({ length: 48 }, (_, i) => (i % 24 === 14 ? 20 : 5)); // hourly, peak at 14:00 both days
  const series = { startS: 0, stepS: HOUR, values: day };
  it('seasonal-naive repeats yesterday: the 14:00 peak is foreseen an hour ahead', () => {
    expect(forecast('seasonal-naive', series, 48 * HOUR + 13 * HOUR, HOUR, 'peak')).toBe(20);
    expect(forecast('seasonal-naive', series, 48 * HOUR + 2 * HOUR, HOUR, 'peak')).toBe(5);
  });
  it('seasonal-naive needs a day of history', () => {
    expect(forecast('seasonal-naive', { startS: 0, stepS: HOUR, values: [1, 2] }, 2 * HOUR, HOUR, 'peak')).toBeUndefined();
  });
  it('linear-trend extrapolates a leak', () => {
    const leak = { startS: 0, stepS: HOUR, values: [1, 2, 3, 4] };
    expect(forecast('linear-trend', leak, 3 * HOUR, 2 * HOUR, 'peak')).toBeCloseTo(6);
    expect(forecast('linear-trend', leak, 3 * HOUR, 2 * HOUR, 'mean')).toBeCloseTo(5);
  });
});

describe('ResourceRecommender', () => {
  const start: Resources = { tflopsRequest: 20, tflopsLimit: 40, vramRequest: 10 * GIB, vramLimit: 10 * GIB };
  const config: AutoScalingConfig = {
    autoSetRequests: { enable: true, aggregationPeriod: '1h', extraBufferRatio: '0.1' },
    autoSetLimits: { enable: true, maxRatioToRequests: '3.0' },
  };
  it('recommends the percentile plus margin as request and a limit above the usage, capped by maxRatioToRequests', () => {
    const r = new ResourceRecommender(settingsOf(config), start);
    for (let t = 0; t < 6 * HOUR; t += 60) r.observe(t, t % 600 === 0 ? 12 : 8, 4 * GIB);
    const rec = r.recommend(6 * HOUR);
    expect(rec.resources.tflopsRequest).toBeGreaterThanOrEqual(8 * 1.1);
    expect(rec.resources.tflopsRequest).toBeLessThan(8 * 1.1 * 1.06);
    expect(rec.resources.tflopsLimit).toBeGreaterThanOrEqual(12);
    expect(rec.resources.tflopsLimit).toBeLessThanOrEqual(rec.resources.tflopsRequest * 3);
    expect(rec.resources.vramLimit).toBeGreaterThanOrEqual(4 * GIB * 1.1);
    expect(rec.confidence).toBeCloseTo(6, 0);
  });
  it('widens the upper bound while confidence is low', () => {
    const r = new ResourceRecommender(settingsOf(config), start);
    for (let t = 0; t < 10 * 60; t += 60) r.observe(t, 8, 4 * GIB);
    const early = r.recommend(600);
    for (let t = 600; t < 10 * HOUR; t += 60) r.observe(t, 8, 4 * GIB);
    const late = r.recommend(10 * HOUR);
    expect(early.confidence).toBeLessThan(late.confidence);
    expect(early.tflops.upper / early.tflops.target).toBeGreaterThan(late.tflops.upper / late.tflops.target);
  });
  it('after an OOM kill, recommends at least 20 % or 100 MiB above the usage at the kill', () => {
    const r = new ResourceRecommender(settingsOf(config), start);
    for (let t = 0; t < HOUR; t += 60) r.observe(t, 8, 4 * GIB);
    r.oom(HOUR, 6 * GIB);
    const rec = r.recommend(HOUR + 60);
    expect(rec.oomBump).toBe(true);
    expect(rec.resources.vramLimit).toBeGreaterThanOrEqual(6 * GIB * 1.2);
    expect(rec.resources.vramRequest).toBeGreaterThanOrEqual(6 * GIB * 1.2);
  });
  it('leaves requests and limits of disabled blocks and other target resources as they are', () => {
    const r = new ResourceRecommender(settingsOf({ autoSetRequests: { enable: true, targetResource: 'vram' } }), start);
    for (let t = 0; t < HOUR; t += 60) r.observe(t, 8, 4 * GIB);
    const rec = r.recommend(HOUR);
    expect(rec.resources.tflopsRequest).toBe(20);
    expect(rec.resources.tflopsLimit).toBe(40);
    expect(rec.resources.vramRequest).toBeLessThan(10 * GIB);
  });
  it('never lowers TFLOPS on missing or zero compute data (a share the agent could not measure, a broken probe); VRAM is still tuned', () => {
    for (const tflops of [undefined, 0]) {
      const r = new ResourceRecommender(settingsOf(config), start);
      for (let t = 0; t < 6 * HOUR; t += 60) r.observe(t, tflops, 4 * GIB);
      const rec = r.recommend(6 * HOUR);
      expect([tflops, rec.resources.tflopsRequest, rec.resources.tflopsLimit]).toEqual([tflops, 20, 40]);
      expect(rec.resources.vramRequest).toBeLessThan(10 * GIB);
      expect(rec.resources.vramRequest).toBeGreaterThanOrEqual(4 * GIB * 1.1);
    }
    // One measured sample above zero is evidence: low usage then lowers the request.
    const r = new ResourceRecommender(settingsOf(config), start);
    for (let t = 0; t < 6 * HOUR; t += 60) r.observe(t, t === 0 ? 1 : 0, 4 * GIB);
    expect(r.recommend(6 * HOUR).resources.tflopsRequest).toBeLessThan(20);
  });
  it('grows a TFLOPS limit by scaleUpStep while usage presses on it', () => {
    const r = new ResourceRecommender(
      settingsOf({ ...config, autoSetLimits: { enable: true, scaleUpStep: '0.5', maxRatioToRequests: '10.0' } }),
      { ...start, tflopsLimit: 10 },
    );
    for (let t = 0; t < HOUR; t += 60) r.observe(t, 9.8, 4 * GIB);
    expect(r.recommend(HOUR).resources.tflopsLimit).toBeGreaterThanOrEqual(15);
  });
});

describe('settle (ignoredDeltaRange)', () => {
  it('ignores relative changes within the range unless an incompressible increase is forced', () => {
    expect(settle(10, 10.4, 0.05)).toBe(10);
    expect(settle(10, 11, 0.05)).toBe(11);
    expect(settle(10, 10.4, 0.05, true)).toBe(10.4);
    expect(settle(10, 9.6, 0.05, true)).toBe(10);
  });
});

describe('ReplicaRecommender', () => {
  const replicas = settingsOf({
    autoSetReplicas: {
      enable: true,
      targetTFlopsOfLimits: '0.8',
      scaleUpStep: '0.5',
      scaleDownStep: '0.5',
      scaleUpCoolDownTime: '2m',
      scaleDownCoolDownTime: '10m',
    },
  }).replicas;
  const input = { current: 2, limitPerReplica: 40, min: 1, max: 6 };
  it('scales up by at most scaleUpStep (at least one replica) and respects the bounds', () => {
    const r = new ReplicaRecommender(replicas);
    expect(r.decide({ ...input, nowS: 0, usageTflops: 300 })).toEqual({ replicas: 3, reason: 'scale-up', desired: 6 });
    expect(r.decide({ ...input, current: 3, nowS: 60, usageTflops: 300 }).reason).toBe('cooldown');
    expect(r.decide({ ...input, current: 3, nowS: 120, usageTflops: 300 })).toEqual({ replicas: 5, reason: 'scale-up', desired: 6 });
  });
  it('holds the count on missing or zero usage, within the bounds, and learns nothing from it', () => {
    const r = new ReplicaRecommender(replicas);
    for (const usageTflops of [undefined, 0]) {
      expect(r.decide({ ...input, current: 4, nowS: 900, usageTflops })).toEqual({ replicas: 4, reason: 'no-compute-data', desired: 4 });
      expect(r.decide({ ...input, current: 8, nowS: 900, usageTflops }).replicas).toBe(6);
    }
    // The held decisions left no desire in the window: a later measured dip is judged on its own.
    expect(r.decide({ ...input, current: 4, nowS: 1_000, usageTflops: 10 })).toMatchObject({ replicas: 2, reason: 'scale-down' });
  });
  it('stays within the 10 % tolerance', () => {
    const r = new ReplicaRecommender(replicas);
    expect(r.decide({ ...input, nowS: 0, usageTflops: 2 * 40 * 0.8 * 1.08 }).reason).toBe('within-tolerance');
  });
  it('scales down only after the cooldown and when the whole window wanted fewer', () => {
    const r = new ReplicaRecommender(replicas);
    r.decide({ ...input, current: 2, nowS: 0, usageTflops: 200 }); // up to 3
    expect(r.decide({ ...input, current: 3, nowS: 300, usageTflops: 10 }).reason).toBe('cooldown');
    expect(r.decide({ ...input, current: 3, nowS: 600, usageTflops: 10 })).toMatchObject({ replicas: 2, reason: 'scale-down' });
  });
  it('does not scale down on a dip when the window still wanted more', () => {
    const r = new ReplicaRecommender(replicas);
    r.decide({ ...input, current: 4, nowS: 0, usageTflops: 4 * 32 });
    r.decide({ ...input, current: 4, nowS: 540, usageTflops: 4 * 32 });
    expect(r.decide({ ...input, current: 4, nowS: 600, usageTflops: 10 }).reason).toBe('stabilising');
  });
});

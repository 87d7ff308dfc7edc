/** Seed 003 autoScalingConfig string formats: the schema (CRD pattern) and the codec, with exact messages. */
import { validateSpec } from '../../lib/api/validate';
import { AUTOSCALE_DEFAULTS, decodeAutoScalingConfig } from '../../lib/api/autoscaling-settings';
import {
  formatDuration,
  parseDuration,
  parseFraction,
  parseMultiplier,
  parsePercentile,
  parseRatio,
} from '../../lib/api/autoscaling-formats';
import { exampleWorkloadProfile } from '../support/api-examples';

const P = 'spec.autoScalingConfig';

describe('formats', () => {
  it.each([
    ['30s', 30],
    ['5m', 300],
    ['1h30m', 5400],
    ['7d', 604800],
    ['0s', 0],
  ])('duration %s is %d s', (input, seconds) => {
    expect(parseDuration(input)).toBe(seconds);
  });
  it.each(['5', '5 m', '1.5h', '-1m', '1w', '', 'm5'])('duration %j is refused', (input) => {
    expect(parseDuration(input)).toBeUndefined();
  });
  it('formats durations with the largest exact unit', () => {
    expect([formatDuration(5400), formatDuration(86400), formatDuration(45)]).toEqual(['90m', '1d', '45s']);
  });
  it('reads ratios, fractions, percentiles and multipliers as decimals or percentages', () => {
    expect([parseRatio('0.2'), parseRatio('20%'), parseRatio('1.5'), parseRatio('-0.1'), parseRatio('x')]).toEqual([
      0.2,
      0.2,
      1.5,
      undefined,
      undefined,
    ]);
    expect([parseFraction('0.8'), parseFraction('80%'), parseFraction('1'), parseFraction('1.5'), parseFraction('101%')]).toEqual([
      0.8,
      0.8,
      1,
      undefined,
      undefined,
    ]);
    expect([parsePercentile('0.95'), parsePercentile('95%'), parsePercentile('95')]).toEqual([0.95, 0.95, undefined]);
    expect([parseMultiplier('5.0'), parseMultiplier('1'), parseMultiplier('0.5')]).toEqual([5, 1, undefined]);
  });
});

describe('schema: every seed 003 field has a format and an exact message', () => {
  const spec = (autoScalingConfig: unknown) => ({ autoScalingConfig });
  it.each([
    [
      { autoSetRequests: { aggregationPeriod: '1 day' } },
      `${P}.autoSetRequests.aggregationPeriod: got "1 day", expected a duration such as 30s, 5m, 1h30m or 7d (units s, m, h, d)`,
    ],
    [
      { autoSetRequests: { evaluationPeriod: '2w' } },
      `${P}.autoSetRequests.evaluationPeriod: got "2w", expected a duration such as 30s, 5m, 1h30m or 7d (units s, m, h, d)`,
    ],
    [
      { autoSetRequests: { extraBufferRatio: '-0.1' } },
      `${P}.autoSetRequests.extraBufferRatio: got "-0.1", expected a non-negative ratio such as 0.2 or 20%`,
    ],
    [
      { autoSetRequests: { percentileForAutoRequests: '95' } },
      `${P}.autoSetRequests.percentileForAutoRequests: got "95", expected a percentile from 0 to 1 such as 0.95, or a percentage such as 95%`,
    ],
    [{ autoSetRequests: { targetResource: 'gpu' } }, `${P}.autoSetRequests.targetResource: got "gpu", expected one of tflops, vram, all`],
    [
      { autoSetRequests: { prediction: { model: 'lstm' } } },
      `${P}.autoSetRequests.prediction.model: got "lstm", expected one of seasonal-naive, linear-trend`,
    ],
    [
      { autoSetRequests: { prediction: { historyDataPeriod: '7 days' } } },
      `${P}.autoSetRequests.prediction.historyDataPeriod: got "7 days", expected a duration such as 30s, 5m, 1h30m or 7d (units s, m, h, d)`,
    ],
    [
      { autoSetLimits: { predictionPeriod: '1h' } },
      `${P}.autoSetLimits.predictionPeriod: got "1h", expected a known field of ${P}.autoSetLimits: enable, evaluationPeriod, extraTFlopsBufferRatio, ignoredDeltaRange, maxRatioToRequests, prediction, scaleUpStep, targetResource`,
    ],
    [
      { autoSetLimits: { maxRatioToRequests: '0.5' } },
      `${P}.autoSetLimits.maxRatioToRequests: got "0.5", expected a multiplier of at least 1 such as 5.0`,
    ],
    [
      { autoSetLimits: { ignoredDeltaRange: '1.5' } },
      `${P}.autoSetLimits.ignoredDeltaRange: got "1.5", expected a ratio from 0 to 1 such as 0.8 or 80%`,
    ],
    [
      { autoSetLimits: { extraTFlopsBufferRatio: 'ten' } },
      `${P}.autoSetLimits.extraTFlopsBufferRatio: got "ten", expected a non-negative ratio such as 0.2 or 20%`,
    ],
    [{ autoSetLimits: { scaleUpStep: '0' } }, `${P}.autoSetLimits.scaleUpStep: got "0", expected a ratio above 0 such as 0.2 or 20%`],
    [
      { autoSetLimits: { evaluationPeriod: '0s' } },
      `${P}.autoSetLimits.evaluationPeriod: got "0s", expected a duration above zero such as 30s`,
    ],
    [
      { autoSetReplicas: { targetTFlopsOfLimits: '0' } },
      `${P}.autoSetReplicas.targetTFlopsOfLimits: got "0", expected a ratio above 0 and at most 1 such as 0.8 or 80%`,
    ],
    [
      { autoSetReplicas: { targetTFlopsOfLimits: '120%' } },
      `${P}.autoSetReplicas.targetTFlopsOfLimits: got "120%", expected a ratio from 0 to 1 such as 0.8 or 80%`,
    ],
    [
      { autoSetReplicas: { scaleDownStep: '0%' } },
      `${P}.autoSetReplicas.scaleDownStep: got "0%", expected a ratio above 0 and at most 1 such as 0.5 or 50%`,
    ],
    [
      { autoSetReplicas: { scaleUpStep: '0.0' } },
      `${P}.autoSetReplicas.scaleUpStep: got "0.0", expected a ratio above 0 such as 0.5 or 50%`,
    ],
    [
      { autoSetReplicas: { scaleUpCoolDownTime: '1min' } },
      `${P}.autoSetReplicas.scaleUpCoolDownTime: got "1min", expected a duration such as 30s, 5m, 1h30m or 7d (units s, m, h, d)`,
    ],
    [
      { autoSetReplicas: { scaleDownCoolDownTime: 300 } },
      `${P}.autoSetReplicas.scaleDownCoolDownTime: got 300, expected a duration such as 30s, 5m, 1h30m or 7d (units s, m, h, d)`,
    ],
  ])('%j', (config, message) => {
    expect(validateSpec('WorkloadProfile', spec(config)).map((i) => i.message)).toEqual([message]);
  });

  it('accepts the seed example and every format variant', () => {
    expect(validateSpec('WorkloadProfile', exampleWorkloadProfile().spec)).toEqual([]);
    const config = {
      autoSetRequests: { enable: true, percentileForAutoRequests: '95%', extraBufferRatio: '10%', aggregationPeriod: '1h30m' },
      autoSetLimits: { enable: true, ignoredDeltaRange: '0', maxRatioToRequests: '1', scaleUpStep: '1.5' },
      autoSetReplicas: { enable: true, targetTFlopsOfLimits: '1', scaleUpCoolDownTime: '0s' },
    };
    expect(validateSpec('TensorFusionWorkload', spec(config))).toEqual([]);
  });
});

describe('codec', () => {
  it('applies the defaults (VPA and HPA values) to absent fields and leaves absent blocks disabled', () => {
    const { settings, issues } = decodeAutoScalingConfig({ autoSetRequests: { enable: true } });
    expect(issues).toEqual([]);
    expect(settings.requests).toMatchObject({
      enable: true,
      percentile: 0.9,
      margin: 0.15,
      aggregationS: 86400,
      historyS: 8 * 86400,
      target: 'all',
    });
    expect(settings.limits.enable).toBe(false);
    expect(settings.replicas).toMatchObject({ enable: false, targetOfLimits: 0.8, scaleUpCooldownS: 60, scaleDownCooldownS: 300 });
    expect(AUTOSCALE_DEFAULTS.prediction.model).toBe('seasonal-naive');
  });
  it('reports every bad field without throwing and keeps the defaults for them', () => {
    const { settings, issues } = decodeAutoScalingConfig(
      { autoSetRequests: { prediction: { model: 'prophet' as never } }, autoSetReplicas: { scaleUpStep: '0' } },
      'autoScalingConfig',
    );
    expect(issues.map((i) => i.message)).toEqual([
      'autoScalingConfig.autoSetRequests.prediction.model: got "prophet", expected one of seasonal-naive, linear-trend',
      'autoScalingConfig.autoSetReplicas.scaleUpStep: got "0", expected a ratio above 0 such as 0.5 or 50%',
    ]);
    expect(settings.replicas.scaleUpStep).toBe(1);
  });
});

/** Applying a recommendation to one share: which fields each block tunes, and the bounds every share keeps. */
import { applyRecommendation, recommendationOf, sameResources } from '../../lib/autoscale';
import { decodeAutoScalingConfig } from '../../lib/api/autoscaling-settings';
import type { TensorFusionWorkload } from '../../lib/api';

const GiB = 2 ** 30;
const current = { tflopsRequest: 10, tflopsLimit: 20, vramRequest: 8 * GiB, vramLimit: 8 * GiB };
const rec = { tflopsRequest: 4.5, tflopsLimit: 9, vramRequest: 2 * GiB, vramLimit: 3 * GiB };
const settings = (config: object) => decodeAutoScalingConfig(config).settings;

test.each([
  ['both blocks, all resources', { autoSetRequests: { enable: true }, autoSetLimits: { enable: true } }, rec],
  [
    'requests only',
    { autoSetRequests: { enable: true } },
    { tflopsRequest: 4.5, tflopsLimit: 20, vramRequest: 2 * GiB, vramLimit: 8 * GiB },
  ],
  [
    'limits only: a limit never goes below the request',
    { autoSetLimits: { enable: true } },
    { tflopsRequest: 10, tflopsLimit: 10, vramRequest: 8 * GiB, vramLimit: 8 * GiB },
  ],
  ['requests of vram only', { autoSetRequests: { enable: true, targetResource: 'vram' } }, { ...current, vramRequest: 2 * GiB }],
  [
    'limits of tflops only',
    { autoSetRequests: { enable: true }, autoSetLimits: { enable: true, targetResource: 'tflops' } },
    { tflopsRequest: 4.5, tflopsLimit: 9, vramRequest: 2 * GiB, vramLimit: 8 * GiB },
  ],
  ['neither', {}, current],
])('%s', (_name, config, expected) => {
  expect(applyRecommendation(settings(config), rec, current)).toEqual(expected);
});

test('bounds: VRAM at least 1Mi and whole bytes, TFLOPS at most 100000', () => {
  const s = settings({ autoSetRequests: { enable: true }, autoSetLimits: { enable: true } });
  expect(
    applyRecommendation(s, { tflopsRequest: 2e5, tflopsLimit: 3e5, vramRequest: 10, vramLimit: 1.5 * 2 ** 20 + 0.5 }, current),
  ).toEqual({ tflopsRequest: 100_000, tflopsLimit: 100_000, vramRequest: 2 ** 20, vramLimit: 1.5 * 2 ** 20 + 1 });
});

test('recommendationOf parses the status quantities, and nothing when any is missing', () => {
  const wl = (recommendation: unknown) =>
    ({ status: { workerCount: 1, autoscaling: { recommendation } } }) as unknown as TensorFusionWorkload;
  expect(recommendationOf(wl({ requests: { tflops: '4.5', vram: '2Gi' }, limits: { tflops: '9', vram: '3072Mi' } }))).toEqual(rec);
  expect(recommendationOf(wl({ requests: { tflops: '4.5' }, limits: { tflops: '9', vram: '3Gi' } }))).toBeUndefined();
  expect(recommendationOf(undefined)).toBeUndefined();
  expect(sameResources(rec, { ...rec, tflopsRequest: 4.5004 })).toBe(true);
  expect(sameResources(rec, { ...rec, vramLimit: rec.vramLimit + 1 })).toBe(false);
});

/**
 * Namespace quota arithmetic: what a share counts for, the bounds a GPUResourceQuota sets, which bound
 * a placement would pass, and the exact words of a refusal.
 */
import type { GPUResourceQuota } from '../../../lib/api';
import { addUsage, excessMessage, NO_USAGE, quotaBounds, shareUsage, singleExcesses, totalExcess } from '../../../lib/runtime/shared/quota';

const GiB = 2 ** 30;

function quota(name: string, spec: GPUResourceQuota['spec']): GPUResourceQuota {
  return { apiVersion: 'tensor-fusion.ai/v1', kind: 'GPUResourceQuota', metadata: { name, namespace: 'ml' }, spec };
}

const SHARE = { tflopsRequest: 10.5, tflopsLimit: 21, vramRequest: 4 * GiB, vramLimit: 8 * GiB, gpuCount: 2 };

describe('shareUsage', () => {
  test('counts every GPU of the share, in milli-TFLOPS and bytes, as one worker', () => {
    expect(shareUsage(SHARE)).toEqual({
      'requests.tflops': 21_000,
      'limits.tflops': 42_000,
      'requests.vram': 8 * GiB,
      'limits.vram': 16 * GiB,
      workers: 1,
    });
  });

  test('adding and removing in any order comes back to nothing (whole units, no float drift)', () => {
    const shares = [0.1, 0.2, 0.3, 12.7, 99.9].map((t) => shareUsage({ ...SHARE, tflopsRequest: t, gpuCount: 1 }));
    let used = NO_USAGE;
    for (const s of shares) used = addUsage(used, s);
    for (const s of [...shares].reverse()) used = addUsage(used, s, -1);
    expect(used).toEqual(NO_USAGE);
  });
});

describe('quotaBounds', () => {
  test('reads quantities and fills the schema defaults', () => {
    const b = quotaBounds(
      quota('team-a', {
        total: { requests: { tflops: '400', vram: '96Gi' }, limits: { tflops: 800 } },
        single: { maxRequests: { tflops: '50' }, maxLimits: { vram: '16Gi' }, maxGPUCount: 4 },
      }),
    );
    expect(b).toEqual({
      name: 'team-a',
      total: { 'requests.tflops': 400_000, 'requests.vram': 96 * GiB, 'limits.tflops': 800_000, workers: 32768 },
      single: { tflopsRequest: 50, vramLimit: 16 * GiB, gpuCount: 4 },
      alertThresholdPercent: 95,
    });
  });
});

describe('totalExcess and its message', () => {
  const bounds = [
    quotaBounds(quota('team-a', { total: { requests: { tflops: '400' } } })),
    quotaBounds(quota('team-b', { total: { maxWorkers: 2, limits: { vram: '64Gi' } } })),
  ];

  test('the first bound of any quota that the namespace would pass, in the words of the issue', () => {
    const used = { ...NO_USAGE, 'requests.tflops': 399_000, workers: 1 };
    const e = totalExcess(used, shareUsage(SHARE), bounds);
    expect(e).toEqual({ quota: 'team-a', resource: 'requests.tflops', would: 420_000, of: 400_000 });
    expect(excessMessage('ml', e!)).toBe('namespace "ml" would use 420 of 400 TFLOPS requested (GPUResourceQuota "team-a")');
  });

  test('workers and VRAM say their own units', () => {
    const workers = totalExcess({ ...NO_USAGE, workers: 2 }, shareUsage({ ...SHARE, gpuCount: 1 }), bounds);
    expect(excessMessage('ml', workers!)).toBe('namespace "ml" would use 3 of 2 GPU workers (GPUResourceQuota "team-b")');
    const vram = totalExcess({ ...NO_USAGE, 'limits.vram': 60 * GiB }, shareUsage({ ...SHARE, gpuCount: 1 }), bounds.slice(1));
    expect(excessMessage('ml', vram!)).toBe('namespace "ml" would use 68Gi of 64Gi VRAM of limits (GPUResourceQuota "team-b")');
  });

  test('room to the exact bound passes; a namespace over a lowered bound is refused only what adds to it', () => {
    const exact = { ...NO_USAGE, 'requests.tflops': 379_000 };
    expect(totalExcess(exact, shareUsage(SHARE), bounds.slice(0, 1))).toBeUndefined();
    const over = { ...NO_USAGE, 'requests.tflops': 500_000 };
    const addsNoTflops = { ...NO_USAGE, 'requests.vram': GiB, workers: 1 };
    expect(totalExcess(over, addsNoTflops, bounds.slice(0, 1))).toBeUndefined();
  });
});

describe('amounts below one unit', () => {
  /** Places shares of `tflops` (and `vram` bytes) one by one while the quota has room; how many fit. */
  function fitting(tflops: number, vram: number, q: GPUResourceQuota): number {
    const bounds = [quotaBounds(q)];
    const adding = shareUsage({ tflopsRequest: tflops, tflopsLimit: tflops, vramRequest: vram, vramLimit: vram, gpuCount: 1 });
    let used = NO_USAGE;
    let n = 0;
    while (n < 10_000 && !totalExcess(used, adding, bounds)) [used, n] = [addUsage(used, adding), n + 1];
    return n;
  }

  test('many requests below a milli-TFLOPS never pass a small total together: each counts as a whole unit', () => {
    // 0.0004 TFLOPS each against 0.1: exactly counted 250 would fit; rounded to the nearest unit, every one counts 0.
    const n = fitting(0.0004, 1, quota('tiny', { total: { requests: { tflops: '0.1' } } }));
    expect(n).toBe(100);
    expect(n * 0.0004).toBeLessThanOrEqual(0.1);
  });

  test('bytes below one count as one, and a bound with a fraction of a unit rounds down', () => {
    expect(fitting(0, 0.25, quota('bytes', { total: { requests: { vram: '10' } } }))).toBe(10);
    expect(quotaBounds(quota('frac', { total: { requests: { tflops: '0.0015' } } })).total['requests.tflops']).toBe(1);
    // 31.2 × 1000 is 31200.000000000004 in floating point: still 31,200 both ways.
    expect(shareUsage({ ...SHARE, tflopsRequest: 31.2, gpuCount: 1 })['requests.tflops']).toBe(31_200);
    expect(quotaBounds(quota('f', { total: { requests: { tflops: '31.2' } } })).total['requests.tflops']).toBe(31_200);
  });
});

describe('singleExcesses', () => {
  test('every per-pod bound the share passes, with the field that sets it', () => {
    const b = [quotaBounds(quota('team-a', { single: { maxRequests: { tflops: '10' }, maxLimits: { vram: '8Gi' }, maxGPUCount: 1 } }))];
    expect(singleExcesses(SHARE, b)).toEqual([
      { quota: 'team-a', amount: 'tflopsRequest', value: 10.5, max: 10, field: 'single.maxRequests.tflops' },
      { quota: 'team-a', amount: 'gpuCount', value: 2, max: 1, field: 'single.maxGPUCount' },
    ]);
    expect(singleExcesses({ ...SHARE, tflopsRequest: 10, gpuCount: 1 }, b)).toEqual([]);
  });
});

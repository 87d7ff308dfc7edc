/**
 * A GPUResourceQuota's status from the records of its namespace's pods: used amounts as quantities,
 * the percent still free of each bound, Ready and AlertThresholdReached, and lastUpdateTime moving only
 * when the counts do.
 */
import type { GPUResourceQuota } from '../../../lib/api';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import { encodeShare } from '../../../lib/runtime/shared/share';
import type { PodLike } from '../../../lib/runtime/shared/capacity';
import { quotaStatus } from '../../../lib/runtime/reconcile/quota-status';
import { recordedUsage } from '../../../lib/runtime/shared/quota';

const GiB = 2 ** 30;

function recorded(uid: string, tflops: number, gpus: number, phase = 'Running'): PodLike {
  const allocation = {
    id: uid,
    pool: 'p',
    node: 'n',
    gpuIds: Array.from({ length: gpus }, (_, i) => `g${i}`),
    tflopsRequest: tflops,
    tflopsLimit: 2 * tflops,
    vramRequest: 4 * GiB,
    vramLimit: 4 * GiB,
    cpu: 0,
    memory: 0,
    qos: 'medium',
  };
  return {
    metadata: {
      name: uid,
      namespace: 'ml',
      uid,
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: { [ALLOCATION_ANNOTATION]: JSON.stringify(allocation) },
    },
    status: { phase },
  } as PodLike;
}

const QUOTA: GPUResourceQuota = {
  apiVersion: 'tensor-fusion.ai/v1',
  kind: 'GPUResourceQuota',
  metadata: { name: 'team-a', namespace: 'ml' },
  spec: { total: { requests: { tflops: '100', vram: '40Gi' }, maxWorkers: 10, alertThresholdPercent: 80 } },
};

test('counts recorded shares of pods that have not finished, every GPU of each', () => {
  const used = recordedUsage([recorded('a', 10, 2), recorded('b', 5, 1), recorded('done', 50, 1, 'Succeeded')]);
  expect(used).toEqual({
    'requests.tflops': 25_000,
    'limits.tflops': 50_000,
    'requests.vram': 12 * GiB,
    'limits.vram': 12 * GiB,
    workers: 2,
  });
});

test('counts a bound DRA pod by its share record (its GPU is in its claim), not one still waiting or finished', () => {
  const dra = (uid: string, nodeName?: string, phase = 'Pending'): PodLike =>
    ({
      metadata: {
        name: uid,
        namespace: 'ml',
        uid,
        labels: { [ENABLED_LABEL]: 'true' },
        annotations: {
          [SHARE_ANNOTATION]: encodeShare({
            pool: 'p',
            qos: 'medium',
            gpuCount: 2,
            tflopsRequest: 10,
            tflopsLimit: 20,
            vramRequest: GiB,
            vramLimit: GiB,
          }),
        },
      },
      spec: { nodeName, resourceClaims: [{ name: 'tensor-fusion-gpu', resourceClaimTemplateName: 'tf-000000000000' }] },
      status: { phase },
    }) as PodLike;
  expect(recordedUsage([dra('bound', 'n'), dra('waiting'), dra('done', 'n', 'Failed')])).toEqual({
    'requests.tflops': 20_000,
    'limits.tflops': 40_000,
    'requests.vram': 2 * GiB,
    'limits.vram': 2 * GiB,
    workers: 1,
  });
});

test('status: used as quantities, free percent of each bound, conditions', () => {
  const used = recordedUsage([recorded('a', 10, 2), recorded('b', 5, 1)]);
  const status = quotaStatus(QUOTA, used, undefined, '2026-11-28T00:00:00Z');
  expect(status).toEqual({
    used: { requests: { tflops: '25', vram: '12Gi' }, limits: { tflops: '50', vram: '12Gi' }, workers: 2 },
    availablePercent: { requests: { tflops: '75', vram: '70' }, workers: '80' },
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'UsageCounted',
        message: '2 GPU worker(s) counted',
        lastTransitionTime: '2026-11-28T00:00:00Z',
      },
      {
        type: 'AlertThresholdReached',
        status: 'False',
        reason: 'BelowThreshold',
        message: 'every total below 80%',
        lastTransitionTime: '2026-11-28T00:00:00Z',
      },
    ],
    lastUpdateTime: '2026-11-28T00:00:00Z',
  });
});

test('the alert threshold names each total at or above it; a lowered quota shows negative room', () => {
  const used = recordedUsage([recorded('a', 45, 2)]);
  const first = quotaStatus(QUOTA, used, undefined, '2026-11-28T00:00:00Z');
  expect(first.conditions?.find((c) => c.type === 'AlertThresholdReached')).toMatchObject({
    status: 'True',
    reason: 'AboveThreshold',
    message: 'at or above 80%: requests.tflops 90 of 100',
  });
  const lowered = { ...QUOTA, spec: { total: { requests: { tflops: '60' } } } };
  expect(quotaStatus(lowered, used, first, '2026-11-28T00:01:00Z').availablePercent).toEqual({
    requests: { tflops: '-50' },
    workers: '100',
  });
});

test('lastUpdateTime and transition times move only when something changed', () => {
  const used = recordedUsage([recorded('a', 10, 1)]);
  const first = quotaStatus(QUOTA, used, undefined, '2026-11-28T00:00:00Z');
  const same = quotaStatus(QUOTA, used, first, '2026-11-28T00:05:00Z');
  expect(same).toEqual(first);
  const more = quotaStatus(QUOTA, recordedUsage([recorded('a', 10, 1), recorded('b', 10, 1)]), first, '2026-11-28T00:06:00Z');
  expect(more.lastUpdateTime).toBe('2026-11-28T00:06:00Z');
});

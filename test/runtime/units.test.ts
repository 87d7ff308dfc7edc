/** Unit tests of the pure runtime pieces: work queue, GPU catalog, xgn taint plan, env validation. */
import { ManualClock } from '../../lib/runtime/kube/clock';
import { WorkQueue, runWorkers } from '../../lib/runtime/kube/workqueue';
import { lookupGpuTflops, normalizeGpuProduct } from '../../lib/model/gpu-catalog';
import { planXgnTaint } from '../../lib/runtime/controller/xgn-taint';
import { readEnv } from '../../lib/runtime/runtime';
import { gpuPoolStatus, nodeInventory, usageFromPods } from '../../lib/runtime/controller/capacity';
import { matchesNodeSelector } from '../../lib/runtime/controller/node-selector';
import { T9K, XGN_TAINT } from '../../lib/t9k/keys';
import { gpuNodeObj, podObj, poolObj } from './fixtures';

describe('WorkQueue', () => {
  test('deduplicates waiting keys and never hands out a key in progress', async () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe('a');
    q.add('a'); // re-added while processing: held back until done
    expect(await q.get()).toBe('b');
    expect(q.len()).toBe(0);
    q.done('a');
    expect(await q.get()).toBe('a');
  });

  test('backs off per key exponentially and forget resets it', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 10, maxDelayMs: 1000 });
    q.addRateLimited('k');
    q.addRateLimited('k');
    q.addRateLimited('k'); // delays 10, 20, 40: the earliest pending wins
    expect(q.numRequeues('k')).toBe(3);
    await clock.advance(9);
    expect(q.len()).toBe(0);
    await clock.advance(1);
    expect(q.len()).toBe(1);
    q.forget('k');
    expect(q.numRequeues('k')).toBe(0);
  });

  test('the global token bucket delays rate-limited adds beyond the burst', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 1, qps: 10, burst: 2 });
    for (const k of ['a', 'b', 'c']) q.addRateLimited(k);
    await clock.advance(1);
    expect(q.len()).toBe(2);
    await clock.advance(99);
    expect(q.len()).toBe(3);
  });

  test('runWorkers retries failures, honours requeueAfter and stops on shutdown', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 5 });
    const seen: string[] = [];
    let fail = true;
    const done = runWorkers(q, 2, async (key) => {
      seen.push(key);
      if (key === 'x' && fail) {
        fail = false;
        throw new Error('boom');
      }
      return key === 'y' && seen.filter((s) => s === 'y').length === 1 ? { requeueAfterMs: 100 } : undefined;
    });
    q.add('x');
    q.add('y');
    await clock.advance(5);
    await clock.advance(100);
    expect(seen.sort()).toEqual(['x', 'x', 'y', 'y']);
    q.shutDown();
    await done;
  });
});

describe('GPU catalog', () => {
  test.each([
    ['NVIDIA-A100-SXM4-80GB', 'A100', 312],
    ['Tesla-T4', 'T4', 65],
    ['NVIDIA-H100-80GB-HBM3', 'H100', 989],
    ['NVIDIA-H100-PCIe', 'H100-PCIe', 756],
    ['NVIDIA-L40S', 'L40S', 362],
    ['NVIDIA-L4', 'L4', 121],
    ['NVIDIA-A10G', 'A10G', 70],
    ['NVIDIA-GeForce-RTX-4090', 'RTX-4090', 165],
    ['NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 'A100', 312],
    ['Tesla-V100-SXM2-16GB-SHARED', 'V100', 125],
  ])('%s is %s at %d TFLOPS', (product, model, tflops) => {
    expect(lookupGpuTflops(product)).toEqual({ model, tflops, from: 'catalog' });
  });

  test('pool overrides win by short model or full product name; unknown models are undefined', () => {
    expect(lookupGpuTflops('NVIDIA-A100-SXM4-80GB', { a100: '300' })).toEqual({ model: 'A100', tflops: 300, from: 'pool' });
    expect(lookupGpuTflops('Acme-X1', { 'Acme-X1': 42 })).toEqual({ model: 'ACME-X1', tflops: 42, from: 'pool' });
    expect(lookupGpuTflops('Acme-X1')).toBeUndefined();
    expect(normalizeGpuProduct('Tesla-T4')).toEqual(['T4']);
  });
});

describe('xgn taint plan', () => {
  const node = (labels: Record<string, string>, taints?: unknown[]) =>
    ({ metadata: { name: 'n', resourceVersion: '7', labels }, spec: taints ? { taints } : {} }) as never;
  const other = { key: 'example.com/x', value: 'y', effect: 'NoExecute' };

  test('adds the taint after a resourceVersion test, keeping other taints', () => {
    expect(planXgnTaint(node({ [T9K.allocModeLabel]: 'xgn' }, [other]))).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'add', path: '/spec/taints/-', value: { ...XGN_TAINT } },
    ]);
    expect(planXgnTaint(node({ [T9K.allocModeLabel]: 'xgn' }))).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'add', path: '/spec/taints', value: [{ ...XGN_TAINT }] },
    ]);
  });

  test('is a no-op when in place, and removes only our key when the label goes', () => {
    expect(planXgnTaint(node({ [T9K.allocModeLabel]: 'xgn' }, [other, { ...XGN_TAINT }]))).toBeUndefined();
    expect(planXgnTaint(node({ [T9K.allocModeLabel]: 'sgn' }, [{ ...XGN_TAINT }, other]))).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'remove', path: '/spec/taints/0' },
    ]);
    expect(planXgnTaint(node({}, [other]))).toBeUndefined();
  });
});

describe('capacity', () => {
  test('pool status sums nodes with the oversell ratio and subtracts pod allocations', () => {
    const n = gpuNodeObj('n1', { count: 2 });
    const inv = nodeInventory(n.metadata.labels)!;
    expect(inv).toMatchObject({ model: 'A100', count: 2, tflopsPerGpu: 312, vramPerGpu: 80 * 2 ** 30 });
    const usage = usageFromPods([
      podObj('a', 'n1', { gpus: 'n1-gpu-0,n1-gpu-1', tflops: '10', vram: '1Gi' }) as never,
      podObj('b', 'n1', { gpus: 'n1-gpu-0', tflops: '5', phase: 'Succeeded' }) as never,
    ]);
    expect(usage.get('n1-gpu-0')).toEqual({ tflops: 10, vram: 2 ** 30, pods: 1 });
    const pool = poolObj('p', 'a') as never;
    const s = gpuPoolStatus(pool, [{ phase: 'Running', totalGPUs: 2, managedGPUs: 2, totalTFlops: '624', totalVRAM: '160Gi', availableTFlops: '604', availableVRAM: '158Gi' }], ['Running', 'Running'], undefined, '2026-01-01T00:00:00Z');
    expect(s).toMatchObject({ totalTFlops: '624', availableTFlops: '604', virtualTFlops: '1248', virtualAvailableTFlops: '1228', availableVRAM: '158Gi', readyGPUs: 2, phase: 'Running' });
  });

  test('node selectors: terms are ORed, requirements ANDed, no selector matches nothing', () => {
    const sel = { nodeSelectorTerms: [{ matchExpressions: [{ key: 'a', operator: 'In' as const, values: ['1'] }, { key: 'b', operator: 'DoesNotExist' as const }] }, { matchFields: [{ key: 'metadata.name', operator: 'In' as const, values: ['special'] }] }] };
    expect(matchesNodeSelector({ name: 'x', labels: { a: '1' } }, sel)).toBe(true);
    expect(matchesNodeSelector({ name: 'x', labels: { a: '1', b: '' } }, sel)).toBe(false);
    expect(matchesNodeSelector({ name: 'special' }, sel)).toBe(true);
    expect(matchesNodeSelector({ name: 'x', labels: { a: '1' } }, undefined)).toBe(false);
  });
});

describe('readEnv', () => {
  test('defaults', () => {
    expect(readEnv({ POD_NAME: 'p', POD_NAMESPACE: 'tf' })).toEqual({
      podName: 'p', namespace: 'tf', logLevel: 'info', metricsPort: 8080, webhookPort: 9443, extenderPort: 8888, leaderElectionId: 'tensor-fusion-controller',
      tlsSecretName: 'tensor-fusion-webhook-tls', webhookConfigName: 'tensor-fusion-webhook', webhookServiceName: 'tensor-fusion-webhook',
      webhookExtraNames: [], certMode: 'self-managed', tlsDir: '/tls',
    });
  });

  test('WEBHOOK_EXTRA_NAMES: comma-separated, blanks dropped', () => {
    expect(readEnv({ WEBHOOK_EXTRA_NAMES: '127.0.0.1, localhost,,' }).webhookExtraNames).toEqual(['127.0.0.1', 'localhost']);
  });

  test('names every bad variable', () => {
    expect(() => readEnv({ METRICS_PORT: 'abc', WEBHOOK_PORT: '70000', LOG_LEVEL: 'loud', CERT_MODE: 'vault' })).toThrow(
      'controller environment: LOG_LEVEL: got "loud", expected one of trace, debug, info, warn, error, fatal, silent\n' +
      'CERT_MODE: got "vault", expected one of self-managed, cert-manager\n' +
      'METRICS_PORT: got "abc", expected a port number from 0 to 65535\n' +
      'WEBHOOK_PORT: got "70000", expected a port number from 0 to 65535');
  });
});

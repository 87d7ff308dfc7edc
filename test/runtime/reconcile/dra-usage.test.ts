/**
 * A DRA pool's shares in the controller's GPU status: each allocated claim takes what it consumed
 * from the GPU its result names, in the GPU's, GPUNode's and pool's `available` and in the share
 * metric; a deallocated claim gives it back. Without `dra` no claim is watched and the caches sync.
 */
import { CONTROLLER_METRICS as M } from '../../../lib/contract/metrics';
import { RuntimeMetrics } from '../../../lib/runtime/shared/metrics';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { eventually, gpuNodeObj, poolObj, testController } from '../fixtures';

/** A pod's claim as kube-controller-manager makes it and kube-scheduler allocates it: on `device` of node n1. */
function claim(name: string, device: string, consumed: { tflops: string; memory: string }) {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: {
      name,
      namespace: 'default',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: `pod-${name}`, uid: `uid-${name}`, controller: true }],
    },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.tensor-fusion.ai', count: 1 } }] } },
    status: {
      allocation: {
        devices: {
          results: [
            { request: 'gpu', driver: 'gpu.tensor-fusion.ai', pool: 'n1', device, shareID: `share-${name}`, consumedCapacity: consumed },
            // Another driver's device on the same claim is none of our GPUs.
            { request: 'nic', driver: 'nic.example.com', pool: 'n1', device: 'gpu-0', consumedCapacity: { tflops: '100' } },
          ],
        },
      },
      reservedFor: [{ resource: 'pods', name: `pod-${name}`, uid: `uid-${name}` }],
    },
  };
}

describe('DRA claims in the GPU status', () => {
  let api: ApiServerDouble;
  let ctl: ReturnType<typeof testController>;

  const start = async (dra: boolean, metrics?: RuntimeMetrics) => {
    api = await startApiServer({ bookmarkIntervalMs: 200 });
    api.put('gpupools', poolObj('pool-a', 'a'));
    api.put('nodes', gpuNodeObj('n1'));
    ctl = testController(api, 'ctl', { dra, metrics });
    ctl.startInformers();
    await ctl.startReconciling(clusterFor(api, 'ctl'));
  };

  afterEach(async () => {
    await ctl.stop();
    await api.stop();
  });

  test('an allocated claim takes its consumed capacity from its GPU, node and pool; deallocated, it gives it back', async () => {
    const metrics = new RuntimeMetrics();
    await start(true, metrics);
    api.put('resourceclaims', claim('a', 'gpu-0', { tflops: '10', memory: '5Gi' }));
    api.put('resourceclaims', claim('b', 'gpu-0', { tflops: '20', memory: '3Gi' }));
    await eventually(() => {
      expect(api.getObject('gpus', 'n1-gpu-0')?.status?.available).toEqual({ tflops: '282', vram: '72Gi' });
      expect(api.getObject('gpus', 'n1-gpu-1')?.status?.available).toEqual({ tflops: '312', vram: '80Gi' });
      expect(api.getObject('gpunodes', 'n1')?.status).toMatchObject({ availableTFlops: '594', availableVRAM: '152Gi', totalGPUPods: 2 });
      expect(api.getObject('gpupools', 'pool-a')?.status).toMatchObject({
        totalTFlops: '624',
        availableTFlops: '594',
        availableVRAM: '152Gi',
      });
    });
    const shares = (await metrics.registry.metrics()).split('\n').filter((l) => l.startsWith(`${M.gpuShares}{`));
    expect(shares.sort()).toEqual([
      `${M.gpuShares}{gpu="n1-gpu-0",node="n1",pool="pool-a"} 2`,
      `${M.gpuShares}{gpu="n1-gpu-1",node="n1",pool="pool-a"} 0`,
    ]);
    api.remove('resourceclaims', 'a', 'default');
    await eventually(() => expect(api.getObject('gpus', 'n1-gpu-0')?.status?.available).toEqual({ tflops: '292', vram: '77Gi' }));
  });

  test('without dra no claim is watched, the caches sync and the GPUs show their whole capacity', async () => {
    await start(false);
    api.put('resourceclaims', claim('a', 'gpu-0', { tflops: '10', memory: '5Gi' }));
    await eventually(() => expect(api.getObject('gpus', 'n1-gpu-0')?.status?.available).toEqual({ tflops: '312', vram: '80Gi' }));
    expect(ctl.hasSynced()).toBe(true);
    expect(ctl.isReady()).toBe(true);
    expect(api.openWatches('resourceclaims')).toBe(0);
  });
});

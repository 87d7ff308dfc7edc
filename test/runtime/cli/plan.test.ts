import { planPlacement } from '../../../lib/runtime/cli/plan';
import { workloadPods } from '../../../lib/runtime/cli/workload-pods';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { cluster, GI, gpuPod, heldPod, POOL } from './fixtures';

const pods = (docs: Record<string, any>[]) => workloadPods(docs as K8sObject[]).pods;

describe('kubectl tf plan: placement', () => {
  test('places pods with the extender allocator on the GPUs the nodes declare, and counts what is left', async () => {
    const p = await planPlacement(cluster(), pods([gpuPod('a', '100'), gpuPod('b', '300'), gpuPod('c', '312', '80Gi')]));
    expect(p).toMatchObject({ placed: 3, unplaced: 0 });
    expect(p.pods.map((x) => x.gpus?.length)).toEqual([1, 1, 1]);
    expect(new Set(p.pods.map((x) => x.gpus![0])).size).toBe(3);
    expect(p.pools).toEqual([
      expect.objectContaining({
        name: POOL,
        nodes: 2,
        gpus: 4,
        tflopsCapacity: 4 * 312,
        tflopsRequested: 712,
        unallocatedPct: (100 * (4 * 312 - 712)) / (4 * 312),
      }),
    ]);
    expect(p.bars.flatMap((b) => b.shares.map((s) => s.pod)).sort()).toEqual(['a', 'b', 'c']);
  });

  test('shares held by running pods take their room first; a pod that fits nowhere says why', async () => {
    const held = ['n-0-gpu-0', 'n-0-gpu-1', 'n-1-gpu-0', 'n-1-gpu-1'].map((g, i) => heldPod(`run-${i}`, g.slice(0, 3), [g], 250, 10 * GI));
    const p = await planPlacement(cluster(held), pods([gpuPod('fits', '60'), gpuPod('waits', '100')]));
    expect(p.pods).toEqual([
      expect.objectContaining({ name: 'fits', node: expect.stringMatching(/^n-[01]$/) }),
      expect.objectContaining({ name: 'waits', reason: '4 GPUs: not enough free TFLOPS' }),
    ]);
    expect(
      p.bars
        .find((b) => b.shares.some((s) => s.pod === 'fits'))
        ?.shares.map((s) => s.pod)
        .sort(),
    ).toEqual(['fits', expect.stringMatching(/^run-/)]);
  });

  test('stranded VRAM: free VRAM on GPUs whose free TFLOPS no planned pod could use', async () => {
    // Two pods of 300 TFLOPS and 10Gi leave 12 TFLOPS and 70Gi on their GPUs: below the smallest request.
    const p = await planPlacement(cluster(), pods([gpuPod('a', '300'), gpuPod('b', '300')]));
    expect(p.strandedVram).toBe(2 * 70 * GI);
    expect((await planPlacement(cluster(), pods([gpuPod('a', '10')]))).strandedVram).toBe(0);
  });

  test('a namespace quota refuses what would pass it, with the extender words; a per-pod bound as admission would', async () => {
    const quota = {
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'GPUResourceQuota',
      metadata: { name: 'q', namespace: 'ml' },
      spec: { total: { requests: { tflops: '150' } }, single: { maxRequests: { vram: '20Gi' } } },
    };
    const p = await planPlacement(
      cluster([], [quota]),
      pods([gpuPod('a', '100'), gpuPod('b', '100'), gpuPod('c', '10', '30Gi'), gpuPod('d', '50')]),
    );
    expect(p.pods.map((x) => x.reason)).toEqual([
      undefined,
      'namespace "ml" would use 200 of 150 TFLOPS requested (GPUResourceQuota "q")',
      'refused at admission: single.maxRequests.vram of GPUResourceQuota "q" is 20Gi, the pod asks 30Gi',
      undefined,
    ]);
  });

  test('pods the webhook would refuse say so with its message; --pool sends pods that name none', async () => {
    const bad = gpuPod('bad', '10');
    delete bad.metadata.annotations['tensor-fusion.ai/vram-request'];
    const p = await planPlacement(cluster(), pods([bad, gpuPod('elsewhere', '10', '1Gi', 'ml', { 'tensor-fusion.ai/gpupool': 'other' })]));
    expect(p.pods[0].reason).toBe(
      'refused at admission: tensor-fusion.ai/vram-request: got nothing, expected a VRAM request (or tensor-fusion.ai/vram-limit), here or in the WorkloadProfile',
    );
    expect(p.pods[1].reason).toBe('refused at admission: tensor-fusion.ai/gpupool: got "other", expected the name of a GPUPool: pool-a');
    const routed = await planPlacement(cluster(), pods([gpuPod('a', '10')]), { pool: POOL });
    expect(routed.pods[0]).toMatchObject({ pool: POOL, node: expect.any(String) });
  });

  test('pods of our scheduler without a share take CPU and memory only, and wait when no node has it', async () => {
    const cpuPod = (name: string, cpu: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'ml' },
      spec: { schedulerName: 'tensor-fusion-scheduler', containers: [{ name: 'm', image: 'x', resources: { requests: { cpu } } }] },
    });
    const p = await planPlacement(cluster(), pods([cpuPod('small', '6'), cpuPod('big', '9')]));
    expect(p.pods).toEqual([
      expect.objectContaining({ name: 'small', gpuCount: 0, node: expect.any(String), gpus: [] }),
      expect.objectContaining({ name: 'big', reason: '2 nodes: not enough CPU' }),
    ]);
  });
});

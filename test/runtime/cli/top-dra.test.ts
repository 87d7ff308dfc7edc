/**
 * A DRA pool's share in `kubectl tf top` and `plan`: it has no allocation record, so its GPU and
 * amounts come from its claim's allocation (what it consumed of the GPU as its request, the share
 * record's limits).
 */
import { planPlacement } from '../../../lib/runtime/cli/plan';
import { workloadPods } from '../../../lib/runtime/cli/workload-pods';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { cluster, draPod, GI, gpuPod, tf } from './fixtures';

// 10 TFLOPS and 4500Mi asked; the GPU's request policy rounds the VRAM up to 5Gi.
const dra = draPod('infer', 'n-0', 1, { tflops: 10, vram: 4500 * 2 ** 20 }, { tflops: '10', memory: '5Gi' });
const objects = () => ({ ...cluster([dra.pod]), claims: [dra.claim] });

test('top gpus and pods show a DRA share on the GPU its claim was allocated, with what it consumed', async () => {
  const gpus = (await tf(['top', 'gpus'], {}, objects())).stdout.split('\n');
  expect(gpus[1]).toMatch(/^n-0-gpu-0\s+n-0\s+pool-a\s+A100\s+0\s+312\s+0 \(0%\)/);
  expect(gpus[2]).toMatch(/^n-0-gpu-1\s+n-0\s+pool-a\s+A100\s+1\s+312\s+10 \(3%\)\s+10\s+-\s+80Gi\s+5Gi \(6%\)\s+-$/);
  const pods = (await tf(['top', 'pods'], {}, objects())).stdout.split('\n');
  expect(pods.slice(1).filter(Boolean)).toEqual([expect.stringMatching(/^ml\s+infer\s+n-0\s+n-0-gpu-1\s+10\s+10\s+-\s+5Gi\s+4500Mi\s+-$/)]);
  const pools = JSON.parse((await tf(['top', 'pools', '-o', 'json'], {}, objects())).stdout);
  expect(pools).toEqual([expect.objectContaining({ name: 'pool-a', tflopsRequested: 10, vramRequested: 5 * GI })]);
});

test('plan counts a DRA share on its GPU: a pod that needs a whole GPU finds none, and the bars show the shares', async () => {
  const many = ['n-0', 'n-1'].flatMap((node) =>
    [0, 1].map((i) => draPod(`${node}-${i}`, node, i, { tflops: 10, vram: GI }, { tflops: '10', memory: '1Gi' })),
  );
  const all = { ...cluster(many.map((d) => d.pod)), claims: many.map((d) => d.claim) };
  const p = await planPlacement(all, workloadPods([gpuPod('whole', '312', '80Gi')] as K8sObject[]).pods);
  expect(p.pods).toEqual([expect.objectContaining({ name: 'whole', reason: '4 GPUs: not enough free VRAM' })]);
  expect(p.bars.map((b) => b.shares.map((s) => `${s.pod} ${s.tflopsRequest} ${s.vramRequest}`))).toEqual(
    many.map((d) => [`${d.pod.metadata.name} 10 ${GI}`]),
  );
});

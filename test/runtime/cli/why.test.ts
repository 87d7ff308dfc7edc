import { whyPod } from '../../../lib/runtime/cli/why';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import { cluster, GI, gpuPod, heldPod, POOL } from './fixtures';

/** A pod the webhook admitted (its share recorded) that waits for a node. */
function admitted(name: string, tflops: number, vram = 10 * GI, namespace = 'ml'): K8sObject {
  const p = gpuPod(name, String(tflops), undefined, namespace);
  p.metadata.uid = `uid-${name}`;
  p.metadata.annotations[SHARE_ANNOTATION] = JSON.stringify({
    pool: POOL,
    qos: 'medium',
    gpuCount: 1,
    tflopsRequest: tflops,
    tflopsLimit: tflops,
    vramRequest: vram,
    vramLimit: vram,
  });
  p.status = {
    phase: 'Pending',
    conditions: [
      {
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message: '0/2 nodes are available: 2 not enough free TFLOPS on any GPU.',
      },
    ],
  };
  return p as K8sObject;
}

/** Four GPUs holding 250 TFLOPS each (62 left), one of them also a 30 TFLOPS share (32 left). */
const full = () => [
  ...['n-0-gpu-0', 'n-0-gpu-1', 'n-1-gpu-0', 'n-1-gpu-1'].map((g, i) => heldPod(`run-${i}`, g.slice(0, 3), [g], 250, 10 * GI)),
  heldPod('small', 'n-1', ['n-1-gpu-1'], 30, GI),
];

describe('kubectl tf why', () => {
  test('a waiting pod: the scheduler condition, the reasons per node, the largest request that fits, the fewest shares to release', () => {
    const w = admitted('waits', 100);
    const a = whyPod(w, cluster([...full(), w]));
    expect(a).toMatchObject({
      state: 'Pending',
      nodeReasons: { 'not enough free TFLOPS on any GPU': 2 },
      fitsAt: { fraction: 0.62, tflopsRequest: 62, node: expect.stringMatching(/^n-[01]$/) },
      // On n-0 one share of 250 must go; on n-1 too (its GPU with the small share has 32 + 250 free once run-3 goes).
      release: { shares: [expect.objectContaining({ namespace: 'ml', tflopsRequest: 250 })] },
    });
    expect(a.lines.slice(0, 4)).toEqual([
      'Pod ml/waits is Pending: it asks 1 GPU x (100 TFLOPS, 10Gi VRAM) in pool pool-a.',
      'kube-scheduler: 0/2 nodes are available: 2 not enough free TFLOPS on any GPU.',
      'No node of pool pool-a can take it (2 nodes):',
      '  2 nodes: not enough free TFLOPS on any GPU',
    ]);
    expect(a.lines[4]).toMatch(/^It would fit now with 62% of its request: tflops-request 62 and vram-request 6348Mi \(node n-[01]\)\.$/);
  });

  test('a pod its quota refuses says so, though a node has room', () => {
    const w = admitted('waits', 100);
    const quota = {
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'GPUResourceQuota',
      metadata: { name: 'q', namespace: 'ml' },
      spec: { total: { requests: { tflops: '50' } } },
    };
    const a = whyPod(w, cluster([w], [quota]));
    expect(a.overQuota).toBe('namespace "ml" would use 100 of 50 TFLOPS requested (GPUResourceQuota "q")');
    expect(a.lines).toContain('Quota: namespace "ml" would use 100 of 50 TFLOPS requested (GPUResourceQuota "q").');
    expect(a.lines.find((l) => l.startsWith('Node '))).toMatch(/^Node n-[01] has room for it now, but the quota refuses it\.$/);
  });

  test('a pod no smaller request can place, and no release on one node: the pool needs GPUs', () => {
    const w = admitted('two', 100);
    const share = JSON.parse(w.metadata.annotations![SHARE_ANNOTATION]);
    w.metadata.annotations![SHARE_ANNOTATION] = JSON.stringify({ ...share, gpuCount: 3 });
    const a = whyPod(w, cluster([w]));
    expect(a.nodeReasons).toEqual({ 'fewer than 3 GPUs with room for the share': 2 });
    expect(a.lines.at(-1)).toBe('No smaller request and no release of shares on one node would let it fit: the pool needs GPUs.');
  });

  test('a placed pod shows its allocation; a pod with no share says why', () => {
    const pods = full();
    expect(whyPod(pods[0], cluster(pods))).toMatchObject({
      state: 'Placed',
      lines: [
        'Pod ml/run-0 holds a GPU share on node n-0 (pool pool-a): 1 GPU x (250 TFLOPS, 10Gi VRAM), limits 250 TFLOPS and 10Gi VRAM.',
        'GPUs: n-0-gpu-0.',
      ],
    });
    const plain = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'ml' } } as K8sObject;
    expect(whyPod(plain, cluster()).lines).toEqual(['Pod ml/web takes no GPU share: it is not labelled tensor-fusion.ai/enabled: "true".']);
    const unadmitted = gpuPod('raw', '10') as K8sObject;
    expect(whyPod(unadmitted, cluster()).lines[0]).toMatch(
      /^Pod ml\/raw takes no GPU share: the admission webhook has not recorded a share on it/,
    );
    const done = { ...pods[0], status: { phase: 'Succeeded' } } as K8sObject;
    expect(whyPod(done, cluster()).state).toBe('Finished');
  });
});

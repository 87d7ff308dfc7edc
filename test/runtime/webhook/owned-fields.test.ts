/**
 * What the webhook owns on the pods it admits, whatever the user wrote: the share resource (only a
 * hard pool's inject containers hold it, one each, request equal to limit) and, in those containers,
 * the variables the node's device plugin gives.
 */
import { applyPatch, deepClone, Operation } from 'fast-json-patch';
import type { GPUPool } from '../../../lib/api';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { admitPod, AdmissionView } from '../../../lib/runtime/webhook/admit';
import { pod, review } from './fixtures';

const t = (k: string) => `tensor-fusion.ai/${k}`;
const SHARE = 'tensor-fusion.ai/share';
const LOCAL = { [t('is-local-gpu')]: 'true', [t('tflops-limit')]: '20', [t('vram-limit')]: '8Gi' };

function view(isolation: 'hard' | 'shared'): AdmissionView {
  const pool = {
    apiVersion: 'tensor-fusion.ai/v1',
    kind: 'GPUPool',
    metadata: { name: 'a' },
    spec: { nodeManagerConfig: { defaultIsolationMode: isolation }, componentConfig: { worker: { image: 'example.io/worker:1' } } },
  } as unknown as GPUPool;
  return {
    pool: (n) => (n === 'a' ? pool : undefined),
    poolNames: () => ['a'],
    defaultPool: () => 'a',
    profile: async () => undefined,
    workload: async () => undefined,
  };
}

/** The pod after admission, and the warnings. */
async function admitted(p: K8sObject, isolation: 'hard' | 'shared' = 'hard'): Promise<{ pod: any; warnings: string[] }> {
  const d = await admitPod(review(p).request!, view(isolation));
  if (!d.allowed) throw new Error(d.message);
  return { pod: applyPatch(deepClone(p), [...(d.patch ?? [])] as Operation[], true, false).newDocument, warnings: [...(d.warnings ?? [])] };
}

const asks = (n: string) => ({ requests: { [SHARE]: n, cpu: '1' }, limits: { [SHARE]: n } });

/** A pod of app `main`, a sidecar, an init container and a native sidecar, each asking for shares. */
function greedy(annotations: Record<string, string>): any {
  const p: any = pod({ name: 'greedy', annotations: { ...annotations, [t('inject-container')]: 'main' }, containers: ['main', 'proxy'] });
  p.spec.containers[0].resources = asks('3');
  p.spec.containers[1].resources = asks('2');
  p.spec.initContainers = [
    { name: 'setup', image: 'busybox', resources: asks('1') },
    { name: 'native', image: 'busybox', restartPolicy: 'Always', resources: { limits: { [SHARE]: '1' } } },
  ];
  return p;
}

const shares = (p: any) =>
  [...p.spec.containers, ...p.spec.initContainers].map((c: any) => [c.name, c.resources?.requests?.[SHARE], c.resources?.limits?.[SHARE]]);

const removed = (path: string, who: string) => `${path}.resources: removed ${SHARE}, which only the webhook gives: ${who}`;

test('a hard pool: the inject container holds exactly one share, request equal to limit; sidecars, init and native sidecars none, each with a warning', async () => {
  const { pod: out, warnings } = await admitted(greedy(LOCAL));
  expect(shares(out)).toEqual([
    ['main', '1', '1'],
    ['proxy', undefined, undefined],
    ['setup', undefined, undefined],
    ['native', undefined, undefined],
  ]);
  // What else the user asked of the containers stays.
  expect(out.spec.containers[1].resources.requests).toEqual({ cpu: '1' });
  const who = 'only the inject containers (main) hold one each';
  expect(warnings).toEqual(
    expect.arrayContaining([
      removed('spec.containers[1]', who),
      removed('spec.initContainers[0]', who),
      removed('spec.initContainers[1]', who),
    ]),
  );
  expect(warnings.filter((w) => w.includes(SHARE))).toHaveLength(3);
});

test('a shared pool and a remote-GPU client hold no share resource, whatever they asked', async () => {
  const none = 'this pod holds none (its pool is not hard-isolated or delivers shares by DRA, or it is a remote-GPU client)';
  for (const [annotations, isolation] of [
    [LOCAL, 'shared'],
    [{ [t('is-local-gpu')]: 'false', [t('tflops-limit')]: '20', [t('vram-limit')]: '8Gi' }, 'hard'],
  ] as const) {
    const { pod: out, warnings } = await admitted(greedy(annotations), isolation);
    expect(shares(out)).toEqual([
      ['main', undefined, undefined],
      ['proxy', undefined, undefined],
      ['setup', undefined, undefined],
      ['native', undefined, undefined],
    ]);
    expect(warnings.filter((w) => w.includes(SHARE))).toEqual([
      removed('spec.containers[0]', none),
      removed('spec.containers[1]', none),
      removed('spec.initContainers[0]', none),
      removed('spec.initContainers[1]', none),
    ]);
  }
});

test('several inject containers hold one share each; the admitted pod is admitted again unchanged', async () => {
  const p: any = pod({ name: 'two', annotations: { ...LOCAL, [t('inject-container')]: 'a,b' }, containers: ['a', 'b'] });
  p.spec.containers[1].resources = { limits: { [SHARE]: '4' } };
  const { pod: out } = await admitted(p);
  expect(out.spec.containers.map((c: any) => c.resources)).toEqual([
    { requests: { [SHARE]: '1' }, limits: { [SHARE]: '1' } },
    { requests: { [SHARE]: '1' }, limits: { [SHARE]: '1' } },
  ]);
  const again = await admitPod(review(out).request!, view('hard'));
  expect(again).toMatchObject({ allowed: true, patch: [] });
});

const env = (c: any) => (c.env as { name: string; value?: string }[]).map((e) => e.name);

test("a hard pool: the inject container's own NVIDIA_VISIBLE_DEVICES and CUDA_MPS_* are removed with a warning; a sidecar's and NVIDIA_DRIVER_CAPABILITIES stay", async () => {
  const p: any = pod({ name: 'own-env', annotations: { ...LOCAL, [t('inject-container')]: 'main' }, containers: ['main', 'proxy'] });
  p.spec.containers[0].env = [
    { name: 'NVIDIA_VISIBLE_DEVICES', value: 'all' },
    { name: 'KEEP', value: '1' },
    { name: 'CUDA_MPS_PIPE_DIRECTORY', value: '/elsewhere' },
    { name: 'NVIDIA_DRIVER_CAPABILITIES', value: 'compute,utility' },
    { name: 'NVIDIA_VISIBLE_DEVICES', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', value: '100' },
  ];
  p.spec.containers[1].env = [{ name: 'NVIDIA_VISIBLE_DEVICES', value: 'none' }];
  const { pod: out, warnings } = await admitted(p);
  expect(env(out.spec.containers[0]).filter((n) => !n.startsWith('TENSOR_FUSION_'))).toEqual(['KEEP', 'NVIDIA_DRIVER_CAPABILITIES']);
  expect(env(out.spec.containers[1])).toEqual(['NVIDIA_VISIBLE_DEVICES']);
  expect(warnings).toContain(
    "spec.containers[0].env: removed NVIDIA_VISIBLE_DEVICES, CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: in a hard-isolated pool the node gives these from the pod's share, and the container's own value would override them",
  );
});

test("a shared pool: the user's NVIDIA_VISIBLE_DEVICES is replaced by the bind's, and other CUDA_MPS_* stay (advisory limits)", async () => {
  const p: any = pod({ name: 'own-env', annotations: LOCAL });
  p.spec.containers[0].env = [
    { name: 'NVIDIA_VISIBLE_DEVICES', value: 'all' },
    { name: 'CUDA_MPS_PIPE_DIRECTORY', value: '/elsewhere' },
  ];
  const { pod: out, warnings } = await admitted(p, 'shared');
  const visible = out.spec.containers[0].env.filter((e: any) => e.name === 'NVIDIA_VISIBLE_DEVICES');
  expect(visible).toEqual([
    { name: 'NVIDIA_VISIBLE_DEVICES', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['tensor-fusion.ai/visible-devices']" } } },
  ]);
  expect(env(out.spec.containers[0])).toContain('CUDA_MPS_PIPE_DIRECTORY');
  expect(warnings.some((w) => w.includes('env: removed'))).toBe(false);
});

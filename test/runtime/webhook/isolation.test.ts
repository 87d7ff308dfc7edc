/**
 * What the webhook does per pool isolation: a hard pool's pods request the share resource the node
 * agent serves, and are warned when the install runs no agent (a kubelet would start them without
 * their GPU devices); a shared pool's pods get the variables and are warned that nothing enforces them.
 */
import type { GPUPool, WorkloadProfile } from '../../../lib/api';
import { encodeGpuWorkload } from '../../../lib/annotations/encode';
import { renderController } from '../../../lib/render/controller';
import { renderGpuPool } from '../../../lib/render/gpu-pool';
import { renderWorkloadProfile } from '../../../lib/render/workload-profile';
import { readEnv } from '../../../lib/runtime/shared/runtime-context';
import { admitPod, AdmissionView } from '../../../lib/runtime/webhook/admit';
import { controller, NAMESPACE, pool, profile, pytorchGpu } from '../../../examples/platform';
import { pod, review } from './fixtures';

const t = (k: string) => `tensor-fusion.ai/${k}`;
const ANNOTATIONS = { [t('is-local-gpu')]: 'true', [t('tflops-limit')]: '20', [t('vram-limit')]: '8Gi' };

function view(isolation: 'hard' | 'shared' | undefined, nodeAgent?: boolean): AdmissionView {
  const pool = {
    apiVersion: 'tensor-fusion.ai/v1',
    kind: 'GPUPool',
    metadata: { name: 'a' },
    spec: { nodeManagerConfig: isolation ? { defaultIsolationMode: isolation } : {} },
  } as unknown as GPUPool;
  return {
    pool: (n: string) => (n === 'a' ? pool : undefined),
    poolNames: () => ['a'],
    defaultPool: () => 'a',
    profile: async () => undefined,
    workload: async () => undefined,
    ...(nodeAgent === undefined ? {} : { nodeAgent }),
  };
}

async function admit(v: AdmissionView, p = pod({ name: 'p', namespace: 'apps', annotations: ANNOTATIONS })) {
  const d = await admitPod(review(p).request!, v);
  if (!d.allowed) throw new Error(d.message);
  return d;
}

const SHARE_LIMIT = {
  op: 'add',
  path: '/spec/containers/0/resources',
  value: { requests: { 'tensor-fusion.ai/share': '1' }, limits: { 'tensor-fusion.ai/share': '1' } },
};

test('a pool that sets no isolation is hard: the container requests the share resource, with no warning where the agent runs', async () => {
  const d = await admit(view(undefined));
  expect(d.patch).toContainEqual(SHARE_LIMIT);
  expect(d.warnings).toBeUndefined();
});

test('a hard pool in an install without the node agent: the pod is warned that no kubelet can give it its GPU', async () => {
  const d = await admit(view('hard', false));
  expect(d.patch).toContainEqual(SHARE_LIMIT);
  expect(d.warnings).toEqual([
    'GPUPool "a" has hard isolation, but TensorFusionController runs no node agent (nodeAgent: false): no kubelet can give this pod its GPU devices, MPS daemon and limits, and a kubelet starts it without them; set nodeAgent: true, or the pool\'s isolation to shared',
  ]);
});

test('a shared pool: no share resource, and the warning that nothing enforces the limits (the agent does not matter)', async () => {
  const d = await admit(view('shared', false));
  expect(JSON.stringify(d.patch)).not.toContain('resources');
  expect(d.warnings).toEqual([
    'GPUPool "a" has spec.nodeManagerConfig.defaultIsolationMode "shared": the share\'s VRAM and compute limits reach the containers as variables only and nothing on the node enforces them',
  ]);
});

test("the example platform's GPU pod: the default install runs the agent its default (hard) pool needs, so no warning", async () => {
  const controllerEnv = renderController({ ...controller, image: 'example.io/tf:1' }).find((o) => o.kind === 'Deployment') as unknown as {
    spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
  };
  const env = Object.fromEntries(controllerEnv.spec.template.spec.containers[0].env!.map((e) => [e.name, e.value ?? '']));
  const gpuPool = renderGpuPool(pool.name!, pool) as unknown as GPUPool;
  const workloadProfile = renderWorkloadProfile(profile.name!, profile) as unknown as WorkloadProfile;
  const v: AdmissionView = {
    pool: (n: string) => (n === gpuPool.metadata.name ? gpuPool : undefined),
    poolNames: () => [gpuPool.metadata.name],
    defaultPool: () => gpuPool.metadata.name,
    profile: async (_ns: string, n: string) => (n === profile.name ? workloadProfile : undefined),
    workload: async () => undefined,
    nodeAgent: readEnv(env).nodeAgent,
  };
  const { labels, annotations } = encodeGpuWorkload(pytorchGpu, { containers: ['python'] });
  const d = await admit(v, pod({ name: 'p', namespace: NAMESPACE, labels, annotations }));
  expect(d.patch).toContainEqual(SHARE_LIMIT);
  expect(d.warnings).toBeUndefined();
});

/**
 * Bad pods, each denied over HTTPS with its exact message. Annotation messages are the codec's own
 * (lib/annotations); the rest name the field, the value and what is allowed in the same words.
 * A pod that does not fit is no longer refused: it waits Pending for the scheduler.
 */
import { API_VERSION } from '../../../lib/model/group';
import { decodeGpuAnnotations } from '../../../lib/annotations';
import { admitPod, AdmissionView } from '../../../lib/runtime/webhook/admit';
import { annotationKey as t } from '../../support/annotations';
import { GiB, patched, pod, post, review, useWebhookSuite, writes } from './fixtures';

const LABEL_RULE = "lowercase letters, digits and '-', starting and ending with a letter or digit";
const SUBDOMAIN_RULE =
  "a DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)";
const ALL_KEYS =
  'gpupool, inject-container, replicas, tflops-limit, tflops-request, vram-limit, vram-request, qos, workload, generate-workload, workload-profile, is-local-gpu, gpu-count, gpu-model, auto-requests, auto-limits, auto-replicas, no-standalone-worker-mode, ' +
  'compute-percent-request, compute-percent-limit, dedicated-gpu, gpu-indices, vendor, eviction-protection, isolation, partition-id, sidecar-worker, ' +
  'enabled-replicas, worker-pod-template, autoscale, autoscale-target, gang-enabled, gang-min-members, gang-timeout, disable-features, ' +
  'require-gpu-topology, gpu-topology-max-tier, gpu-topology-source';
const TFLOPS_RULE = "a positive number of TFLOPS such as '10' or '0.5'";
const VRAM_RULE = 'a positive Kubernetes quantity such as 4Gi or 512Mi';
const BOOL = 'expected "true" or "false"';

/** A valid local share unless overridden: the message then comes from the override alone. */
const BASE = { 'is-local-gpu': 'true', 'tflops-request': '10', 'vram-request': '1Gi' };

interface Case {
  name: string;
  annotations: Record<string, string | null>;
  containers?: string[];
  schedulerName?: string;
  message: string;
}

const CASES: Case[] = [
  {
    name: 'qos not a level',
    annotations: { qos: 'urgent' },
    message: `${t('qos')}: got "urgent", expected one of low, medium, high, critical`,
  },
  {
    name: 'qos in the wrong case',
    annotations: { qos: 'Medium' },
    message: `${t('qos')}: got "Medium", expected one of low, medium, high, critical`,
  },
  { name: 'gpu-count zero', annotations: { 'gpu-count': '0' }, message: `${t('gpu-count')}: got "0", expected an integer from 1 to 128` },
  {
    name: 'gpu-count too large',
    annotations: { 'gpu-count': '129' },
    message: `${t('gpu-count')}: got "129", expected an integer from 1 to 128`,
  },
  {
    name: 'gpu-count fractional',
    annotations: { 'gpu-count': '1.5' },
    message: `${t('gpu-count')}: got "1.5", expected an integer from 1 to 128`,
  },
  {
    name: 'gpu-count a word',
    annotations: { 'gpu-count': 'two' },
    message: `${t('gpu-count')}: got "two", expected an integer from 1 to 128`,
  },
  {
    name: 'gpu-count negative',
    annotations: { 'gpu-count': '-1' },
    message: `${t('gpu-count')}: got "-1", expected an integer from 1 to 128`,
  },
  {
    name: 'replicas negative',
    annotations: { replicas: '-1' },
    message: `${t('replicas')}: got "-1", expected an integer from 0 to 10000`,
  },
  {
    name: 'replicas a word',
    annotations: { replicas: 'many' },
    message: `${t('replicas')}: got "many", expected an integer from 0 to 10000`,
  },
  {
    name: 'tflops-request zero',
    annotations: { 'tflops-request': '0' },
    message: `${t('tflops-request')}: got "0", expected ${TFLOPS_RULE}`,
  },
  {
    name: 'tflops-request negative',
    annotations: { 'tflops-request': '-5' },
    message: `${t('tflops-request')}: got "-5", expected ${TFLOPS_RULE}`,
  },
  {
    name: 'tflops-request a word',
    annotations: { 'tflops-request': 'ten' },
    message: `${t('tflops-request')}: got "ten", expected ${TFLOPS_RULE}`,
  },
  { name: 'tflops-limit empty', annotations: { 'tflops-limit': '' }, message: `${t('tflops-limit')}: got "", expected ${TFLOPS_RULE}` },
  { name: 'vram-request zero', annotations: { 'vram-request': '0' }, message: `${t('vram-request')}: got "0", expected ${VRAM_RULE}` },
  {
    name: 'vram-request with a non-Kubernetes suffix',
    annotations: { 'vram-request': '4GB' },
    message: `${t('vram-request')}: got "4GB", expected ${VRAM_RULE}`,
  },
  { name: 'vram-limit a word', annotations: { 'vram-limit': 'lots' }, message: `${t('vram-limit')}: got "lots", expected ${VRAM_RULE}` },
  {
    name: 'tflops-limit below the request',
    annotations: { 'tflops-request': '20', 'tflops-limit': '10' },
    message: `${t('tflops-limit')}: got "10", expected at least ${t('tflops-request')} (20)`,
  },
  {
    name: 'vram-limit below the request',
    annotations: { 'vram-request': '8Gi', 'vram-limit': '4Gi' },
    message: `${t('vram-limit')}: got "4Gi", expected at least ${t('vram-request')} (8Gi)`,
  },
  { name: 'is-local-gpu yes', annotations: { 'is-local-gpu': 'yes' }, message: `${t('is-local-gpu')}: got "yes", ${BOOL}` },
  {
    name: 'generate-workload capitalised',
    annotations: { 'generate-workload': 'True' },
    message: `${t('generate-workload')}: got "True", ${BOOL}`,
  },
  { name: 'auto-requests as 1', annotations: { 'auto-requests': '1' }, message: `${t('auto-requests')}: got "1", ${BOOL}` },
  { name: 'auto-limits on', annotations: { 'auto-limits': 'on' }, message: `${t('auto-limits')}: got "on", ${BOOL}` },
  { name: 'auto-replicas no', annotations: { 'auto-replicas': 'no' }, message: `${t('auto-replicas')}: got "no", ${BOOL}` },
  {
    name: 'no-standalone-worker-mode maybe',
    annotations: { 'no-standalone-worker-mode': 'maybe' },
    message: `${t('no-standalone-worker-mode')}: got "maybe", ${BOOL}`,
  },
  {
    name: 'no-standalone-worker-mode in remote mode',
    annotations: { 'is-local-gpu': 'false', 'no-standalone-worker-mode': 'true' },
    message: `${t('no-standalone-worker-mode')}: got "true", expected "false" or nothing, unless ${t('is-local-gpu')} is "true"`,
  },
  {
    name: 'no-standalone-worker-mode on a pool without a worker image',
    annotations: { 'no-standalone-worker-mode': 'true' },
    message: `${t('no-standalone-worker-mode')}: got "true", expected "false" or nothing, unless GPUPool "pool-a" sets spec.componentConfig.worker.image (the worker this mode injects)`,
  },
  {
    name: 'generate-workload false without a workload',
    annotations: { 'generate-workload': 'false' },
    message: `${t('workload')}: got nothing, expected the name of an existing TensorFusionWorkload, since ${t('generate-workload')} is "false"`,
  },
  {
    name: 'generate-workload false naming a missing workload',
    annotations: { 'generate-workload': 'false', workload: 'ghost' },
    message: `${t('workload')}: got "ghost", expected the name of an existing TensorFusionWorkload in namespace "default", since ${t('generate-workload')} is "false"`,
  },
  {
    name: 'gpupool with capitals',
    annotations: { gpupool: 'Pool_A' },
    message: `${t('gpupool')}: got "Pool_A", expected a DNS-1123 label of at most 58 characters (${LABEL_RULE})`,
  },
  {
    name: 'gpupool too long',
    annotations: { gpupool: 'a'.repeat(59) },
    message: `${t('gpupool')}: got "${'a'.repeat(59)}", expected a DNS-1123 label of at most 58 characters (${LABEL_RULE})`,
  },
  {
    name: 'gpupool that does not exist',
    annotations: { gpupool: 'nope' },
    message: `${t('gpupool')}: got "nope", expected the name of a GPUPool: pool-a, tiny`,
  },
  {
    name: 'workload with a space',
    annotations: { workload: 'My Workload' },
    message: `${t('workload')}: got "My Workload", expected ${SUBDOMAIN_RULE}`,
  },
  {
    name: 'workload-profile starting with a dash',
    annotations: { 'workload-profile': '-bad' },
    message: `${t('workload-profile')}: got "-bad", expected ${SUBDOMAIN_RULE}`,
  },
  {
    name: 'workload-profile that does not exist',
    annotations: { 'workload-profile': 'nope' },
    message: `${t('workload-profile')}: got "nope", expected the name of a WorkloadProfile in namespace "default"`,
  },
  {
    name: 'workload-profile with an invalid qos',
    annotations: { 'workload-profile': 'bad-qos' },
    message: 'WorkloadProfile.spec.qos: got "bogus", expected one of low, medium, high, critical',
  },
  {
    name: 'workload-profile limit below its request',
    annotations: { 'workload-profile': 'inverted', 'tflops-request': null },
    message: 'WorkloadProfile.spec.resources.limits.tflops: got "5", expected at least WorkloadProfile.spec.resources.requests.tflops (10)',
  },
  {
    name: 'gpu-model with a leading space',
    annotations: { 'gpu-model': ' A100' },
    message: `${t('gpu-model')}: got " A100", expected "A100", without surrounding spaces`,
  },
  {
    name: 'gpu-model empty',
    annotations: { 'gpu-model': '' },
    message: `${t('gpu-model')}: got "", expected a GPU model name such as A100 or H100, without surrounding spaces`,
  },
  {
    name: 'inject-container not in the pod',
    annotations: { 'inject-container': 'java' },
    message: `${t('inject-container')}: got "java", expected a container of the pod template: one of python`,
  },
  {
    name: 'inject-container not a DNS label',
    annotations: { 'inject-container': 'Py_thon' },
    message: `${t('inject-container')}: got "Py_thon", expected a container name: a DNS-1123 label (${LABEL_RULE})`,
  },
  {
    name: 'inject-container empty',
    annotations: { 'inject-container': '' },
    message: `${t('inject-container')}: got "", expected at least one container name`,
  },
  {
    name: 'inject-container naming a container twice',
    annotations: { 'inject-container': 'python,python' },
    message: `${t('inject-container')}: got "python,python", expected each container named once ("python" is named 2 times)`,
  },
  {
    name: 'two containers and no inject-container',
    annotations: {},
    containers: ['python', 'sidecar'],
    message: `${t('inject-container')}: got nothing, expected a comma-separated list of container names, required because the pod template has 2 containers (python, sidecar)`,
  },
  {
    name: 'a misspelt key',
    annotations: { 'tflops-requst': '10' },
    message: `${t('tflops-requst')}: got "10", expected a known tensor-fusion.ai annotation; did you mean ${t('tflops-request')}?`,
  },
  {
    name: 'the enabled label as an annotation',
    annotations: { enabled: 'true' },
    message: `${t('enabled')}: got "true", expected a known tensor-fusion.ai annotation; ${t('enabled')} is a pod label, not an annotation`,
  },
  {
    name: 'an unknown key',
    annotations: { zzzzzzzzzzzzzzzz: 'x' },
    message: `${t('zzzzzzzzzzzzzzzz')}: got "x", expected a known tensor-fusion.ai annotation: ${ALL_KEYS}`,
  },
  {
    name: 'no TFLOPS anywhere',
    annotations: { 'tflops-request': null },
    message: `${t('tflops-request')}: got nothing, expected a TFLOPS request (or ${t('tflops-limit')}), here or in the WorkloadProfile`,
  },
  {
    name: 'no VRAM anywhere',
    annotations: { 'vram-request': null },
    message: `${t('vram-request')}: got nothing, expected a VRAM request (or ${t('vram-limit')}), here or in the WorkloadProfile`,
  },
  {
    name: 'another scheduler',
    annotations: {},
    schedulerName: 'volcano',
    message:
      'spec.schedulerName: got "volcano", expected nothing, "default-scheduler" or "tensor-fusion-scheduler", since local GPU shares are placed by tensor-fusion-scheduler',
  },
  {
    name: 'several problems at once',
    annotations: { qos: 'urgent', 'gpu-count': '0' },
    message: `${t('qos')}: got "urgent", expected one of low, medium, high, critical\n${t('gpu-count')}: got "0", expected an integer from 1 to 128`,
  },
];

const suite = useWebhookSuite(
  [
    { name: 'pool-a', nodes: 1, gpusPerNode: 2, isDefault: true },
    { name: 'tiny', nodes: 1, gpusPerNode: 1, vram: 40 * GiB },
  ],
  (double) => {
    const profile = (name: string, spec: Record<string, unknown>) =>
      double.put('workloadprofiles', { apiVersion: API_VERSION, kind: 'WorkloadProfile', metadata: { name, namespace: 'default' }, spec });
    profile('bad-qos', { qos: 'bogus' });
    profile('inverted', { resources: { requests: { tflops: '10', vram: '1Gi' }, limits: { tflops: '5', vram: '1Gi' } } });
  },
);

function annotationsOf(c: Case): Record<string, string> {
  const merged: Record<string, string | null> = { ...BASE, ...c.annotations };
  return Object.fromEntries(
    Object.entries(merged)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [t(k), v as string]),
  );
}

it('has at least 40 bad inputs', () => {
  expect(CASES.length).toBeGreaterThanOrEqual(40);
});

it.each(CASES.map((c) => [c.name, c] as const))('denies %s with its exact message', async (_name, c) => {
  const p = pod({ name: 'bad', annotations: annotationsOf(c), containers: c.containers });
  if (c.schedulerName) (p.spec as Record<string, unknown>).schedulerName = c.schedulerName;
  const answer = await post(suite.webhook.port(), suite.agent, review(p));
  expect(answer.status).toBe(200);
  expect(answer.body.response.allowed).toBe(false);
  expect(answer.body.response.status).toEqual({ code: 403, message: c.message, reason: 'Forbidden' });
  expect(answer.body.response.patch).toBeUndefined();
});

it('uses the codec message unchanged for every annotation-only case', async () => {
  for (const c of CASES) {
    const decoded = decodeGpuAnnotations(annotationsOf(c), { containers: c.containers ?? ['python'] });
    if (decoded.issues.length > 0) expect(decoded.issues.map((i) => i.message).join('\n')).toBe(c.message);
  }
});

it('wrote nothing to the API server for any of them', () => {
  expect(writes(suite.double)).toEqual([]);
});

describe('what no longer denies: a share that does not fit now waits Pending', () => {
  it.each([
    ['more TFLOPS than a GPU has', { 'tflops-request': '200' }],
    ['more VRAM than a GPU has', { 'vram-request': '100Gi' }],
    ['more GPUs than a node has', { 'gpu-count': '2' }],
    ['a model the pool does not have', { 'gpu-model': 'H100' }],
  ])('admits %s and records the request for the scheduler', async (_name, extra) => {
    const p = pod({ name: 'big', annotations: annotationsOf({ name: '', annotations: { gpupool: 'tiny', ...extra }, message: '' }) });
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(answer.body.response.allowed).toBe(true);
    expect(patched(p, answer.body).spec).toMatchObject({ schedulerName: 'tensor-fusion-scheduler' });
  });
});

describe('schedulers', () => {
  const withScheduler = (name: string | undefined, extra: Record<string, string | null> = {}) => {
    const p = pod({ name: 's', annotations: annotationsOf({ name: '', annotations: extra, message: '' }) });
    if (name !== undefined) (p.spec as Record<string, unknown>).schedulerName = name;
    return p;
  };

  it.each([[undefined], [''], ['default-scheduler'], ['tensor-fusion-scheduler']])('takes over a local-GPU pod naming %p', async (name) => {
    const p = withScheduler(name);
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(answer.body.response.allowed).toBe(true);
    expect((patched(p, answer.body).spec as Record<string, unknown>).schedulerName).toBe('tensor-fusion-scheduler');
  });

  it('leaves a pod of the T9k Scheduler untouched, whatever its annotations say', async () => {
    const p = withScheduler('t9k-scheduler', { qos: 'urgent' });
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(answer.body.response).toEqual({ uid: answer.body.response.uid, allowed: true });
  });

  it('lets a remote-mode client keep its own scheduler (it holds no GPU share)', async () => {
    const p = withScheduler('volcano', { 'is-local-gpu': 'false' });
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(answer.body.response.allowed).toBe(true);
    expect((patched(p, answer.body).spec as Record<string, unknown>).schedulerName).toBe('volcano');
  });
});

describe('pool resolution without a usable default', () => {
  const services = (pools: string[], defaultPool?: string): AdmissionView => ({
    pool: () => undefined,
    poolNames: () => pools,
    defaultPool: () => defaultPool,
    profile: async () => undefined,
    workload: async () => undefined,
  });
  const req = () => review(pod({ name: 'p', annotations: annotationsOf({ name: '', annotations: {}, message: '' }) })).request!;

  it('denies a pod naming no pool when none is marked default', async () => {
    expect(await admitPod(req(), services(['a']))).toEqual({
      allowed: false,
      code: 403,
      message: `${t('gpupool')}: got nothing, expected a GPUPool name, since no GPUPool is annotated tensor-fusion.ai/is-default-pool: "true"`,
    });
  });

  it('denies when the pool marked default is gone, and when the cluster has no pool', async () => {
    expect(await admitPod(req(), services(['a'], 'gone'))).toEqual({
      allowed: false,
      code: 403,
      message: 'tensor-fusion.ai/is-default-pool: got "gone", expected the name of a GPUPool: a',
    });
    expect(await admitPod(req(), services([], 'gone'))).toEqual({
      allowed: false,
      code: 403,
      message: 'tensor-fusion.ai/is-default-pool: got "gone", expected the name of a GPUPool, but the cluster has none',
    });
  });

  it('denies a pod without containers', async () => {
    const r = req();
    (r.object!.spec as { containers: unknown[] }).containers = [];
    expect(await admitPod(r, services(['a'], 'a'))).toEqual({
      allowed: false,
      code: 403,
      message: 'spec.containers: got [], expected at least one named container',
    });
  });
});

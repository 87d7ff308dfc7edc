/** Admission over HTTPS on loopback: local and remote mode, reinvocation, dry runs, protocol edges. */
import type * as https from 'node:https';
import type { ApiServerDouble } from '../support/api-server';
import { ALLOCATION_ANNOTATION, API_VERSION, ENABLED_LABEL, GPU_IDS_ANNOTATION, HOSTNAME_LABEL, WORKLOAD_LABEL } from '../../lib/labels';
import type { WebhookHandle } from '../../lib/runtime/webhook/start';
import { MAX_BODY_BYTES } from '../../lib/runtime/webhook/server';
import {
  client, GiB, ledgerEntries, NS, patched, patchOps, pod, post, review, seedPool, startDouble, startTestWebhook,
} from './fixtures';

let double: ApiServerDouble;
let webhook: WebhookHandle;
let agent: https.Agent;

const ann = (a: Record<string, string>) => Object.fromEntries(Object.entries(a).map(([k, v]) => [`tensor-fusion.ai/${k}`, v]));
const envOf = (p: any, container = 0) => Object.fromEntries((p.spec.containers[container].env ?? []).map((e: any) => [e.name, e.value]));

beforeAll(async () => {
  double = await startDouble();
  seedPool(double, {
    name: 'pool-a', nodes: 2, gpusPerNode: 2, tflops: 312, isDefault: true,
    taints: [{ key: 'tensor-fusion.ai/pool', value: 'pool-a', effect: 'NoSchedule' }, { key: 'other.io/maintenance', value: 'x', effect: 'NoSchedule' }],
  });
  seedPool(double, { name: 'remote', nodes: 1, gpusPerNode: 1, spec: { defaultUsingLocalGPU: false } });
  double.put('workloadprofiles', {
    apiVersion: API_VERSION, kind: 'WorkloadProfile', metadata: { name: 'small', namespace: 'default' },
    spec: { resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } }, qos: 'high', isLocalGPU: true },
  });
  double.put('tensorfusionworkloads', {
    apiVersion: API_VERSION, kind: 'TensorFusionWorkload', metadata: { name: 'existing', namespace: 'default' }, spec: { replicas: 2, poolName: 'remote' },
  });
  webhook = await startTestWebhook(double);
  agent = client();
});

afterAll(async () => {
  agent.destroy();
  await webhook.close();
  await double.stop();
});

describe('local GPU mode', () => {
  const annotations = ann({ 'is-local-gpu': 'true', 'tflops-request': '31.2', 'tflops-limit': '62.4', 'vram-request': '4Gi', 'vram-limit': '8Gi', 'generate-workload': 'false', workload: 'existing', 'gpu-count': '2' });

  it('pins the pod to a node, injects the share and records the allocation', async () => {
    const p = pod({ name: 'train-0', annotations });
    const r = review(p);
    const answer = await post(webhook.port(), agent, r);
    expect(answer.status).toBe(200);
    expect(answer.body.apiVersion).toBe('admission.k8s.io/v1');
    expect(answer.body.response.uid).toBe(r.request!.uid);
    expect(answer.body.response.allowed).toBe(true);
    expect(answer.body.response.patchType).toBe('JSONPatch');
    const out: any = patched(p, answer.body);
    const allocation = JSON.parse(out.metadata.annotations[ALLOCATION_ANNOTATION]);
    expect(allocation).toMatchObject({ id: r.request!.uid, pool: 'pool-a', tflopsRequest: 31.2, tflopsLimit: 62.4, vramRequest: 4 * GiB, vramLimit: 8 * GiB, qos: 'medium' });
    expect(allocation.gpuIds).toHaveLength(2);
    expect(out.metadata.annotations[GPU_IDS_ANNOTATION]).toBe(allocation.gpuIds.join(','));
    expect(out.metadata.labels[WORKLOAD_LABEL]).toBe('existing');
    expect(out.spec.nodeSelector).toEqual({ [HOSTNAME_LABEL]: allocation.node });
    // Only the pool's taint is tolerated, not unrelated ones.
    expect(out.spec.tolerations).toEqual([{ key: 'tensor-fusion.ai/pool', operator: 'Equal', value: 'pool-a', effect: 'NoSchedule' }]);
    const env = envOf(out);
    const n = allocation.node.split('-').pop();
    expect(env.NVIDIA_VISIBLE_DEVICES).toBe(allocation.gpuIds.map((g: string) => `GPU-pool-a-${n}-${g.split('-').pop()}`).join(','));
    expect(env).toMatchObject({
      TENSOR_FUSION_MODE: 'local', TENSOR_FUSION_POOL: 'pool-a', TENSOR_FUSION_QOS: 'medium',
      TENSOR_FUSION_TFLOPS_REQUEST: '31.2', TENSOR_FUSION_TFLOPS_LIMIT: '62.4',
      TENSOR_FUSION_VRAM_REQUEST: String(4 * GiB), TENSOR_FUSION_VRAM_LIMIT: String(8 * GiB),
      TENSOR_FUSION_GPU_COUNT: '2', TENSOR_FUSION_WORKLOAD: 'existing', TENSOR_FUSION_ALLOCATION_ID: r.request!.uid,
      CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=8192M,1=8192M', CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '20',
    });
    expect(ledgerEntries(double, 'pool-a').map((e) => e.allocation.id)).toContain(r.request!.uid);
  });

  it('answers a reinvocation of an admitted pod with an empty patch and no second allocation', async () => {
    const p = pod({ name: 'train-1', annotations });
    const first = await post(webhook.port(), agent, review(p));
    const admitted = patched(p, first.body);
    const before = ledgerEntries(double, 'pool-a').length;
    const again = await post(webhook.port(), agent, review(admitted));
    expect(again.body.response.allowed).toBe(true);
    expect(again.body.response.patch).toBeUndefined();
    expect(ledgerEntries(double, 'pool-a')).toHaveLength(before);
  });

  it('recognises the allocation when the reinvocation reaches another replica', async () => {
    const other = await startTestWebhook(double, { name: 'other-replica' });
    try {
      const p = pod({ name: 'train-4', annotations });
      const admitted = patched(p, (await post(webhook.port(), agent, review(p))).body);
      const before = ledgerEntries(double, 'pool-a').length;
      const again = await post(other.port(), agent, review(admitted));
      expect(again.body.response.allowed).toBe(true);
      expect(again.body.response.patch).toBeUndefined();
      expect(ledgerEntries(double, 'pool-a')).toHaveLength(before);
    } finally {
      await other.close();
    }
  });

  it('injects into a container another webhook added, on reinvocation', async () => {
    const p = pod({ name: 'train-2', annotations: { ...annotations, 'tensor-fusion.ai/inject-container': 'python,sidecar' }, containers: ['python', 'sidecar'] });
    const admitted: any = patched(p, (await post(webhook.port(), agent, review(p))).body);
    delete admitted.spec.containers[1].env;
    const again = await post(webhook.port(), agent, review(admitted));
    expect(patchOps(again.body).map((o) => o.path)).toEqual(['/spec/containers/1/env']);
  });

  it('does not trust an allocation annotation copied from another pod', async () => {
    const p = pod({ name: 'train-3', annotations: { ...annotations, [ALLOCATION_ANNOTATION]: JSON.stringify({ id: 'copied', pool: 'pool-a', node: 'pool-a-node-0', gpuIds: ['pool-a-node-0-gpu-0'] }) } });
    const r = review(p);
    const out = patched(p, (await post(webhook.port(), agent, r)).body);
    expect(JSON.parse(out.metadata.annotations![ALLOCATION_ANNOTATION]).id).toBe(r.request!.uid);
  });

  it('counts fractional VRAM quantities as whole bytes, rounded up', async () => {
    const p = pod({ name: 'frac', annotations: ann({ 'is-local-gpu': 'true', 'tflops-request': '1', 'vram-request': '1500m', 'vram-limit': '0.5Ki' }) });
    const out: any = patched(p, (await post(webhook.port(), agent, review(p))).body);
    expect(JSON.parse(out.metadata.annotations[ALLOCATION_ANNOTATION])).toMatchObject({ vramRequest: 2, vramLimit: 512 });
  });

  it('gives a dry run the same answer and writes nothing', async () => {
    double.requests.length = 0;
    const before = double.getObject('configmaps', 'tf-alloc-pool-a', NS)!.metadata.resourceVersion;
    const p = pod({ name: 'dry', annotations: { ...ann({ 'is-local-gpu': 'true', 'tflops-request': '10', 'vram-request': '1Gi' }) } });
    const answer = await post(webhook.port(), agent, review(p, { dryRun: true }));
    expect(answer.body.response.allowed).toBe(true);
    expect(JSON.parse(patched(p, answer.body).metadata.annotations![ALLOCATION_ANNOTATION]).pool).toBe('pool-a');
    expect(double.getObject('configmaps', 'tf-alloc-pool-a', NS)!.metadata.resourceVersion).toBe(before);
    expect(double.requests.filter((q) => q.method !== 'GET')).toEqual([]);
    expect(double.getObject('tensorfusionworkloads', 'dry', 'default')).toBeUndefined();
  });

  it('takes settings from the WorkloadProfile below the annotations, and generates the workload', async () => {
    const p = pod({
      annotations: ann({ 'workload-profile': 'small', 'tflops-limit': '20' }),
      labels: { [ENABLED_LABEL]: 'true', 'pod-template-hash': '5d8f7' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d8f7', uid: 'u1', controller: true }],
    });
    const out: any = patched(p, (await post(webhook.port(), agent, review(p))).body);
    expect(envOf(out)).toMatchObject({ TENSOR_FUSION_TFLOPS_REQUEST: '5', TENSOR_FUSION_TFLOPS_LIMIT: '20', TENSOR_FUSION_QOS: 'high', TENSOR_FUSION_WORKLOAD: 'web' });
    const wl = double.getObject('tensorfusionworkloads', 'web', 'default')!;
    expect(wl.spec).toMatchObject({ poolName: 'pool-a', qos: 'high', isLocalGPU: true, gpuCount: 1, resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '20', vram: '3Gi' } } });
  });

  it('adds the worker init container in no-standalone-worker mode when the pool names a worker image', async () => {
    seedPool(double, { name: 'with-worker', nodes: 1, gpusPerNode: 1, spec: { componentConfig: { worker: { image: 'registry.example/worker:1' } } } });
    await new Promise((r) => setTimeout(r, 200));
    const p = pod({ name: 'nsw', annotations: ann({ gpupool: 'with-worker', 'is-local-gpu': 'true', 'no-standalone-worker-mode': 'true', 'tflops-request': '10', 'vram-request': '1Gi' }) });
    const out: any = patched(p, (await post(webhook.port(), agent, review(p))).body);
    expect(out.spec.initContainers[0]).toMatchObject({ name: 'tensor-fusion-worker', image: 'registry.example/worker:1' });
  });
});

describe('remote mode', () => {
  it('points the client at the workload and generates it with replicas', async () => {
    const p = pod({ name: 'client-0', annotations: ann({ gpupool: 'remote', 'tflops-request': '10', 'vram-request': '2Gi', replicas: '3', workload: 'infer' }) });
    const answer = await post(webhook.port(), agent, review(p));
    const out: any = patched(p, answer.body);
    expect(out.metadata.annotations[ALLOCATION_ANNOTATION]).toBeUndefined();
    expect(out.spec.nodeSelector).toBeUndefined();
    expect(envOf(out)).toMatchObject({
      TENSOR_FUSION_MODE: 'remote', TENSOR_FUSION_CONNECTION_NAME: 'infer', TENSOR_FUSION_CONNECTION_NAMESPACE: 'default',
      TENSOR_FUSION_WORKER_SELECTOR: `${WORKLOAD_LABEL}=infer`, TENSOR_FUSION_POOL: 'remote',
    });
    expect(double.getObject('tensorfusionworkloads', 'infer', 'default')!.spec).toMatchObject({ replicas: 3, isLocalGPU: false, poolName: 'remote' });
  });
});

describe('protocol', () => {
  it('allows pods that are not opted in, unchanged', async () => {
    const p = pod({ name: 'plain', labels: {} });
    const answer = await post(webhook.port(), agent, review(p));
    expect(answer.body.response).toEqual({ uid: answer.body.response.uid, allowed: true });
  });

  it('allows operations other than CREATE unchanged', async () => {
    const answer = await post(webhook.port(), agent, review(pod({ name: 'x', annotations: ann({ qos: 'bad' }) }), { operation: 'UPDATE' }));
    expect(answer.body.response.allowed).toBe(true);
  });

  it('answers 400 to what is not an AdmissionReview and 404 elsewhere', async () => {
    expect(await post(webhook.port(), agent, '{not json')).toEqual({ status: 400, body: 'body: expected JSON' });
    expect(await post(webhook.port(), agent, { apiVersion: 'admission.k8s.io/v1beta1', request: { uid: 'u' } }))
      .toEqual({ status: 400, body: 'apiVersion: got "admission.k8s.io/v1beta1", expected "admission.k8s.io/v1"' });
    expect(await post(webhook.port(), agent, { apiVersion: 'admission.k8s.io/v1', request: {} }))
      .toEqual({ status: 400, body: 'request.uid: expected a non-empty string' });
    expect((await post(webhook.port(), agent, review(pod()), '/other')).status).toBe(404);
  });

  it('accepts a 3 MiB pod and refuses a body over the limit with 413', async () => {
    const big = pod({ name: 'big', labels: {} });
    big.metadata.annotations = { note: 'x'.repeat(3 * 2 ** 20) };
    expect((await post(webhook.port(), agent, review(big))).body.response.allowed).toBe(true);
    big.metadata.annotations = { note: 'x'.repeat(MAX_BODY_BYTES) };
    expect((await post(webhook.port(), agent, review(big))).status).toBe(413);
  });
});

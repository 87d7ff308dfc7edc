/**
 * Admission over HTTPS on loopback: local pods are marked for our scheduler (exact patches), remote
 * pods pointed at their workload, reinvocation is a no-op, and nothing is ever written to the API.
 */
import {
  ALLOCATION_ANNOTATION,
  ENABLED_LABEL,
  GENERATED_WORKLOAD_LABEL,
  GPU_IDS_ANNOTATION,
  PLACEMENT_ANNOTATIONS,
  SHARE_ANNOTATION,
  WORKLOAD_LABEL,
} from '../../../lib/model/metadata-keys';
import { API_VERSION } from '../../../lib/model/group';
import { shareOf } from '../../../lib/runtime/shared/share';
import { MAX_BODY_BYTES } from '../../../lib/runtime/webhook/admission-server';
import { WORKER_SECURITY_CONTEXT } from '../../../lib/runtime/webhook/admit';
import { SCHEDULER_NAME } from '../../../lib/contract/object-names';
import { LIMITS_MOUNT_PATH, LIMITS_VOLUME, limitsVolume } from '../../../lib/runtime/shared/pod-share/limits-volume';
import { ann } from '../../support/annotations';
import { GiB, patched, patchOps, pod, post, review, useWebhookSuite, writes } from './fixtures';

const envOf = (p: any, container = 0) =>
  Object.fromEntries((p.spec.containers[container].env ?? []).map((e: any) => [e.name, e.value ?? e.valueFrom]));
const fromAnnotation = (key: string) => ({ valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${key}']` } } });

/** The env a local pod of the "train" share below gets, in order. */
const TRAIN_ENV = [
  { name: 'TENSOR_FUSION_MODE', value: 'local' },
  { name: 'TENSOR_FUSION_POOL', value: 'pool-a' },
  { name: 'TENSOR_FUSION_QOS', value: 'medium' },
  { name: 'TENSOR_FUSION_TFLOPS_REQUEST', value: '31.2' },
  { name: 'TENSOR_FUSION_TFLOPS_LIMIT', value: '62.4' },
  { name: 'TENSOR_FUSION_VRAM_REQUEST', value: '4294967296' },
  { name: 'TENSOR_FUSION_VRAM_LIMIT', value: '8589934592' },
  { name: 'TENSOR_FUSION_GPU_COUNT', value: '2' },
  { name: 'TENSOR_FUSION_WORKLOAD', value: 'existing' },
  { name: 'TENSOR_FUSION_ALLOCATION_ID', ...fromAnnotation('tensor-fusion.ai/allocation-id') },
];
/** Under shared isolation the device and MPS variables come from the bind's annotations too; under hard, the device plugin sets them. */
const SHARED_ENV = [
  ...TRAIN_ENV.map((e) => (e.name === 'TENSOR_FUSION_POOL' ? { ...e, value: 'advisory' } : e)),
  { name: 'NVIDIA_VISIBLE_DEVICES', ...fromAnnotation('tensor-fusion.ai/visible-devices') },
  { name: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT', ...fromAnnotation('tensor-fusion.ai/mps-memory-limit') },
  { name: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', ...fromAnnotation('tensor-fusion.ai/mps-thread-percentage') },
];
const SHARE_LIMIT = {
  op: 'add',
  path: '/spec/containers/0/resources',
  value: { requests: { 'tensor-fusion.ai/share': '1' }, limits: { 'tensor-fusion.ai/share': '1' } },
};
const TRAIN_SHARE =
  '{"pool":"pool-a","qos":"medium","gpuCount":2,"tflopsRequest":31.2,"tflopsLimit":62.4,"vramRequest":4294967296,"vramLimit":8589934592}';

const suite = useWebhookSuite(
  [
    {
      name: 'pool-a',
      nodes: 2,
      gpusPerNode: 2,
      tflops: 312,
      isDefault: true,
      taints: [{ key: 'tensor-fusion.ai/pool', value: 'pool-a', effect: 'NoSchedule' }],
    },
    { name: 'remote', nodes: 1, gpusPerNode: 1, spec: { defaultUsingLocalGPU: false } },
    { name: 'with-worker', nodes: 1, gpusPerNode: 1, spec: { componentConfig: { worker: { image: 'registry.example/worker:1' } } } },
    { name: 'advisory', nodes: 1, gpusPerNode: 2, spec: { nodeManagerConfig: { defaultIsolationMode: 'shared' } } },
  ],
  (double) => {
    double.put('workloadprofiles', {
      apiVersion: API_VERSION,
      kind: 'WorkloadProfile',
      metadata: { name: 'small', namespace: 'default' },
      spec: { resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } }, qos: 'high', isLocalGPU: true },
    });
    double.put('gpuresourcequotas', {
      apiVersion: API_VERSION,
      kind: 'GPUResourceQuota',
      metadata: { name: 'team-a', namespace: 'capped' },
      spec: {
        single: { maxRequests: { tflops: '50' }, maxLimits: { vram: '8Gi' }, maxGPUCount: 1 },
        total: { requests: { tflops: '10' } },
      },
    });
    double.put('tensorfusionworkloads', {
      // Generated (by the controller, from other pods): reused without comparing shares.
      apiVersion: API_VERSION,
      kind: 'TensorFusionWorkload',
      metadata: { name: 'existing', namespace: 'default', labels: { [GENERATED_WORKLOAD_LABEL]: 'true' } },
      spec: { replicas: 2, poolName: 'remote' },
    });
  },
);

/** A local-GPU share of the pool with a worker image, in no-standalone-worker mode. */
const NO_STANDALONE = ann({
  gpupool: 'with-worker',
  'is-local-gpu': 'true',
  'no-standalone-worker-mode': 'true',
  'tflops-request': '10',
  'vram-request': '1Gi',
});

describe('local GPU mode', () => {
  const annotations = ann({
    'is-local-gpu': 'true',
    'tflops-request': '31.2',
    'tflops-limit': '62.4',
    'vram-request': '4Gi',
    'vram-limit': '8Gi',
    'generate-workload': 'false',
    workload: 'existing',
    'gpu-count': '2',
  });

  it('marks the pod for our scheduler with its share, priority class and downward-API env, and nothing else', async () => {
    const p = pod({ name: 'train-0', annotations });
    // What the Priority admission plugin sets before mutating webhooks run.
    Object.assign(p.spec as object, { priority: 0, preemptionPolicy: 'PreemptLowerPriority' });
    const r = review(p);
    const answer = await post(suite.webhook.port(), suite.agent, r);
    expect(answer.status).toBe(200);
    expect(answer.body.apiVersion).toBe('admission.k8s.io/v1');
    expect(answer.body.response).toMatchObject({ uid: r.request!.uid, allowed: true, patchType: 'JSONPatch' });
    expect(answer.body.response.warnings).toBeUndefined();
    expect(patchOps(answer.body)).toEqual([
      { op: 'add', path: '/metadata/annotations/tensor-fusion.ai~1share', value: TRAIN_SHARE },
      { op: 'add', path: '/metadata/labels/tensor-fusion.ai~1workload', value: 'existing' },
      { op: 'add', path: '/spec/schedulerName', value: 'tensor-fusion-scheduler' },
      { op: 'add', path: '/spec/priorityClassName', value: 'tensor-fusion-medium' },
      { op: 'add', path: '/spec/priority', value: 200 },
      { op: 'add', path: '/spec/preemptionPolicy', value: 'Never' },
      { op: 'add', path: '/spec/containers/0/env', value: TRAIN_ENV },
      // Hard isolation (the default): the kubelet gets the GPU, the share's MPS daemon and limits from the agent.
      SHARE_LIMIT,
    ]);
    const out: any = patched(p, answer.body);
    expect(out.spec.nodeSelector).toBeUndefined();
    expect(out.spec.tolerations).toBeUndefined();
    expect(shareOf(out)).toEqual({
      pool: 'pool-a',
      qos: 'medium',
      gpuCount: 2,
      tflopsRequest: 31.2,
      tflopsLimit: 62.4,
      vramRequest: 4 * GiB,
      vramLimit: 8 * GiB,
    });
  });

  it('in a pool of shared isolation gives the device and MPS variables from the bind and the limits as files, with a warning that nothing enforces them', async () => {
    const p = pod({ name: 'advisory-0', annotations: { ...annotations, 'tensor-fusion.ai/gpupool': 'advisory' } });
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(answer.body.response.warnings).toEqual([
      'GPUPool "advisory" has spec.nodeManagerConfig.defaultIsolationMode "shared": the share\'s VRAM and compute limits reach the containers as variables only and nothing on the node enforces them',
    ]);
    const ops = patchOps(answer.body);
    expect(ops).toContainEqual({ op: 'add', path: '/spec/containers/0/env', value: SHARED_ENV });
    // The MPS limits as files the kubelet refreshes after an in-place resize (limits-volume.ts).
    expect(ops).toContainEqual({ op: 'add', path: '/spec/volumes', value: [limitsVolume()] });
    expect(ops).toContainEqual({
      op: 'add',
      path: '/spec/containers/0/volumeMounts',
      value: [{ name: LIMITS_VOLUME, mountPath: LIMITS_MOUNT_PATH, readOnly: true }],
    });
    expect(JSON.stringify(ops)).not.toContain('tensor-fusion.ai/share"');
  });

  it('keeps the resources a container has, adding the share resource to its requests and limits', async () => {
    const p: any = pod({ name: 'sized', annotations });
    p.spec.containers[0].resources = { limits: { memory: '1Gi' }, requests: { cpu: '1' } };
    const ops = patchOps((await post(suite.webhook.port(), suite.agent, review(p))).body);
    expect(ops.filter((o) => o.path.includes('/resources'))).toEqual([
      { op: 'add', path: '/spec/containers/0/resources/requests/tensor-fusion.ai~1share', value: '1' },
      { op: 'add', path: '/spec/containers/0/resources/limits/tensor-fusion.ai~1share', value: '1' },
    ]);
  });

  it('writes the priority fields of the class, so the Priority admission plugin has nothing to change', async () => {
    const p = pod({ name: 'train-1', annotations });
    Object.assign(p.spec as object, { priority: 200, preemptionPolicy: 'Never' });
    const paths = patchOps((await post(suite.webhook.port(), suite.agent, review(p))).body).map((o) => `${o.op} ${o.path}`);
    expect(paths).toContain('add /spec/priorityClassName');
    expect(paths.filter((x) => (x.includes('/spec/priority') && x !== 'add /spec/priorityClassName') || x.includes('preemption'))).toEqual(
      [],
    );
  });

  it('gives each QoS level its priority class', async () => {
    for (const qos of ['low', 'medium', 'high', 'critical']) {
      const p = pod({ name: `q-${qos}`, annotations: { ...annotations, 'tensor-fusion.ai/qos': qos } });
      expect((patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body).spec as any).priorityClassName).toBe(
        `tensor-fusion-${qos}`,
      );
    }
  });

  it('keeps a priority class the pod names, with a warning, and leaves its priority alone', async () => {
    const p = pod({ name: 'own-class', annotations: { ...annotations, 'tensor-fusion.ai/qos': 'high' } });
    Object.assign(p.spec as object, { priorityClassName: 'batch', priority: 1000, preemptionPolicy: 'Never' });
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(answer.body.response.warnings).toEqual([
      'spec.priorityClassName: kept "batch", so QoS "high" does not set the pod\'s scheduling priority (it would be "tensor-fusion-high")',
    ]);
    expect(patchOps(answer.body).filter((o) => o.path.startsWith('/spec/prio') || o.path === '/spec/preemptionPolicy')).toEqual([]);
    expect(patched(p, answer.body).spec).toMatchObject({ priorityClassName: 'batch', priority: 1000, preemptionPolicy: 'Never' });
  });

  it('records the share request in whole bytes', async () => {
    const p = pod({
      name: 'frac',
      annotations: ann({
        'is-local-gpu': 'true',
        'tflops-request': '1',
        'vram-request': '1.5Mi',
        'vram-limit': '0.5Gi',
        'gpu-model': 'A100',
      }),
    });
    const out = patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body);
    expect(out.metadata.annotations![SHARE_ANNOTATION]).toBe(
      '{"pool":"pool-a","qos":"medium","gpuCount":1,"tflopsRequest":1,"tflopsLimit":1,"vramRequest":1572864,"vramLimit":536870912,"gpuModel":"A100"}',
    );
  });

  it('replaces every env entry with a name it owns, duplicates included, keeping the others in place', async () => {
    const p: any = pod({ name: 'dups', annotations: { ...annotations, 'tensor-fusion.ai/gpupool': 'advisory' } });
    p.spec.containers[0].env = [
      { name: 'A', value: '1' },
      { name: 'NVIDIA_VISIBLE_DEVICES', value: 'all' },
      { name: 'TENSOR_FUSION_POOL', value: 'other' },
      { name: 'B', value: '$(NVIDIA_VISIBLE_DEVICES)' },
      { name: 'NVIDIA_VISIBLE_DEVICES', value: 'all' },
      { name: 'TENSOR_FUSION_POOL', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ];
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    const byName = (n: string) => SHARED_ENV.find((e) => e.name === n);
    expect(patchOps(answer.body).filter((o) => o.path.includes('/env'))).toEqual([
      {
        op: 'replace',
        path: '/spec/containers/0/env',
        value: [
          { name: 'A', value: '1' },
          byName('NVIDIA_VISIBLE_DEVICES'),
          byName('TENSOR_FUSION_POOL'),
          { name: 'B', value: '$(NVIDIA_VISIBLE_DEVICES)' },
          ...SHARED_ENV.filter((e) => e.name !== 'NVIDIA_VISIBLE_DEVICES' && e.name !== 'TENSOR_FUSION_POOL'),
        ],
      },
    ]);
    const env = (patched(p, answer.body) as any).spec.containers[0].env;
    expect(env.filter((e: any) => e.name === 'NVIDIA_VISIBLE_DEVICES')).toEqual([byName('NVIDIA_VISIBLE_DEVICES')]);
  });

  it('removes the placement records of a pod copied from a bound one, and records its own share', async () => {
    const copied = {
      [ALLOCATION_ANNOTATION]: JSON.stringify({ id: 'other-uid', pool: 'pool-a', node: 'pool-a-node-0', gpuIds: ['pool-a-node-0-gpu-0'] }),
      [GPU_IDS_ANNOTATION]: 'pool-a-node-0-gpu-0',
      [PLACEMENT_ANNOTATIONS.allocationId]: 'other-uid',
      [PLACEMENT_ANNOTATIONS.visibleDevices]: 'GPU-pool-a-0-0',
      [PLACEMENT_ANNOTATIONS.mpsMemoryLimit]: '0=8192M',
      [PLACEMENT_ANNOTATIONS.mpsThreadPercentage]: '20',
      [SHARE_ANNOTATION]: '{"pool":"pool-a","qos":"low","gpuCount":1,"tflopsRequest":1,"tflopsLimit":1,"vramRequest":1,"vramLimit":1}',
    };
    const p = pod({ name: 'copy', annotations: { ...annotations, ...copied } });
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(patchOps(answer.body).filter((o) => o.path.startsWith('/metadata/annotations'))).toEqual([
      { op: 'remove', path: '/metadata/annotations/tensor-fusion.ai~1allocation' },
      { op: 'remove', path: '/metadata/annotations/tensor-fusion.ai~1gpu-ids' },
      { op: 'remove', path: '/metadata/annotations/tensor-fusion.ai~1allocation-id' },
      { op: 'remove', path: '/metadata/annotations/tensor-fusion.ai~1visible-devices' },
      { op: 'remove', path: '/metadata/annotations/tensor-fusion.ai~1mps-memory-limit' },
      { op: 'remove', path: '/metadata/annotations/tensor-fusion.ai~1mps-thread-percentage' },
      { op: 'add', path: '/metadata/annotations/tensor-fusion.ai~1share', value: TRAIN_SHARE },
    ]);
    const out = patched(p, answer.body);
    expect(Object.keys(out.metadata.annotations!).filter((k) => k in copied)).toEqual([SHARE_ANNOTATION]);
  });

  it('answers a reinvocation of an admitted pod with an empty patch, also once the API server has defaulted it', async () => {
    const p = pod({ name: 'again', annotations: ann({ 'is-local-gpu': 'true', 'tflops-request': '10', 'vram-request': '1Gi' }) });
    const admitted: any = patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body);
    expect((await post(suite.webhook.port(), suite.agent, review(admitted))).body.response).toEqual({
      uid: expect.any(String),
      allowed: true,
    });
    // As stored: fieldRef.apiVersion defaulted, the empty TENSOR_FUSION_WORKLOAD value dropped (omitempty).
    for (const e of admitted.spec.containers[0].env) {
      if (e.valueFrom) e.valueFrom.fieldRef.apiVersion = 'v1';
      if (e.value === '') delete e.value;
    }
    expect((await post(suite.webhook.port(), suite.agent, review(admitted))).body.response).toEqual({
      uid: expect.any(String),
      allowed: true,
    });
  });

  it('is a no-op when reinvoked after another webhook added a sidecar container, an init container and env', async () => {
    const p = pod({ name: 'meshed', annotations });
    const admitted: any = patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body);
    admitted.spec.containers.push({
      name: 'istio-proxy',
      image: 'istio/proxyv2:1.22',
      env: [{ name: 'ISTIO_META_POD_PORTS', value: '[]' }],
    });
    admitted.spec.initContainers = [{ name: 'vault-agent-init', image: 'hashicorp/vault:1.16' }];
    admitted.spec.containers[0].env.push({ name: 'VAULT_ADDR', value: 'https://vault:8200' });
    const again = await post(suite.webhook.port(), suite.agent, review(admitted));
    expect(again.body.response).toEqual({ uid: expect.any(String), allowed: true });
  });

  it('injects into a listed container another webhook emptied, on reinvocation', async () => {
    const p = pod({
      name: 'train-2',
      annotations: { ...annotations, 'tensor-fusion.ai/inject-container': 'python,sidecar' },
      containers: ['python', 'sidecar'],
    });
    const admitted: any = patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body);
    delete admitted.spec.containers[1].env;
    const again = await post(suite.webhook.port(), suite.agent, review(admitted));
    expect(patchOps(again.body)).toEqual([{ op: 'add', path: '/spec/containers/1/env', value: TRAIN_ENV }]);
  });

  it('turns spec.nodeName into a required node affinity, so that the scheduler places the share on that node', async () => {
    const p: any = pod({ name: 'pinned', annotations });
    p.spec.nodeName = 'pool-a-node-1';
    p.spec.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
          ],
        },
      },
    };
    const out: any = patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body);
    expect(out.spec.nodeName).toBeUndefined();
    const onNode = { key: 'metadata.name', operator: 'In', values: ['pool-a-node-1'] };
    expect(out.spec.affinity).toEqual({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }], matchFields: [onNode] },
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }], matchFields: [onNode] },
          ],
        },
      },
    });
    expect((await post(suite.webhook.port(), suite.agent, review(out))).body.response.patch).toBeUndefined();
  });

  it('takes settings from the WorkloadProfile below the annotations and names the workload after the owner', async () => {
    const p = pod({
      annotations: ann({ 'workload-profile': 'small', 'tflops-limit': '20' }),
      labels: { [ENABLED_LABEL]: 'true', 'pod-template-hash': '5d8f7' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d8f7', uid: 'u1', controller: true }],
    });
    const out: any = patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body);
    expect(envOf(out)).toMatchObject({
      TENSOR_FUSION_TFLOPS_REQUEST: '5',
      TENSOR_FUSION_TFLOPS_LIMIT: '20',
      TENSOR_FUSION_QOS: 'high',
      TENSOR_FUSION_WORKLOAD: 'web',
    });
    expect(out.metadata.labels[WORKLOAD_LABEL]).toBe('web');
    expect(out.spec.priorityClassName).toBe('tensor-fusion-high');
  });

  it('adds the worker init container, with the same env, in no-standalone-worker mode', async () => {
    const p = pod({
      name: 'nsw',
      annotations: NO_STANDALONE,
    });
    const out: any = patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body);
    expect(out.spec.initContainers).toEqual([
      {
        name: 'tensor-fusion-worker',
        image: 'registry.example/worker:1',
        env: out.spec.containers[0].env,
        securityContext: WORKER_SECURITY_CONTEXT,
      },
    ]);
    expect(envOf(out, 0).TENSOR_FUSION_ALLOCATION_ID).toEqual(fromAnnotation(PLACEMENT_ANNOTATIONS.allocationId).valueFrom);
    const stored = JSON.parse(JSON.stringify(out));
    Object.assign(stored.spec.initContainers[0], { imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log' });
    expect((await post(suite.webhook.port(), suite.agent, review(stored))).body.response.patch).toBeUndefined();
  });

  it("refuses a share past a per-pod bound of its namespace's GPUResourceQuota, naming the value, the bound and the quota", async () => {
    const over = pod({
      name: 'too-big',
      namespace: 'capped',
      annotations: ann({ 'tflops-request': '60', 'vram-request': '4Gi', 'vram-limit': '12Gi', 'gpu-count': '2' }),
    });
    expect((await post(suite.webhook.port(), suite.agent, review(over))).body.response.status.message).toBe(
      [
        'tensor-fusion.ai/tflops-request: got "60", expected at most 50, the single.maxRequests.tflops of GPUResourceQuota "team-a" in namespace "capped"',
        'tensor-fusion.ai/vram-limit: got "12Gi", expected at most 8Gi, the single.maxLimits.vram of GPUResourceQuota "team-a" in namespace "capped"',
        'tensor-fusion.ai/gpu-count: got "2", expected at most 1, the single.maxGPUCount of GPUResourceQuota "team-a" in namespace "capped"',
      ].join('\n'),
    );
    // Within the per-pod bounds it is admitted, though the namespace total (10 TFLOPS) is passed:
    // totals are the extender's, at placement, where the pod waits for room.
    const fits = pod({ name: 'fits', namespace: 'capped', annotations: ann({ 'tflops-request': '50', 'vram-request': '4Gi' }) });
    expect((await post(suite.webhook.port(), suite.agent, review(fits))).body.response.allowed).toBe(true);
    // Another namespace is not bound by it.
    const elsewhere = pod({ name: 'elsewhere', annotations: ann({ 'tflops-request': '60', 'vram-request': '4Gi' }) });
    expect((await post(suite.webhook.port(), suite.agent, review(elsewhere))).body.response.allowed).toBe(true);
  });

  it('refuses an app container named like the worker init container, and a foreign init container of that name', async () => {
    const nsw = { ...NO_STANDALONE, ...ann({ 'inject-container': 'python' }) };
    const p: any = pod({ name: 'clash', annotations: nsw, containers: ['python', 'tensor-fusion-worker'] });
    p.spec.initContainers = [{ name: 'tensor-fusion-worker', image: 'mine' }];
    expect((await post(suite.webhook.port(), suite.agent, review(p))).body.response.status.message).toBe(
      [
        'spec.containers[1].name: got "tensor-fusion-worker", expected a name other than "tensor-fusion-worker", which tensor-fusion.ai/no-standalone-worker-mode "true" gives the worker init container it adds',
        'spec.initContainers[0].name: got "tensor-fusion-worker", expected a name other than "tensor-fusion-worker", which tensor-fusion.ai/no-standalone-worker-mode "true" gives the worker init container it adds',
      ].join('\n'),
    );
  });

  it('keeps what a later webhook did to its init container (securityContext, mounts) on reinvocation', async () => {
    const p = pod({
      name: 'nsw-later',
      annotations: NO_STANDALONE,
    });
    const out: any = patched(p, (await post(suite.webhook.port(), suite.agent, review(p))).body);
    out.spec.initContainers[0].securityContext = { ...WORKER_SECURITY_CONTEXT, runAsUser: 1000 };
    out.spec.initContainers[0].volumeMounts = [{ name: 'certs', mountPath: '/certs' }];
    expect((await post(suite.webhook.port(), suite.agent, review(out))).body.response.patch).toBeUndefined();
    // One of our variables changed by someone: only the env list is written back, never the container whole.
    const env = out.spec.initContainers[0].env;
    env[1] = { name: 'TENSOR_FUSION_POOL', value: 'other' };
    const ops = patchOps((await post(suite.webhook.port(), suite.agent, review(out))).body);
    expect(ops.map((o) => `${o.op} ${o.path}`)).toEqual(['replace /spec/initContainers/0/env']);
    expect(ops[0].value[1]).toEqual({ name: 'TENSOR_FUSION_POOL', value: 'with-worker' });
  });

  it('answers a dry run reinvoked with a new uid with an empty patch', async () => {
    const p: any = pod({ name: 'dry-again', annotations });
    p.spec.nodeName = 'pool-a-node-0';
    const first = await post(suite.webhook.port(), suite.agent, review(p, { dryRun: true }));
    const admitted = patched(p, first.body);
    const again = await post(suite.webhook.port(), suite.agent, review(admitted, { dryRun: true }));
    expect(again.body.response.uid).not.toBe(first.body.response.uid);
    expect(again.body.response.patch).toBeUndefined();
  });

  it('gives a dry run the same answer', async () => {
    const p = pod({ name: 'dry', annotations });
    const real = patchOps((await post(suite.webhook.port(), suite.agent, review(p))).body);
    expect(patchOps((await post(suite.webhook.port(), suite.agent, review(p, { dryRun: true }))).body)).toEqual(real);
  });
});

describe('remote mode', () => {
  it('points the client at the workload, and leaves its scheduler, priority and annotations alone', async () => {
    const p = pod({
      name: 'client-0',
      annotations: ann({ gpupool: 'remote', 'tflops-request': '10', 'vram-request': '2Gi', replicas: '3', workload: 'infer' }),
    });
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(patchOps(answer.body).map((o) => `${o.op} ${o.path}`)).toEqual([
      'add /metadata/labels/tensor-fusion.ai~1workload',
      'add /spec/containers/0/env',
    ]);
    const out: any = patched(p, answer.body);
    expect(envOf(out)).toEqual({
      TENSOR_FUSION_MODE: 'remote',
      TENSOR_FUSION_POOL: 'remote',
      TENSOR_FUSION_QOS: 'medium',
      TENSOR_FUSION_TFLOPS_REQUEST: '10',
      TENSOR_FUSION_TFLOPS_LIMIT: '10',
      TENSOR_FUSION_VRAM_REQUEST: String(2 * GiB),
      TENSOR_FUSION_VRAM_LIMIT: String(2 * GiB),
      TENSOR_FUSION_GPU_COUNT: '1',
      TENSOR_FUSION_WORKLOAD: 'infer',
      TENSOR_FUSION_CONNECTION_NAME: 'infer',
      TENSOR_FUSION_CONNECTION_NAMESPACE: 'default',
      TENSOR_FUSION_WORKER_SELECTOR: `${WORKLOAD_LABEL}=infer`,
    });
  });

  it('removes a share request or placement records the client came with, and says so: its worker holds the share', async () => {
    // A whole GPU asked of our scheduler without the webhook's resolution (profile, pool, limits).
    const forged = {
      [SHARE_ANNOTATION]:
        '{"pool":"remote","qos":"critical","gpuCount":1,"tflopsRequest":0,"tflopsLimit":50,"vramRequest":0,"vramLimit":8000000000}',
      [PLACEMENT_ANNOTATIONS.visibleDevices]: '0',
    };
    const p = pod({
      name: 'client-1',
      annotations: { ...ann({ gpupool: 'remote', 'tflops-request': '1', 'vram-request': '1Gi', workload: 'infer' }), ...forged },
    });
    (p.spec as Record<string, unknown>).schedulerName = SCHEDULER_NAME;
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(answer.body.response.allowed).toBe(true);
    expect(patchOps(answer.body).map((o) => `${o.op} ${o.path}`)).toEqual([
      'remove /metadata/annotations/tensor-fusion.ai~1share',
      'remove /metadata/annotations/tensor-fusion.ai~1visible-devices',
      'add /metadata/labels/tensor-fusion.ai~1workload',
      'add /spec/containers/0/env',
    ]);
    expect(answer.body.response.warnings).toContain(
      'metadata.annotations: removed tensor-fusion.ai/share, tensor-fusion.ai/visible-devices: a remote-GPU pod holds no share of its own, the worker pods of TensorFusionWorkload default/infer do',
    );
    const out: any = patched(p, answer.body);
    expect(shareOf(out)).toBeUndefined();
    expect(out.spec.schedulerName).toBe(SCHEDULER_NAME);
  });
});

describe('no API write on the admission path', () => {
  it('creates nothing from a forged AdmissionReview: no workload, no worker, no write request of any kind', async () => {
    const before = suite.double.requests.length;
    const forged = pod({
      name: 'forged',
      namespace: 'kube-system',
      annotations: ann({
        gpupool: 'remote',
        'is-local-gpu': 'false',
        'generate-workload': 'true',
        workload: 'forged',
        replicas: '10000',
        'tflops-request': '10',
        'vram-request': '1Gi',
      }),
    });
    const answer = await post(suite.webhook.port(), suite.agent, review(forged));
    expect(answer.body.response.allowed).toBe(true);
    const local = pod({
      name: 'forged-local',
      namespace: 'kube-system',
      annotations: ann({ 'is-local-gpu': 'true', 'tflops-request': '10', 'vram-request': '1Gi' }),
    });
    expect((await post(suite.webhook.port(), suite.agent, review(local))).body.response.allowed).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(suite.double.requests.slice(before).filter((q) => q.method !== 'GET')).toEqual([]);
    expect(suite.double.getObject('tensorfusionworkloads', 'forged', 'kube-system')).toBeUndefined();
    expect(suite.double.listObjects('pods')).toEqual([]);
  });

  it('reads a named workload from the cache only: one that does not exist yet costs no API read', async () => {
    const before = suite.double.requests.length;
    const named = pod({
      name: 'rollout-0',
      annotations: ann({ 'is-local-gpu': 'true', workload: 'not-yet', 'tflops-request': '10', 'vram-request': '1Gi' }),
    });
    expect((await post(suite.webhook.port(), suite.agent, review(named))).body.response.allowed).toBe(true);
    expect(suite.double.requests.slice(before).filter((q) => q.path.includes('tensorfusionworkloads'))).toEqual([]);
  });

  it('wrote nothing during any admission of this file', () => {
    expect(writes(suite.double)).toEqual([]);
    expect(suite.double.listObjects('tensorfusionworkloads').map((w) => w.metadata.name)).toEqual(['existing']);
  });
});

describe('protocol', () => {
  it('allows pods that are not opted in, unchanged', async () => {
    const p = pod({ name: 'plain', labels: {} });
    const answer = await post(suite.webhook.port(), suite.agent, review(p));
    expect(answer.body.response).toEqual({ uid: answer.body.response.uid, allowed: true });
  });

  it('allows operations other than CREATE unchanged', async () => {
    const answer = await post(
      suite.webhook.port(),
      suite.agent,
      review(pod({ name: 'x', annotations: ann({ qos: 'bad' }) }), { operation: 'UPDATE' }),
    );
    expect(answer.body.response).toEqual({ uid: answer.body.response.uid, allowed: true });
  });

  it('answers 400 to what is not an AdmissionReview and 404 elsewhere', async () => {
    expect(await post(suite.webhook.port(), suite.agent, '{not json')).toEqual({ status: 400, body: 'body: expected JSON' });
    expect(await post(suite.webhook.port(), suite.agent, { apiVersion: 'admission.k8s.io/v1beta1', request: { uid: 'u' } })).toEqual({
      status: 400,
      body: 'apiVersion: got "admission.k8s.io/v1beta1", expected "admission.k8s.io/v1"',
    });
    expect(await post(suite.webhook.port(), suite.agent, { apiVersion: 'admission.k8s.io/v1', request: {} })).toEqual({
      status: 400,
      body: 'request.uid: expected a non-empty string',
    });
    expect((await post(suite.webhook.port(), suite.agent, review(pod()), '/other')).status).toBe(404);
  });

  it('accepts a 3 MiB pod and refuses a body over the limit with 413', async () => {
    const big = pod({ name: 'big', labels: {} });
    big.metadata.annotations = { note: 'x'.repeat(3 * 2 ** 20) };
    expect((await post(suite.webhook.port(), suite.agent, review(big))).body.response.allowed).toBe(true);
    big.metadata.annotations = { note: 'x'.repeat(MAX_BODY_BYTES) };
    expect((await post(suite.webhook.port(), suite.agent, review(big))).status).toBe(413);
  });
});

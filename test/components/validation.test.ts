/**
 * Every validation rule reachable from the components, with its exact message, in both frameworks.
 * Each case builds the same bad input in cdk8s and in Pulumi.
 */
import { ApiObject, Chart, Testing } from 'cdk8s';
import * as Cdk8s from '../../components/cdk8s';
import * as Pulumi from '../../components/pulumi';
import type { GpuWorkloadOptions } from '../../lib/annotations';
import type { T9kGpuOptions } from '../../lib/t9k';

const REF_NAME =
  "a DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)";
const DNS_NAME = REF_NAME;
const DNS_LABEL =
  "a DNS-1123 label of at most 63 characters (lowercase letters, digits and '-', starting and ending with a letter or digit)";
const LABEL_VALUE = "a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
const POOL_NAME =
  "a DNS-1123 label of at most 58 characters (lowercase letters, digits and '-', starting and ending with a letter or digit)";
const QOS = 'one of low, medium, high, critical';

const chart = () => new Chart(Testing.app(), 'c', { namespace: 'ml' });

/** [rule, props, exact message] for a component class with (scope, id, props) / (name, props). */
type Case<P> = [string, P, string];

function bothThrow<P>(cdk8s: (props: P) => unknown, pulumi: (props: P) => unknown, cases: Case<P>[]) {
  it.each(cases)('cdk8s: %s', (_rule, props, message) => {
    expect(() => cdk8s(props)).toThrow(message);
    expect(() => cdk8s(props)).toThrow(new Error(message));
  });
  it.each(cases)('Pulumi: %s', (_rule, props, message) => {
    expect(() => pulumi(props)).toThrow(new Error(message));
  });
}

describe('GpuPool rules', () => {
  const ctx = 'GpuPool p: ';
  bothThrow<Cdk8s.GpuPoolProps>(
    (props) => new Cdk8s.GpuPool(chart(), 'p', props),
    (props) => new Pulumi.GpuPool('p', props),
    [
      ['bad pool name', { name: 'Bad_Pool' }, `${ctx}name: got "Bad_Pool", expected ${POOL_NAME}`],
      ['pool name too long for the node label', { name: 'a'.repeat(59) }, `${ctx}name: got "${'a'.repeat(59)}", expected ${POOL_NAME}`],
      ['bad defaultQos', { defaultQos: 'urgent' as never }, `${ctx}defaultQos: got "urgent", expected ${QOS}`],
      [
        'bad placement',
        { placement: 'Random' as never },
        `${ctx}placement: got "Random", expected one of MinFragmentation, CompactFirst, LowLoadFirst, NodeCompactGPULowLoad`,
      ],
      [
        "upstream's soft isolation",
        { isolation: 'soft' as never },
        `${ctx}isolation: got "soft", expected one of hard, shared (upstream's "soft", an LD_PRELOAD limiter, is not provided by this runtime; "hard" holds limits with MPS)`,
      ],
      ['unknown isolation', { isolation: 'mps' as never }, `${ctx}isolation: got "mps", expected one of hard, shared`],
      ['unknown shareDelivery', { shareDelivery: 'Dra' as never }, `${ctx}shareDelivery: got "Dra", expected one of DevicePlugin, DRA`],
      [
        'DRA with shared isolation',
        { shareDelivery: 'DRA', isolation: 'shared' },
        `${ctx}shareDelivery: got "DRA", expected "DevicePlugin" while isolation is "shared" (DRA delivers a share with its MPS daemon, so it needs isolation "hard")`,
      ],
      [
        'growth on a DRA pool',
        { shareDelivery: 'DRA', growth: { gpusPerNode: 4 } },
        `${ctx}growth: got {"gpusPerNode":4}, expected unset while shareDelivery is "DRA" (growth counts shares the scheduler extender refused for GPU room, and a DRA share is refused by kube-scheduler's claim allocator instead, so no node would be asked for it)`,
      ],
      [
        'tflopsOversellRatio below 100',
        { tflopsOversellRatio: 50 },
        `${ctx}tflopsOversellRatio: got 50, expected an integer percentage from 100 to 100000`,
      ],
      [
        'tflopsOversellRatio above 100000',
        { tflopsOversellRatio: 100001 },
        `${ctx}tflopsOversellRatio: got 100001, expected an integer percentage from 100 to 100000`,
      ],
      [
        'vramExpandToHostMem above 100',
        { vramExpandToHostMem: 101 },
        `${ctx}vramExpandToHostMem: got 101, expected an integer percentage from 0 to 100`,
      ],
      [
        'vramExpandToHostDisk negative',
        { vramExpandToHostDisk: -1 },
        `${ctx}vramExpandToHostDisk: got -1, expected an integer percentage from 0 to 100`,
      ],
      ['growth.gpusPerNode zero', { growth: { gpusPerNode: 0 } }, `${ctx}growth.gpusPerNode: got 0, expected an integer from 1 to 64`],
      [
        'growth.gpusPerNode not whole',
        { growth: { gpusPerNode: 1.5 } },
        `${ctx}growth.gpusPerNode: got 1.5, expected an integer from 1 to 64`,
      ],
      [
        'growth.resource without a domain',
        { growth: { gpusPerNode: 8, resource: 'gpu' } },
        `${ctx}growth.resource: got "gpu", expected an extended resource name <domain>/<name> outside kubernetes.io, such as nvidia.com/gpu`,
      ],
      [
        'growth.resource of kubernetes.io',
        { growth: { gpusPerNode: 8, resource: 'kubernetes.io/gpu' } },
        `${ctx}growth.resource: got "kubernetes.io/gpu", expected an extended resource name <domain>/<name> outside kubernetes.io, such as nvidia.com/gpu`,
      ],
      ['bad label value', { labels: { tier: 'gold class' } }, `${ctx}labels["tier"]: got "gold class", expected ${LABEL_VALUE}`],
      [
        'bad vram in minResources',
        { minResources: { vram: '4GB' } },
        `${ctx}spec.capacityConfig.minResources.vram: got "4GB", expected a Kubernetes quantity such as 4Gi or 512Mi`,
      ],
      [
        'bad gpuTflops value',
        { gpuTflops: { A100: 'fast' } },
        `${ctx}spec.capacityConfig.gpuTflops.A100: got "fast", expected a Kubernetes quantity such as '10', '0.5' or 500m (fractions as strings)`,
      ],
    ],
  );
});

describe('GpuNode rules', () => {
  const ctx = 'GpuNode n: ';
  const gpu = { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' };
  bothThrow<Cdk8s.GpuNodeProps>(
    (props) => new Cdk8s.GpuNode(chart(), 'n', props),
    (props) => new Pulumi.GpuNode('n', props),
    [
      ['bad nodeName', { nodeName: 'Bad_Node' }, `${ctx}nodeName: got "Bad_Node", expected ${DNS_NAME}`],
      ['no nodeName (plain JavaScript)', {} as never, `${ctx}nodeName: got nothing, expected ${DNS_NAME}`],
      ['bad pool name', { nodeName: 'n', pools: ['ok', 'Bad'] }, `${ctx}pools[1]: got "Bad", expected ${POOL_NAME}`],
      ['gpu.count 0', { nodeName: 'n', gpu: { ...gpu, count: 0 } }, `${ctx}gpu.count: got 0, expected an integer from 1 to 128`],
      [
        'gpu.count not an integer',
        { nodeName: 'n', gpu: { ...gpu, count: 1.5 } },
        `${ctx}gpu.count: got 1.5, expected an integer from 1 to 128`,
      ],
      [
        'gpu.memory 80GB',
        { nodeName: 'n', gpu: { ...gpu, memory: '80GB' } },
        `${ctx}gpu.memory: got "80GB", expected a positive Kubernetes quantity such as 4Gi or 512Mi`,
      ],
      [
        'gpu.memory not whole MiB',
        { nodeName: 'n', gpu: { ...gpu, memory: '1000000000' } },
        `${ctx}gpu.memory: got "1000000000", expected a whole number of MiB, as GFD labels it (e.g. 80Gi or 81920Mi)`,
      ],
      [
        'gpu.model not a label value',
        { nodeName: 'n', gpu: { ...gpu, model: 'A 100' } },
        `${ctx}gpu.model: got "A 100", expected ${LABEL_VALUE}`,
      ],
      ['bad vendor', { nodeName: 'n', vendor: 'NV IDIA' }, `${ctx}vendor: got "NV IDIA", expected ${LABEL_VALUE}`],
      ['bad extra label', { nodeName: 'n', labels: { zone: 'a b' } }, `${ctx}labels["zone"]: got "a b", expected ${LABEL_VALUE}`],
      [
        'unknown t9k accelerator',
        { nodeName: 'n', t9k: { accelerator: 'tpu' as never } },
        `${ctx}t9k.accelerator: got "tpu", expected one of nvidia-gpu, amd-gpu, huawei-npu`,
      ],
      [
        'xgn on amd-gpu',
        { nodeName: 'n', t9k: { accelerator: 'amd-gpu', allocMode: 'xgn' } },
        `${ctx}t9k.allocMode: got "xgn", expected nothing for accelerator "amd-gpu" (xgn and sgn apply to nvidia-gpu only)`,
      ],
      [
        'nvidia-gpu without allocMode',
        { nodeName: 'n', t9k: { accelerator: 'nvidia-gpu' } },
        `${ctx}t9k.allocMode: got nothing, expected one of xgn, sgn for accelerator "nvidia-gpu"`,
      ],
      [
        'bad allocMode',
        { nodeName: 'n', t9k: { accelerator: 'nvidia-gpu', allocMode: 'xyz' as never } },
        `${ctx}t9k.allocMode: got "xyz", expected one of xgn, sgn`,
      ],
    ],
  );
});

const resources = (req: { tflops: string; vram: string }, lim: { tflops: string; vram: string }) => ({
  resources: { requests: req, limits: lim },
});

describe.each([
  [
    'WorkloadProfile',
    (p: Cdk8s.WorkloadProfileProps) => new Cdk8s.WorkloadProfile(chart(), 'w', p),
    (p: Cdk8s.WorkloadProfileProps) => new Pulumi.WorkloadProfile('w', p),
  ],
  [
    'TensorFusionWorkload',
    (p: Cdk8s.WorkloadProfileProps) => new Cdk8s.TensorFusionWorkload(chart(), 'w', p),
    (p: Cdk8s.WorkloadProfileProps) => new Pulumi.TensorFusionWorkload('w', p),
  ],
])('%s rules', (kind, cdk8s, pulumi) => {
  const ctx = `${kind} w: `;
  bothThrow<Cdk8s.WorkloadProfileProps>(cdk8s, pulumi, [
    [
      'vram limit below request',
      resources({ tflops: '5', vram: '4Gi' }, { tflops: '5', vram: '2Gi' }),
      `${ctx}spec.resources.limits.vram: got "2Gi", expected at least spec.resources.requests.vram (4Gi)`,
    ],
    [
      'tflops limit below request',
      resources({ tflops: '5', vram: '4Gi' }, { tflops: '4', vram: '4Gi' }),
      `${ctx}spec.resources.limits.tflops: got "4", expected at least spec.resources.requests.tflops (5)`,
    ],
    [
      'bad vram quantity',
      resources({ tflops: '5', vram: '4XB' }, { tflops: '5', vram: '4Gi' }),
      `${ctx}spec.resources.requests.vram: got "4XB", expected a Kubernetes quantity such as 4Gi or 512Mi, at most 1Pi`,
    ],
    [
      'requests without limits',
      { resources: { requests: { tflops: '1', vram: '1Gi' } } } as never,
      `${ctx}spec.resources.limits: got nothing, expected an object with fields tflops, vram (required in spec.resources)`,
    ],
    [
      "seed 001's autoScaling: true",
      { autoScaling: true } as never,
      `${ctx}spec.autoScaling: got true, expected spec.autoScalingConfig instead: autoScaling is not a ${kind} field`,
    ],
    [
      "seed 001's minReplicas and maxReplicas",
      { minReplicas: 1, maxReplicas: 5 } as never,
      `${ctx}spec.minReplicas: got 1, expected spec.autoScalingConfig instead: minReplicas is not a ${kind} field\n` +
        `spec.maxReplicas: got 5, expected spec.autoScalingConfig instead: maxReplicas is not a ${kind} field`,
    ],
    ['bad qos', { qos: 'urgent' as never }, `${ctx}spec.qos: got "urgent", expected ${QOS}`],
    ['gpuCount 0', { gpuCount: 0 }, `${ctx}spec.gpuCount: got 0, expected an integer from 1 to 128`],
    ['negative replicas', { replicas: -1 }, `${ctx}spec.replicas: got -1, expected an integer from 0 to 10000`],
    ['bad name', { name: 'Bad' }, `${ctx}name: got "Bad", expected ${DNS_NAME}`],
    [
      'isLocalGpu with its deprecated spelling',
      { isLocalGpu: true, isLocalGPU: false },
      `${ctx}isLocalGPU: got false, expected nothing when isLocalGpu is set (isLocalGPU is its deprecated spelling)`,
    ],
    ['bad namespace', { namespace: 'ml.team' }, `${ctx}namespace: got "ml.team", expected ${DNS_LABEL}`],
  ]);
});

describe('GpuResourceQuota rules', () => {
  const ctx = 'GpuResourceQuota q: ';
  const EMPTY =
    'at least one bound: spec.total.requests, spec.total.limits (tflops, vram) or spec.total.maxWorkers for the namespace, ' +
    'or spec.single.maxRequests, spec.single.maxLimits (tflops, vram) or spec.single.maxGPUCount for each pod';
  const COMPUTE = "compute (upstream's percent of one GPU) is not provided by this runtime's quotas";
  bothThrow<Cdk8s.GpuResourceQuotaProps>(
    (props) => new Cdk8s.GpuResourceQuota(chart(), 'q', props),
    (props) => new Pulumi.GpuResourceQuota('q', props),
    [
      ['no bound', { namespace: 'ml' }, `${ctx}spec: got {}, expected ${EMPTY}`],
      [
        'only the alert threshold',
        { namespace: 'ml', total: { alertThresholdPercent: 80 } },
        `${ctx}spec: got {"total":{"alertThresholdPercent":80}}, expected ${EMPTY}`,
      ],
      [
        'no namespace',
        { total: { maxWorkers: 4 } } as never,
        `${ctx}namespace: got nothing, expected the namespace whose GPU pods the quota bounds, such as team-a`,
      ],
      ['bad namespace', { namespace: 'ml.team', total: { maxWorkers: 4 } }, `${ctx}namespace: got "ml.team", expected ${DNS_LABEL}`],
      [
        'total limits below requests',
        { namespace: 'ml', total: { requests: { tflops: '100', vram: '40Gi' }, limits: { tflops: '50', vram: '40Gi' } } },
        `${ctx}spec.total.limits.tflops: got "50", expected at least spec.total.requests.tflops (100)`,
      ],
      [
        'single maxLimits below maxRequests',
        { namespace: 'ml', single: { maxRequests: { vram: '8Gi' }, maxLimits: { vram: '4Gi' } } },
        `${ctx}spec.single.maxLimits.vram: got "4Gi", expected at least spec.single.maxRequests.vram (8Gi)`,
      ],
      [
        'a total over the TFLOPS bound',
        { namespace: 'ml', total: { requests: { tflops: '1e9' } } },
        `${ctx}spec.total.requests.tflops: got "1e9", expected at most 100000000 TFLOPS per namespace`,
      ],
      [
        'a VRAM without a unit',
        { namespace: 'ml', single: { maxRequests: { vram: 16 } } },
        `${ctx}spec.single.maxRequests.vram: got 16, expected at least 1Mi of VRAM (a number or a quantity without a unit is bytes): did you mean "16Gi"?`,
      ],
      [
        'maxGpuCount 0',
        { namespace: 'ml', single: { maxGpuCount: 0 } },
        `${ctx}single.maxGpuCount: got 0, expected an integer from 1 to 128`,
      ],
      [
        "the spec's spelling maxGPUCount",
        { namespace: 'ml', single: { maxGPUCount: 2 } } as never,
        `${ctx}single.maxGPUCount: got 2, expected single.maxGpuCount instead: maxGPUCount is the spelling of the spec`,
      ],
      [
        'maxWorkers below 0 and alert over 100',
        { namespace: 'ml', total: { maxWorkers: -1, alertThresholdPercent: 101 } },
        `${ctx}spec.total.maxWorkers: got -1, expected a non-negative integer\n` +
          'spec.total.alertThresholdPercent: got 101, expected an integer from 0 to 100',
      ],
      [
        "upstream's compute",
        { namespace: 'ml', total: { requests: { tflops: '100', compute: '50' } } } as never,
        `${ctx}spec.total.requests.compute: got "50", expected spec.total.requests.tflops instead: ${COMPUTE}`,
      ],
      [
        "upstream's single.defaultRequests",
        { namespace: 'ml', single: { maxGpuCount: 1, defaultRequests: { tflops: '1', vram: '1Gi' } } } as never,
        `${ctx}spec.single.defaultRequests: got {"tflops":"1","vram":"1Gi"}, expected nothing: this runtime does not fill defaults from quotas (upstream's single.defaultRequests); set requests on the pods (the tensor-fusion.ai/tflops-request and vram-request annotations) or their WorkloadProfile`,
      ],
      [
        'a prop that is no field',
        { namespace: 'ml', maxWorkers: 4 } as never,
        `${ctx}spec.maxWorkers: got 4, expected a known field of spec: total, single\nspec: got {"maxWorkers":4}, expected ${EMPTY}`,
      ],
    ],
  );
});

// ---- gpuWorkload / t9kGpuWorkload on a Deployment, raw ApiObject (cdk8s) and plain args (Pulumi) ----

const deploymentArgs = (containers: string[] = ['python'], annotations: Record<string, string> = {}) => ({
  metadata: { name: 'train' },
  spec: {
    selector: { matchLabels: { app: 'train' } },
    template: {
      metadata: { labels: { app: 'train' }, annotations },
      spec: { containers: containers.map((name) => ({ name, image: 'img' })) },
    },
  },
});

type WorkloadCase<O> = [string, O, string, string[]?, Record<string, string>?];

/**
 * Each case in cdk8s (the message names the function and the construct path; checks of the pod
 * template run at synthesis, on the final template) and in Pulumi (the function and metadata.name).
 */
function workloadRules<O>(
  name: string,
  cdk8s: (w: ApiObject, o: O) => unknown,
  pulumi: (args: object, o: O) => unknown,
  cases: WorkloadCase<O>[],
) {
  // Jest treats a callback parameter beyond the row's length as `done`, so rows carry one object.
  const rows = cases.map(
    ([rule, options, message, containers, annotations]) => [rule, { options, message, containers, annotations }] as const,
  );
  it.each(rows)('cdk8s: %s', (_rule, { options, message, containers, annotations }) => {
    const c = chart();
    const object = new ApiObject(c, 'd', { apiVersion: 'apps/v1', kind: 'Deployment', ...deploymentArgs(containers, annotations) });
    expect(() => {
      cdk8s(object, options);
      Testing.synth(c);
    }).toThrow(new Error(`${name} c/d: ${message}`));
  });
  it.each(rows)('Pulumi: %s', (_rule, { options, message, containers, annotations }) => {
    expect(() => pulumi(deploymentArgs(containers, annotations), options)).toThrow(new Error(`${name} train: ${message}`));
  });
}

describe('gpuWorkload rules', () => {
  const ctx = '';
  workloadRules<GpuWorkloadOptions>('gpuWorkload', Cdk8s.gpuWorkload, Pulumi.gpuWorkload, [
    ['bad pool', { pool: 'Bad_Pool' }, `${ctx}pool: got "Bad_Pool", expected ${POOL_NAME}`],
    ['bad qos', { qos: 'urgent' as never }, `${ctx}qos: got "urgent", expected ${QOS}`],
    ['gpuCount 0', { gpuCount: 0 }, `${ctx}gpuCount: got 0, expected an integer from 1 to 128`],
    ['gpuCount 129', { gpuCount: 129 }, `${ctx}gpuCount: got 129, expected an integer from 1 to 128`],
    ['negative replicas', { replicas: -1 }, `${ctx}replicas: got -1, expected an integer from 0 to 10000`],
    ['vram 80GB', { vramRequest: '80GB' }, `${ctx}vramRequest: got "80GB", expected a positive Kubernetes quantity such as 4Gi or 512Mi`],
    [
      'vram limit below request',
      { vramRequest: '4Gi', vramLimit: '2Gi' },
      `${ctx}vramLimit: got "2Gi", expected at least vramRequest (4Gi)`,
    ],
    [
      'tflops not positive',
      { tflopsRequest: -1 },
      `${ctx}tflopsRequest: got -1, expected a positive number of TFLOPS such as '10' or '0.5'`,
    ],
    ['tflops limit below request', { tflopsRequest: 10, tflopsLimit: 5 }, `${ctx}tflopsLimit: got 5, expected at least tflopsRequest (10)`],
    ['bad workload name', { workload: 'Bad_W' }, `${ctx}workload: got "Bad_W", expected ${REF_NAME}`],
    ['bad workloadProfile name', { workloadProfile: 'Bad_P' }, `${ctx}workloadProfile: got "Bad_P", expected ${REF_NAME}`],
    [
      'generateWorkload false without workload',
      { generateWorkload: false },
      `${ctx}workload: got nothing, expected the name of an existing TensorFusionWorkload, since generateWorkload is false`,
    ],
    [
      'noStandaloneWorkerMode without isLocalGpu',
      { noStandaloneWorkerMode: true },
      `${ctx}noStandaloneWorkerMode: got true, expected false or nothing, unless isLocalGpu is true`,
    ],
    [
      'inject-container not in the template',
      { injectContainers: ['pythn'] },
      `${ctx}injectContainers: got "pythn", expected a container of the pod template: one of python`,
    ],
    [
      'inject-container naming a container twice',
      { injectContainers: ['python', 'python'] },
      `${ctx}injectContainers: got ["python","python"], expected each container named once ("python" is named 2 times)`,
    ],
    [
      'inject-container missing with two containers',
      { tflopsRequest: 10 },
      `${ctx}injectContainers: got nothing, expected a list of container names, required because the pod template has 2 containers (a, b)`,
      ['a', 'b'],
    ],
  ]);

  // Rules checked on the whole annotation set of the template (some keys were there before).
  it.each([
    [
      'gpuWorkload c/d',
      (annotations: Record<string, string>) => {
        const c = chart();
        Cdk8s.gpuWorkload(
          new ApiObject(c, 'd', { apiVersion: 'apps/v1', kind: 'Deployment', ...deploymentArgs(['python'], annotations) }),
          { qos: 'low' },
        );
        return Testing.synth(c);
      },
    ],
    [
      'gpuWorkload train',
      (annotations: Record<string, string>) => Pulumi.gpuWorkload(deploymentArgs(['python'], annotations), { qos: 'low' }),
    ],
  ])('%s: rejects an unknown tensor-fusion.ai annotation with a did-you-mean hint, and a stale inject-container', (ctx, apply) => {
    expect(() => apply({ 'tensor-fusion.ai/tflop-request': '10' })).toThrow(
      new Error(
        `${ctx}: tensor-fusion.ai/tflop-request: got "10", expected a known tensor-fusion.ai annotation; did you mean tensor-fusion.ai/tflops-request?`,
      ),
    );
    expect(() => apply({ 'tensor-fusion.ai/inject-container': 'gone' })).toThrow(
      new Error(`${ctx}: tensor-fusion.ai/inject-container: got "gone", expected a container of the pod template: one of python`),
    );
  });

  it('names the function and the construct path when the target has no pod template', () => {
    const c = chart();
    const service = new ApiObject(c, 'svc', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' } });
    expect(() => Cdk8s.gpuWorkload(service, { qos: 'low' })).toThrow(
      new Error(
        'gpuWorkload c/svc: kind: got "Service", expected a kind with a pod template: Pod, PodTemplate, Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob',
      ),
    );
  });
});

describe('t9kGpuWorkload rules', () => {
  workloadRules<T9kGpuOptions>('t9kGpuWorkload', Cdk8s.t9kGpuWorkload, Pulumi.t9kGpuWorkload, [
    ['unknown mode', { mode: 'fractional' } as never, 'mode: got "fractional", expected one of exclusive-gpu, shared-gpu, exclusive-node'],
    ['percent 101', { mode: 'shared-gpu', percent: 101 }, 'percent: got 101, expected an integer from 1 to 100'],
    ['percent 0', { mode: 'shared-gpu', percent: 0 }, 'percent: got 0, expected an integer from 1 to 100'],
    ['gpus 0', { mode: 'exclusive-gpu', gpus: 0 }, 'gpus: got 0, expected an integer from 1 to 128'],
    [
      'container not in the template',
      { mode: 'exclusive-node', container: 'nope' },
      'container: got "nope", expected one of the pod\'s containers: "python"',
    ],
  ]);
});

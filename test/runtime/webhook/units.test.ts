/** The webhook's pure parts: MPS limits, owner naming, patch building, env merging, scheduling marks, usage. */
import { applyPatch, deepClone } from 'fast-json-patch';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL } from '../../../lib/model/metadata-keys';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { annotationRef, localGpuEnv, mpsMemoryLimit, mpsThreadPercentage } from '../../../lib/runtime/shared/pod-share/container-env';
import { topOwnerName } from '../../../lib/runtime/webhook/owner';
import { mergeEnv, podPatch, sameEnvVar } from '../../../lib/runtime/webhook/patch';
import { priorityFor, schedulerIssue } from '../../../lib/runtime/webhook/scheduling';
import { serviceDnsNames } from '../../../lib/k8s/names';
import { usageFromAllocations } from '../../../lib/runtime/shared/allocated-usage';

const GiB = 2 ** 30;

describe('MPS limits', () => {
  it('gives each visible device the VRAM limit in whole MiB', () => {
    expect(mpsMemoryLimit(1, 4 * GiB)).toBe('0=4096M');
    expect(mpsMemoryLimit(3, 1.5 * GiB)).toBe('0=1536M,1=1536M,2=1536M');
    expect(mpsMemoryLimit(1, 1000)).toBe('0=1M');
    expect(mpsMemoryLimit(1, 2 ** 20 + 2 ** 19)).toBe('0=1M');
  });

  it('turns the TFLOPS limit into a whole percentage of the GPU, 1 to 100', () => {
    expect(mpsThreadPercentage(31.2, 312)).toBe('10');
    expect(mpsThreadPercentage(20, 312)).toBe('7');
    expect(mpsThreadPercentage(0.001, 312)).toBe('1');
    expect(mpsThreadPercentage(1000, 312)).toBe('100');
    expect(mpsThreadPercentage(10, 0)).toBe('100');
  });
});

describe('workload naming after the top owner', () => {
  const p = (metadata: Record<string, unknown>): K8sObject => ({ metadata }) as K8sObject;
  it.each([
    [
      'a Deployment through its ReplicaSet',
      p({ labels: { 'pod-template-hash': '7c9f' }, ownerReferences: [{ kind: 'ReplicaSet', name: 'web-7c9f', controller: true }] }),
      'web',
    ],
    [
      'a ReplicaSet without the hash label',
      p({ ownerReferences: [{ kind: 'ReplicaSet', name: 'web-7c9f', controller: true }] }),
      'web-7c9f',
    ],
    ['a CronJob through its Job', p({ ownerReferences: [{ kind: 'Job', name: 'nightly-29012345', controller: true }] }), 'nightly'],
    ['a plain Job', p({ ownerReferences: [{ kind: 'Job', name: 'train-7', controller: true }] }), 'train-7'],
    ['a StatefulSet', p({ ownerReferences: [{ kind: 'StatefulSet', name: 'db', controller: true }] }), 'db'],
    [
      'the controller among several owners',
      p({
        ownerReferences: [
          { kind: 'Foo', name: 'x' },
          { kind: 'StatefulSet', name: 'db', controller: true },
        ],
      }),
      'db',
    ],
    ['a bare named pod', p({ name: 'solo' }), 'solo'],
    ['a bare pod with generateName', p({ generateName: 'job-' }), 'job'],
  ])('names %s', (_what, pod, name) => {
    expect(topOwnerName(pod)).toBe(name);
  });

  it('has no name for a pod with neither name nor owner', () => {
    expect(topOwnerName(p({}))).toBeUndefined();
  });
});

describe('pod patches', () => {
  const pod = (): K8sObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', labels: { 'a/b': '1' }, annotations: { 'old~x/y': 'o', keep: 'k' } },
    spec: {
      containers: [
        {
          name: 'c',
          env: [
            { name: 'X', value: 'old' },
            { name: 'Y', valueFrom: { fieldRef: { fieldPath: 'x' } } },
          ],
        },
      ],
      priority: 0,
    },
  });

  it('escapes / and ~ in map keys, touches only what differs, and is empty once applied', () => {
    const m = {
      annotations: { 'x~y/z': 'v' },
      removeAnnotations: ['old~x/y', 'absent'],
      labels: { 'a/b': '1', 'c/d': '2' },
      schedulerName: 'sched',
      priority: { className: 'pc', value: 5, preemptionPolicy: 'Never' },
      env: new Map([
        [
          'c',
          [
            { name: 'X', value: 'new' },
            { name: 'Y', value: 'plain' },
            { name: 'Z', value: 'z' },
          ],
        ],
      ]),
    };
    const ops = podPatch(pod(), m);
    expect(ops).toEqual([
      { op: 'remove', path: '/metadata/annotations/old~0x~1y' },
      { op: 'add', path: '/metadata/annotations/x~0y~1z', value: 'v' },
      { op: 'add', path: '/metadata/labels/c~1d', value: '2' },
      { op: 'add', path: '/spec/schedulerName', value: 'sched' },
      { op: 'add', path: '/spec/priorityClassName', value: 'pc' },
      { op: 'add', path: '/spec/priority', value: 5 },
      { op: 'add', path: '/spec/preemptionPolicy', value: 'Never' },
      {
        op: 'replace',
        path: '/spec/containers/0/env',
        value: [
          { name: 'X', value: 'new' },
          { name: 'Y', value: 'plain' },
          { name: 'Z', value: 'z' },
        ],
      },
    ]);
    const out = applyPatch(deepClone(pod()), ops as never, true, false).newDocument;
    expect(podPatch(out, m)).toEqual([]);
    expect(podPatch(out, { annotations: { 'x~y/z': 'w' } })).toEqual([{ op: 'add', path: '/metadata/annotations/x~0y~1z', value: 'w' }]);
  });

  it('appends new variables without rewriting the list', () => {
    expect(
      podPatch(pod(), {
        env: new Map([
          [
            'c',
            [
              { name: 'X', value: 'old' },
              { name: 'Z', value: 'z' },
            ],
          ],
        ]),
      }),
    ).toEqual([{ op: 'add', path: '/spec/containers/0/env/-', value: { name: 'Z', value: 'z' } }]);
  });

  it('adds its init container first, and leaves one it already added alone despite API defaults', () => {
    const p: any = pod();
    p.spec.initContainers = [{ name: 'user-init', image: 'u' }];
    const env = [{ name: 'A', value: '1' }];
    const ops = podPatch(p, { initContainers: [{ name: 'w', image: 'img', env }] });
    expect(ops).toEqual([{ op: 'add', path: '/spec/initContainers/0', value: { name: 'w', image: 'img', env } }]);
    const out: any = applyPatch(deepClone(p), ops as never, true, false).newDocument;
    out.spec.initContainers[0].imagePullPolicy = 'IfNotPresent';
    expect(podPatch(out, { initContainers: [{ name: 'w', image: 'img', env }] })).toEqual([]);
    expect(podPatch(out, { initContainers: [{ name: 'w', image: 'img:2', env }] })).toEqual([
      { op: 'add', path: '/spec/initContainers/0/image', value: 'img:2' },
    ]);
  });

  it('patches only the fields of its init container that it owns, never the container whole', () => {
    const sc = { runAsNonRoot: true };
    // As a later webhook left it: a securityContext of its own, a volume mount, one more env entry.
    const have: any = pod();
    have.spec.initContainers = [
      {
        name: 'w',
        image: 'img',
        env: [
          { name: 'A', value: '1' },
          { name: 'B', value: 'b' },
        ],
        securityContext: { runAsUser: 1000 },
        volumeMounts: [{ name: 'v', mountPath: '/v' }],
      },
    ];
    expect(
      podPatch(have, { initContainers: [{ name: 'w', image: 'img', env: [{ name: 'A', value: '2' }], securityContext: sc }] }),
    ).toEqual([
      {
        op: 'replace',
        path: '/spec/initContainers/0/env',
        value: [
          { name: 'A', value: '2' },
          { name: 'B', value: 'b' },
        ],
      },
    ]);
    delete have.spec.initContainers[0].securityContext;
    expect(
      podPatch(have, { initContainers: [{ name: 'w', image: 'img', env: [{ name: 'A', value: '1' }], securityContext: sc }] }),
    ).toEqual([{ op: 'add', path: '/spec/initContainers/0/securityContext', value: sc }]);
  });

  it('does not add /spec for a metadata-only mutation', () => {
    expect(podPatch({ metadata: { name: 'p' } }, { labels: { a: 'b' } })).toEqual([
      { op: 'add', path: '/metadata/labels', value: { a: 'b' } },
    ]);
  });
});

describe('env merging', () => {
  const ref = annotationRef('V', 'tensor-fusion.ai/visible-devices');

  it('puts each variable in place of the first entry of its name, drops later ones, appends the rest', () => {
    expect(
      mergeEnv(
        [
          { name: 'V', value: 'all' },
          { name: 'U', value: '$(V)' },
          { name: 'V', value: 'all' },
        ],
        [ref, { name: 'W', value: 'w' }],
      ),
    ).toEqual([ref, { name: 'U', value: '$(V)' }, { name: 'W', value: 'w' }]);
  });

  it('treats what the API server adds or drops as the same variable', () => {
    expect(
      sameEnvVar(
        { name: 'V', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.annotations['tensor-fusion.ai/visible-devices']" } } },
        ref,
      ),
    ).toBe(true);
    expect(sameEnvVar({ name: 'E' }, { name: 'E', value: '' })).toBe(true);
    expect(
      sameEnvVar(
        { name: 'V', valueFrom: { fieldRef: { apiVersion: 'v2', fieldPath: "metadata.annotations['tensor-fusion.ai/visible-devices']" } } },
        ref,
      ),
    ).toBe(false);
    expect(sameEnvVar({ name: 'V', value: 'all' }, ref)).toBe(false);
    expect(sameEnvVar({ name: 'V', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }, ref)).toBe(false);
    expect(sameEnvVar({ name: 'E', valueFrom: { fieldRef: { fieldPath: 'x' } } }, { name: 'E', value: '' })).toBe(false);
  });

  it('reads the four placement-dependent variables from the annotations the bind writes', () => {
    const env = localGpuEnv({ pool: 'p', qos: 'low', tflopsRequest: 1, tflopsLimit: 2, vramRequest: 3, vramLimit: 4, gpuCount: 1 });
    expect(env.filter((e) => 'valueFrom' in e)).toEqual([
      {
        name: 'TENSOR_FUSION_ALLOCATION_ID',
        valueFrom: { fieldRef: { fieldPath: "metadata.annotations['tensor-fusion.ai/allocation-id']" } },
      },
      {
        name: 'NVIDIA_VISIBLE_DEVICES',
        valueFrom: { fieldRef: { fieldPath: "metadata.annotations['tensor-fusion.ai/visible-devices']" } },
      },
      {
        name: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT',
        valueFrom: { fieldRef: { fieldPath: "metadata.annotations['tensor-fusion.ai/mps-memory-limit']" } },
      },
      {
        name: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE',
        valueFrom: { fieldRef: { fieldPath: "metadata.annotations['tensor-fusion.ai/mps-thread-percentage']" } },
      },
    ]);
  });
});

describe('scheduling marks', () => {
  const withSpec = (spec: Record<string, unknown>): K8sObject => ({ metadata: {}, spec });

  it('refuses any scheduler but none, the default one and ours, naming both', () => {
    expect(schedulerIssue(withSpec({}))).toBeUndefined();
    expect(schedulerIssue(withSpec({ schedulerName: 'default-scheduler' }))).toBeUndefined();
    expect(schedulerIssue(withSpec({ schedulerName: 'tensor-fusion-scheduler' }))).toBeUndefined();
    expect(schedulerIssue(withSpec({ schedulerName: 'my-scheduler' }))?.message).toBe(
      'spec.schedulerName: got "my-scheduler", expected nothing, "default-scheduler" or "tensor-fusion-scheduler", since local GPU shares are placed by tensor-fusion-scheduler',
    );
  });

  it('sets the QoS class unless the pod names another one', () => {
    expect(priorityFor(withSpec({}), 'critical')).toEqual({
      priority: { className: 'tensor-fusion-critical', value: 400, preemptionPolicy: 'Never' },
    });
    expect(priorityFor(withSpec({ priorityClassName: 'tensor-fusion-low' }), 'low')).toEqual({
      priority: { className: 'tensor-fusion-low', value: 100, preemptionPolicy: 'Never' },
    });
    expect(priorityFor(withSpec({ priorityClassName: 'system-node-critical' }), 'low')).toEqual({
      warning:
        'spec.priorityClassName: kept "system-node-critical", so QoS "low" does not set the pod\'s scheduling priority (it would be "tensor-fusion-low")',
    });
  });
});

describe('webhook service', () => {
  it('lists the Service DNS names the certificate covers', () => {
    expect(serviceDnsNames('hook', 'sys')).toEqual(['hook', 'hook.sys', 'hook.sys.svc', 'hook.sys.svc.cluster.local']);
  });
});

describe('usage for the status reconcilers', () => {
  it('sums the requests recorded on pods per GPU, as the extender counts them', () => {
    const a = (id: string, gpuIds: string[], t: number) =>
      JSON.stringify({ id, pool: 'p', node: 'n', gpuIds, tflopsRequest: t, vramRequest: GiB });
    const p = (
      uid: string,
      record: string,
      phase?: string,
      deleting = false,
      labels: Record<string, string> = { [ENABLED_LABEL]: 'true' },
    ) =>
      ({
        metadata: { uid, labels, annotations: { [ALLOCATION_ANNOTATION]: record }, ...(deleting ? { deletionTimestamp: 'now' } : {}) },
        status: { phase },
      }) as K8sObject;
    const pods = [
      p('1', a('1', ['g0', 'g1'], 10), 'Running'),
      p('2', a('2', ['g0'], 5), 'Pending'),
      p('3', a('3', ['g0'], 50), 'Succeeded'),
      p('4', a('4', ['g1'], 7), 'Running', true), // terminating: still on the GPU
      p('5', a('other-pod', ['g0'], 100), 'Running'), // a record copied from another pod holds nothing
      p('6', a('6', ['g0'], 100), 'Running', false, {}), // nor one on a pod that did not opt in
      p('7', a('7', ['g1'], 100), 'Running', false, { [ENABLED_LABEL]: 'false' }),
      { metadata: { annotations: {} } } as K8sObject,
    ];
    expect(usageFromAllocations(pods)).toEqual(
      new Map([
        ['g0', { tflops: 15, vram: 2 * GiB, pods: 2 }],
        ['g1', { tflops: 17, vram: 2 * GiB, pods: 2 }],
      ]),
    );
  });
});

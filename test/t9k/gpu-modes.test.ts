import { Pod } from 'kubernetes-models/v1';
import { ValidationError } from '../../lib/model/errors';
import { T9kGpuOptions, T9kPodTemplateLike, checkT9kGpuOptions, t9kPodTemplate } from '../../lib/t9k';
import { issueMessages } from '../support/validation';

const XGN_TOLERATION = { key: 'sched.tensorstack.dev/xgn-mode', operator: 'Equal', value: 'true', effect: 'NoSchedule' };

/** Freezes every object in `value`, so any mutation by the code under test throws. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

function template(...containers: { name: string; [key: string]: unknown }[]): T9kPodTemplateLike {
  return {
    metadata: { labels: { app: 'demo' } },
    spec: { containers: containers.map((c) => ({ image: 'example.io/example-image:latest', ...c })) },
  };
}

/** Validates a template's pod spec as a Pod against the Kubernetes OpenAPI schema. */
function validatePod(result: T9kPodTemplateLike): void {
  new Pod({ metadata: { name: 'demo', ...result.metadata }, spec: result.spec as never }).validate();
}

describe('t9kPodTemplate: seed 004 examples', () => {
  it('exclusive GPU: tensorstack.dev/nvidia-gpu: 2 on an xgn node', () => {
    const input = deepFreeze(template({ name: 'exclusive' }));
    const result = t9kPodTemplate(input, { mode: 'exclusive-gpu', gpus: 2, groupName: 'gpu-usage' });
    expect(result).toEqual({
      metadata: { labels: { app: 'demo', 'scheduler.tensorstack.dev/group-name': 'gpu-usage' } },
      spec: {
        schedulerName: 't9k-scheduler',
        containers: [
          { name: 'exclusive', image: 'example.io/example-image:latest', resources: { limits: { 'tensorstack.dev/nvidia-gpu': 2 } } },
        ],
        nodeSelector: { 'sched.tensorstack.dev/node-alloc-mode': 'xgn' },
        tolerations: [XGN_TOLERATION],
      },
    });
    validatePod(result);
  });

  it('shared GPU: tensorstack.dev/nvidia-gpu-percent: 30, keeps cpu/memory requests, no toleration', () => {
    const input = deepFreeze(template({ name: 'shared', resources: { requests: { cpu: '500m', memory: '200Mi' } } }));
    const result = t9kPodTemplate(input, { mode: 'shared-gpu', percent: 30, groupName: 'gpu-usage' });
    expect(result).toEqual({
      metadata: { labels: { app: 'demo', 'scheduler.tensorstack.dev/group-name': 'gpu-usage' } },
      spec: {
        schedulerName: 't9k-scheduler',
        containers: [
          {
            name: 'shared',
            image: 'example.io/example-image:latest',
            resources: { limits: { 'tensorstack.dev/nvidia-gpu-percent': 30 }, requests: { cpu: '500m', memory: '200Mi' } },
          },
        ],
        nodeSelector: { 'sched.tensorstack.dev/node-alloc-mode': 'sgn' },
      },
    });
    validatePod(result);
  });

  it('exclusive node: tensorstack.dev/nvidia-gpu-node: 1 on an xgn node', () => {
    const input = deepFreeze(template({ name: 'exclusive', image: 'nginx' }));
    const result = t9kPodTemplate(input, { mode: 'exclusive-node', groupName: 'gpu-usage' });
    expect(result).toEqual({
      metadata: { labels: { app: 'demo', 'scheduler.tensorstack.dev/group-name': 'gpu-usage' } },
      spec: {
        schedulerName: 't9k-scheduler',
        containers: [{ name: 'exclusive', image: 'nginx', resources: { limits: { 'tensorstack.dev/nvidia-gpu-node': 1 } } }],
        nodeSelector: { 'sched.tensorstack.dev/node-alloc-mode': 'xgn' },
        tolerations: [XGN_TOLERATION],
      },
    });
    validatePod(result);
  });
});

describe('t9kPodTemplate: merging into an existing template', () => {
  it('leaves metadata alone without a group, and keeps other containers, selectors and tolerations', () => {
    const sidecar = { name: 'sidecar', image: 'busybox' };
    const input = deepFreeze<T9kPodTemplateLike>({
      spec: {
        containers: [{ name: 'main', resources: { limits: { cpu: '2' } } }, sidecar],
        nodeSelector: { zone: 'a' },
        tolerations: [{ key: 'spot', operator: 'Exists' }],
      },
    });
    const result = t9kPodTemplate(input, { mode: 'exclusive-gpu', gpus: 1, container: 'main' });
    expect(result.metadata).toBeUndefined();
    expect(result.spec?.containers[0].resources).toEqual({ limits: { cpu: '2', 'tensorstack.dev/nvidia-gpu': 1 } });
    expect(result.spec?.containers[1]).toBe(sidecar);
    expect(result.spec?.nodeSelector).toEqual({ zone: 'a', 'sched.tensorstack.dev/node-alloc-mode': 'xgn' });
    expect(result.spec?.tolerations).toEqual([{ key: 'spot', operator: 'Exists' }, XGN_TOLERATION]);
  });

  it('adds no second toleration when one already tolerates the xgn taint, and is idempotent', () => {
    const once = t9kPodTemplate(template({ name: 'a' }), { mode: 'exclusive-node', groupName: 'g' });
    expect(t9kPodTemplate(deepFreeze(once), { mode: 'exclusive-node', groupName: 'g' })).toEqual(once);
    const wildcard = { spec: { containers: [{ name: 'a' }], tolerations: [{ operator: 'Exists' }] } };
    expect(t9kPodTemplate(wildcard, { mode: 'exclusive-gpu', gpus: 1 }).spec?.tolerations).toEqual([{ operator: 'Exists' }]);
  });

  it('passes values that are not plain data through by reference', () => {
    class Output {
      constructor(readonly v: string) {}
    }
    const image = new Output('img');
    const result = t9kPodTemplate({ spec: { containers: [{ name: 'a', image }] } }, { mode: 'shared-gpu', percent: 5 });
    expect((result.spec?.containers[0] as { image?: unknown }).image).toBe(image);
  });
});

describe('t9kPodTemplate: validation', () => {
  it.each<[string, unknown, string[]]>([
    ['unknown mode', { mode: 'mig' }, ['mode: got "mig", expected one of exclusive-gpu, shared-gpu, exclusive-node']],
    ['gpus 0', { mode: 'exclusive-gpu', gpus: 0 }, ['gpus: got 0, expected an integer from 1 to 128']],
    ['gpus 1.5', { mode: 'exclusive-gpu', gpus: 1.5 }, ['gpus: got 1.5, expected an integer from 1 to 128']],
    ['gpus missing', { mode: 'exclusive-gpu' }, ['gpus: got nothing, expected an integer from 1 to 128']],
    ['percent 0', { mode: 'shared-gpu', percent: 0 }, ['percent: got 0, expected an integer from 1 to 100']],
    ['percent 101', { mode: 'shared-gpu', percent: 101 }, ['percent: got 101, expected an integer from 1 to 100']],
    ['percent 12.5', { mode: 'shared-gpu', percent: 12.5 }, ['percent: got 12.5, expected an integer from 1 to 100']],
    ['percent as string', { mode: 'shared-gpu', percent: '30' }, ['percent: got "30", expected an integer from 1 to 100']],
    [
      'gpus on shared',
      { mode: 'shared-gpu', percent: 30, gpus: 1 },
      ['gpus: got 1, expected nothing for mode "shared-gpu" (gpus is for exclusive-gpu)'],
    ],
    [
      'percent on node',
      { mode: 'exclusive-node', percent: 30 },
      ['percent: got 30, expected nothing for mode "exclusive-node" (percent is for shared-gpu)'],
    ],
    ['empty container', { mode: 'exclusive-node', container: '' }, ['container: got "", expected a container name']],
    [
      'bad group name',
      { mode: 'exclusive-node', groupName: 'Gpu usage' },
      [
        "groupName: got \"Gpu usage\", expected a label value: 1 to 63 characters, alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
      ],
    ],
  ])('%s', (_name, options, expected) => {
    expect(checkT9kGpuOptions(options as T9kGpuOptions).map((i) => i.message)).toEqual(expected);
    expect(issueMessages(() => t9kPodTemplate(template({ name: 'a' }), options as T9kGpuOptions))).toEqual(expected);
  });

  it('accepts a 63-character group name and the bounds of percent', () => {
    expect(checkT9kGpuOptions({ mode: 'exclusive-node', groupName: 'a'.repeat(63) })).toEqual([]);
    expect(checkT9kGpuOptions({ mode: 'exclusive-node', groupName: 'a'.repeat(64) })).toHaveLength(1);
    expect(checkT9kGpuOptions({ mode: 'shared-gpu', percent: 1 })).toEqual([]);
    expect(checkT9kGpuOptions({ mode: 'shared-gpu', percent: 100 })).toEqual([]);
  });

  it('needs a container, and names the containers when the choice is ambiguous or wrong', () => {
    expect(issueMessages(() => t9kPodTemplate({ spec: { containers: [] } }, { mode: 'exclusive-node' }))).toEqual([
      'spec.containers: got [], expected at least one container',
    ]);
    expect(issueMessages(() => t9kPodTemplate({}, { mode: 'exclusive-node' }))).toEqual([
      'spec.containers: got nothing, expected at least one container',
    ]);
    const two = template({ name: 'app' }, { name: 'proxy' });
    expect(issueMessages(() => t9kPodTemplate(two, { mode: 'exclusive-gpu', gpus: 1 }))).toEqual([
      'container: got nothing, expected one of the pod\'s containers: "app", "proxy"',
    ]);
    expect(issueMessages(() => t9kPodTemplate(two, { mode: 'exclusive-gpu', gpus: 1, container: 'ap' }))).toEqual([
      'container: got "ap", expected one of the pod\'s containers: "app", "proxy"',
    ]);
  });

  it('refuses to override another scheduler, group label or alloc-mode selector', () => {
    const input: T9kPodTemplateLike = {
      metadata: { labels: { 'scheduler.tensorstack.dev/group-name': 'other' } },
      spec: { containers: [{ name: 'a' }], schedulerName: 'volcano', nodeSelector: { 'sched.tensorstack.dev/node-alloc-mode': 'xgn' } },
    };
    expect(issueMessages(() => t9kPodTemplate(input, { mode: 'shared-gpu', percent: 30, groupName: 'mine' }))).toEqual([
      'spec.schedulerName: got "volcano", expected "t9k-scheduler" or nothing (T9k resources are scheduled by the T9k Scheduler)',
      'metadata.labels["scheduler.tensorstack.dev/group-name"]: got "other", expected "mine" or nothing (groupName sets it)',
      'spec.nodeSelector["sched.tensorstack.dev/node-alloc-mode"]: got "xgn", expected "sgn" or nothing (mode shared-gpu runs on sgn nodes)',
    ]);
  });

  it('rejects a second container requesting nvidia-gpu-node, also when the template already had one', () => {
    const once = t9kPodTemplate(template({ name: 'a' }, { name: 'b' }), { mode: 'exclusive-node', container: 'a' });
    expect(issueMessages(() => t9kPodTemplate(once, { mode: 'exclusive-node', container: 'b' }))).toEqual([
      'spec.containers[1].resources.limits["tensorstack.dev/nvidia-gpu-node"]: got 1, expected one container per pod requesting tensorstack.dev/nvidia-gpu-node (container "a" already does; a pod runs on one node)',
    ]);
    const handWritten = template(
      { name: 'a', resources: { limits: { 'tensorstack.dev/nvidia-gpu-node': 1 } } },
      { name: 'b', resources: { limits: { 'tensorstack.dev/nvidia-gpu-node': 1 } } },
      { name: 'c' },
    );
    expect(issueMessages(() => t9kPodTemplate(handWritten, { mode: 'exclusive-gpu', gpus: 1, container: 'c' }))).toEqual([
      'spec.containers[1].resources.limits["tensorstack.dev/nvidia-gpu-node"]: got 1, expected one container per pod requesting tensorstack.dev/nvidia-gpu-node (container "a" already does; a pod runs on one node)',
    ]);
  });

  it('rejects a second T9k resource in one container', () => {
    const once = t9kPodTemplate(template({ name: 'a' }), { mode: 'exclusive-gpu', gpus: 2 });
    expect(issueMessages(() => t9kPodTemplate(once, { mode: 'exclusive-node' }))).toEqual([
      'spec.containers[0].resources.limits["tensorstack.dev/nvidia-gpu-node"]: got 1, expected at most one T9k resource per container (container "a" already requests tensorstack.dev/nvidia-gpu)',
    ]);
  });

  it('rejects shared and exclusive resources in one pod', () => {
    const input = template({ name: 'a', resources: { limits: { 'tensorstack.dev/nvidia-gpu': 1 } } }, { name: 'b' });
    expect(issueMessages(() => t9kPodTemplate(input, { mode: 'shared-gpu', percent: 30, container: 'b' }))).toEqual([
      'spec.containers[1].resources.limits["tensorstack.dev/nvidia-gpu-percent"]: got 30, expected no shared-GPU resource in a pod that requests tensorstack.dev/nvidia-gpu (container "a"): shared GPUs are on sgn nodes, exclusive ones on xgn nodes',
    ]);
  });

  it('rejects T9k resources on a template with tensor-fusion.ai annotations', () => {
    const annotated = {
      ...template({ name: 'a' }),
      metadata: { annotations: { 'tensor-fusion.ai/vram-request': '4Gi', 'example.com/x': 'y' } },
    };
    expect(issueMessages(() => t9kPodTemplate(annotated, { mode: 'shared-gpu', percent: 30 }))).toEqual([
      'metadata.annotations["tensor-fusion.ai/vram-request"]: got "4Gi", expected no tensor-fusion.ai GPU key on a pod that requests T9k resources (spec.containers[0].resources.limits["tensorstack.dev/nvidia-gpu-percent"]); use one GPU-sharing system per pod',
    ]);
  });

  it('changes nothing when it throws', () => {
    const input = deepFreeze(template({ name: 'a' }, { name: 'b' }));
    const before = JSON.stringify(input);
    expect(() => t9kPodTemplate(input, { mode: 'exclusive-gpu', gpus: 1 })).toThrow(ValidationError);
    expect(JSON.stringify(input)).toBe(before);
  });
});

describe('shared GPU on a known pool', () => {
  const template = { spec: { containers: [{ name: 'shared', image: 'example.io/app' }] } };
  const { t9kPoolNodes } = require('../../lib/render/gpu-node') as typeof import('../../lib/render/gpu-node');
  const nodes = [
    { nodeName: 'gpu-a100-0', pools: ['training'], t9k: { accelerator: 'nvidia-gpu' as const, allocMode: 'xgn' as const } },
    { nodeName: 'gpu-a100-1', pools: ['training'], t9k: { accelerator: 'nvidia-gpu' as const, allocMode: 'xgn' as const } },
    { nodeName: 'gpu-t4-0', pools: ['inference'], t9k: { accelerator: 'nvidia-gpu' as const, allocMode: 'sgn' as const } },
  ];

  it('rejects a shared-GPU request on a pool whose nodes are all xgn', () => {
    expect(() =>
      t9kPodTemplate(template, { mode: 'shared-gpu', percent: 30, pool: { name: 'training', nodes: t9kPoolNodes('training', nodes) } }),
    ).toThrow(
      'mode: got "shared-gpu", expected exclusive-gpu or exclusive-node: every node of pool "training" is xgn (gpu-a100-0, gpu-a100-1); shared GPUs need an sgn node',
    );
  });

  it('accepts it on a pool with an sgn node', () => {
    const out = t9kPodTemplate(template, {
      mode: 'shared-gpu',
      percent: 30,
      pool: { name: 'inference', nodes: t9kPoolNodes('inference', nodes) },
    });
    expect((out.spec.containers[0] as { resources?: { limits?: object } }).resources?.limits).toEqual({
      'tensorstack.dev/nvidia-gpu-percent': 30,
    });
  });
});

/**
 * gpuWorkload and t9kGpuWorkload on every kind of workload each framework offers: cdk8s raw
 * ApiObjects, imported k8s classes, cdk8s-plus workloads; Pulumi plain args and args holding Outputs.
 * The same workload gives the same object everywhere, and the result is valid Kubernetes.
 */
import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { ApiObject, Chart, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-31';
import { gpuWorkload as cdk8sGpuWorkload, t9kGpuWorkload as cdk8sT9kGpuWorkload } from '../../components/cdk8s';
import { gpuWorkload as pulumiGpuWorkload, t9kGpuWorkload as pulumiT9kGpuWorkload } from '../../components/pulumi';
import type { GpuWorkloadOptions } from '../../lib/annotations';
import { KubeObject } from '../../lib/k8s/object';
import { synthChart } from '../support/cdk8s';
import { capture, objectsOf } from '../support/pulumi-mocks';
import { validateAll } from '../support/validate-k8s';
import { thrownMessage } from './frameworks';

const OPTIONS: GpuWorkloadOptions = {
  pool: 'default-pool',
  injectContainers: ['python'],
  tflopsRequest: 10,
  tflopsLimit: '20',
  vramRequest: '4Gi',
  vramLimit: 4 * 2 ** 30,
  qos: 'high',
  gpuCount: 2,
};
const ANNOTATIONS = {
  'tensor-fusion.ai/gpupool': 'default-pool',
  'tensor-fusion.ai/inject-container': 'python',
  'tensor-fusion.ai/tflops-request': '10',
  'tensor-fusion.ai/tflops-limit': '20',
  'tensor-fusion.ai/vram-request': '4Gi',
  'tensor-fusion.ai/vram-limit': '4Gi',
  'tensor-fusion.ai/qos': 'high',
  'tensor-fusion.ai/gpu-count': '2',
};
const app = { app: 'train' };
const podSpec = () => ({ containers: [{ name: 'python', image: 'pytorch/pytorch:2.4.1-cuda12.1-cudnn9-runtime' }] });
const template = () => ({ metadata: { labels: { ...app }, annotations: { 'prometheus.io/scrape': 'true' } }, spec: podSpec() });

/** Constructor args (metadata + spec) of each workload kind, with explicit names. */
const WORKLOADS = {
  Deployment: {
    apiVersion: 'apps/v1',
    args: () => ({ metadata: { name: 'train' }, spec: { replicas: 2, selector: { matchLabels: app }, template: template() } }),
  },
  StatefulSet: {
    apiVersion: 'apps/v1',
    args: () => ({ metadata: { name: 'train' }, spec: { serviceName: 'train', selector: { matchLabels: app }, template: template() } }),
  },
  Job: {
    apiVersion: 'batch/v1',
    args: () => ({ metadata: { name: 'train' }, spec: { template: { ...template(), spec: { ...podSpec(), restartPolicy: 'Never' } } } }),
  },
  CronJob: {
    apiVersion: 'batch/v1',
    args: () => ({
      metadata: { name: 'train' },
      spec: {
        schedule: '0 * * * *',
        jobTemplate: { spec: { template: { ...template(), spec: { ...podSpec(), restartPolicy: 'Never' } } } },
      },
    }),
  },
  Pod: { apiVersion: 'v1', args: () => ({ metadata: { name: 'train', ...template().metadata }, spec: podSpec() }) },
} as const;
type Kind = keyof typeof WORKLOADS;
const KINDS = Object.keys(WORKLOADS) as Kind[];

const IMPORTED: Record<Kind, new (scope: Chart, id: string, props: never) => ApiObject> = {
  Deployment: kplus.k8s.KubeDeployment,
  StatefulSet: kplus.k8s.KubeStatefulSet,
  Job: kplus.k8s.KubeJob,
  CronJob: kplus.k8s.KubeCronJob,
  Pod: kplus.k8s.KubePod,
};
const PULUMI: Record<Kind, new (name: string, args: never) => pulumi.CustomResource> = {
  Deployment: k8s.apps.v1.Deployment,
  StatefulSet: k8s.apps.v1.StatefulSet,
  Job: k8s.batch.v1.Job,
  CronJob: k8s.batch.v1.CronJob,
  Pod: k8s.core.v1.Pod,
};

/** A raw cdk8s ApiObject of `kind`. */
function rawApiObject(chart: Chart, kind: Kind): ApiObject {
  return new ApiObject(chart, 'w', { apiVersion: WORKLOADS[kind].apiVersion, kind, ...WORKLOADS[kind].args() });
}

/** The pod template of a synthesized workload. */
function podTemplateOf(object: KubeObject): {
  metadata: { labels: Record<string, string>; annotations: Record<string, string> };
  spec: Record<string, unknown>;
} {
  const spec = object.spec as Record<string, any>;
  if (object.kind === 'Pod') return { metadata: object.metadata as never, spec };
  if (object.kind === 'CronJob') return spec.jobTemplate.spec.template;
  return spec.template;
}

async function pulumiObjects(program: () => void): Promise<KubeObject[]> {
  return objectsOf(await capture(program)) as unknown as KubeObject[];
}

describe.each(KINDS)('gpuWorkload on a %s', (kind) => {
  let expected: KubeObject;

  beforeAll(() => {
    [expected] = synthChart((chart) => cdk8sGpuWorkload(rawApiObject(chart, kind), OPTIONS));
  });

  it('adds the enabled label and the annotations to the pod template, keeping its own (cdk8s raw ApiObject)', () => {
    const tpl = podTemplateOf(expected);
    expect(tpl.metadata.labels).toEqual({ ...app, 'tensor-fusion.ai/enabled': 'true' });
    expect(tpl.metadata.annotations).toEqual({ 'prometheus.io/scrape': 'true', ...ANNOTATIONS });
    expect(tpl.spec.containers).toEqual(podSpec().containers);
    validateAll([expected]);
  });

  it('gives the same object on the imported k8s class', () => {
    const objects = synthChart((chart) => cdk8sGpuWorkload(new IMPORTED[kind](chart, 'w', WORKLOADS[kind].args() as never), OPTIONS));
    expect(objects).toEqual([expected]);
  });

  it('gives the same object from Pulumi plain args, without changing the args', async () => {
    const args = WORKLOADS[kind].args();
    const before = structuredClone(args);
    const objects = await pulumiObjects(() => void new PULUMI[kind]('w', pulumiGpuWorkload(args, OPTIONS) as never));
    expect(objects).toEqual([expected]);
    expect(args).toEqual(before);
  });

  it('gives the same object from Pulumi args holding Outputs', async () => {
    const args = WORKLOADS[kind].args() as { metadata: object; spec: object };
    const withOutputs = { metadata: pulumi.output(args.metadata), spec: pulumi.output(args.spec) };
    const objects = await pulumiObjects(() => void new PULUMI[kind]('w', pulumiGpuWorkload(withOutputs, OPTIONS) as never));
    expect(objects).toEqual([expected]);
    validateAll(objects);
  });
});

describe('gpuWorkload on other targets', () => {
  it('works on a cdk8s-plus Deployment, keeping its selector label and defaults', () => {
    const [deployment] = synthChart((chart) => {
      const d = new kplus.Deployment(chart, 'plus', {
        metadata: { name: 'plus' },
        containers: [{ name: 'python', image: 'pytorch/pytorch', portNumber: 8080 }],
      });
      cdk8sGpuWorkload(d, OPTIONS);
    });
    const tpl = podTemplateOf(deployment);
    expect(tpl.metadata.annotations).toEqual(ANNOTATIONS);
    expect(tpl.metadata.labels['tensor-fusion.ai/enabled']).toBe('true');
    const selector = (deployment.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    for (const [k, v] of Object.entries(selector)) expect(tpl.metadata.labels[k]).toBe(v);
    expect((tpl.spec.containers as { name: string }[]).map((c) => c.name)).toEqual(['python']);
    validateAll([deployment]);
  });

  it('works on a Pulumi Deployment whose container image is an Output', async () => {
    const args = WORKLOADS.Deployment.args();
    const spec = {
      ...args.spec,
      template: {
        ...args.spec.template,
        spec: { containers: [{ name: 'python', image: pulumi.output('pytorch/pytorch:2.4.1-cuda12.1-cudnn9-runtime') }] },
      },
    };
    const [object] = await pulumiObjects(() => void new k8s.apps.v1.Deployment('w', pulumiGpuWorkload({ ...args, spec }, OPTIONS)));
    const [expected] = synthChart((chart) => cdk8sGpuWorkload(rawApiObject(chart, 'Deployment'), OPTIONS));
    expect(object).toEqual(expected);
  });

  it('reports bad options at the call even when the args hold Outputs', () => {
    const args = WORKLOADS.Deployment.args();
    const withOutputs = { metadata: args.metadata, spec: pulumi.output(args.spec) };
    expect(() => pulumiGpuWorkload(withOutputs, { qos: 'urgent' as never })).toThrow(
      'gpuWorkload train: qos: got "urgent", expected one of low, medium, high, critical',
    );
    expect(() => pulumiT9kGpuWorkload(withOutputs, { mode: 'shared-gpu', percent: 0 })).toThrow(
      't9kGpuWorkload train: percent: got 0, expected an integer from 1 to 100',
    );
  });

  it('rejects an unknown tensor-fusion.ai annotation already on the template, with a did-you-mean hint', () => {
    const build = (chart: Chart) => {
      const args = WORKLOADS.Deployment.args();
      (args.spec.template.metadata.annotations as Record<string, string>)['tensor-fusion.ai/tflop-request'] = '10';
      return new ApiObject(chart, 'w', { apiVersion: 'apps/v1', kind: 'Deployment', ...args });
    };
    const message = thrownMessage(() => synthChart((chart) => cdk8sGpuWorkload(build(chart), { vramRequest: '4Gi' })));
    expect(message).toMatch(/^gpuWorkload test\/w: tensor-fusion\.ai\/tflop-request: /);
    expect(message).toContain('tensor-fusion.ai/tflops-request');
  });
});

describe('a failing call changes nothing', () => {
  const bad: GpuWorkloadOptions = { injectContainers: ['python'], tflopsRequest: 10, tflopsLimit: 5, qos: 'medium' };

  it.each(KINDS)('leaves a cdk8s %s exactly as it was (nothing half applied)', (kind) => {
    const chart = new Chart(Testing.app(), 'c');
    const object = rawApiObject(chart, kind);
    const before = Testing.synth(chart);
    expect(() => cdk8sGpuWorkload(object, bad)).toThrow('gpuWorkload c/w: tflopsLimit: got 5, expected at least tflopsRequest (10)');
    expect(() => cdk8sT9kGpuWorkload(object, { mode: 'shared-gpu', percent: 101 })).toThrow(
      't9kGpuWorkload c/w: percent: got 101, expected an integer from 1 to 100',
    );
    expect(Testing.synth(chart)).toEqual(before);
  });

  it('leaves a cdk8s-plus Deployment as it was', () => {
    const chart = new Chart(Testing.app(), 'c');
    const d = new kplus.Deployment(chart, 'plus', { containers: [{ name: 'python', image: 'pytorch/pytorch' }] });
    const before = Testing.synth(chart);
    expect(() => cdk8sGpuWorkload(d, { qos: 'urgent' as never })).toThrow(
      'gpuWorkload c/plus: qos: got "urgent", expected one of low, medium, high, critical',
    );
    expect(Testing.synth(chart)).toEqual(before);
  });

  it.each(KINDS)('leaves Pulumi %s args untouched', (kind) => {
    const args = WORKLOADS[kind].args();
    const before = structuredClone(args);
    expect(() => pulumiGpuWorkload(args, bad)).toThrow('gpuWorkload train: tflopsLimit: got 5, expected at least tflopsRequest (10)');
    expect(() => pulumiT9kGpuWorkload(args, { mode: 'exclusive-gpu', gpus: 0 })).toThrow(
      't9kGpuWorkload train: gpus: got 0, expected an integer from 1 to 128',
    );
    expect(args).toEqual(before);
  });
});

describe('t9kGpuWorkload', () => {
  const shared = { mode: 'shared-gpu', percent: 30, groupName: 'gpu-usage' } as const;

  it.each(KINDS)('puts a %s on the T9k Scheduler alike in cdk8s (raw and imported) and Pulumi', async (kind) => {
    const [raw] = synthChart((chart) => cdk8sT9kGpuWorkload(rawApiObject(chart, kind), shared));
    const imported = synthChart((chart) => cdk8sT9kGpuWorkload(new IMPORTED[kind](chart, 'w', WORKLOADS[kind].args() as never), shared));
    const fromPulumi = await pulumiObjects(() => void new PULUMI[kind]('w', pulumiT9kGpuWorkload(WORKLOADS[kind].args(), shared) as never));
    const args = WORKLOADS[kind].args() as { metadata: object; spec: object };
    const fromOutputs = await pulumiObjects(
      () => void new PULUMI[kind]('w', pulumiT9kGpuWorkload({ metadata: args.metadata, spec: pulumi.output(args.spec) }, shared) as never),
    );
    expect(imported).toEqual([raw]);
    expect(fromPulumi).toEqual([raw]);
    expect(fromOutputs).toEqual([raw]);
    const tpl = podTemplateOf(raw);
    expect(tpl.metadata.labels).toEqual({ ...app, 'scheduler.tensorstack.dev/group-name': 'gpu-usage' });
    expect(tpl.spec.schedulerName).toBe('t9k-scheduler');
    expect(tpl.spec.nodeSelector).toEqual({ 'sched.tensorstack.dev/node-alloc-mode': 'sgn' });
    expect((tpl.spec.containers as { resources: unknown }[])[0].resources).toEqual({
      limits: { 'tensorstack.dev/nvidia-gpu-percent': 30 },
    });
    validateAll([raw]);
  });

  it('works on a cdk8s-plus Deployment', () => {
    const [deployment] = synthChart((chart) => {
      const d = new kplus.Deployment(chart, 'plus', { containers: [{ name: 'main', image: 'nginx' }] });
      cdk8sT9kGpuWorkload(d, { mode: 'exclusive-node' });
    });
    const tpl = podTemplateOf(deployment);
    expect(tpl.spec.schedulerName).toBe('t9k-scheduler');
    expect((tpl.spec.containers as { resources: { limits: object } }[])[0].resources.limits).toEqual(
      expect.objectContaining({ 'tensorstack.dev/nvidia-gpu-node': 1 }),
    );
    expect(tpl.spec.tolerations).toEqual([
      { key: 'sched.tensorstack.dev/xgn-mode', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
    ]);
    validateAll([deployment]);
  });
});

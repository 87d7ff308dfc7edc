/**
 * Pulumi args are Inputs and what components expose are Outputs (as pulumi-eks and awsx do): plain
 * values are checked in the constructor, values held in Outputs at preview, and a bad one there fails
 * the program once, with the component's name and the field.
 */
import { spawnSync } from 'child_process';
import { join } from 'path';
import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { GpuNode, GpuPool, gpuWorkload, TensorFusionController, TensorFusionWorkload, WorkloadProfile } from '../../components/pulumi';
import { capture, objectsOf, valueOf } from '../support/pulumi-mocks';

describe('Pulumi args take Inputs', () => {
  it('labels the node named by an Output, and exposes nodeName as an Output', async () => {
    let node!: GpuNode;
    const objects = objectsOf(
      await capture(
        () => void (node = new GpuNode('a100', { nodeName: pulumi.output('gpu-a100-0'), pools: [pulumi.output('default-pool')] })),
      ),
    );
    expect(objects).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name: 'gpu-a100-0',
          labels: { 'tensor-fusion.ai/pool-default-pool': 'true' },
          annotations: { 'tensor-fusion.ai/gpu-node': 'true' },
        },
      },
    ]);
    expect(await valueOf(node.nodeName)).toBe('gpu-a100-0');
  });

  it('renders the same GPUPool from Outputs as from plain values, and exposes poolName as an Output', async () => {
    const plain = objectsOf(await capture(() => void new GpuPool('pool', { name: 'training', defaultQos: 'high' })));
    let pool!: GpuPool;
    const fromOutputs = objectsOf(
      await capture(
        () => void (pool = new GpuPool('pool', { name: pulumi.output('training'), defaultQos: Promise.resolve('high' as const) })),
      ),
    );
    expect(fromOutputs).toEqual(plain);
    expect(await valueOf(pool.poolName)).toBe('training');
  });

  it('exposes profileName and workloadName as Outputs', async () => {
    let profile!: WorkloadProfile;
    let workload!: TensorFusionWorkload;
    await capture(() => {
      profile = new WorkloadProfile('p', { qos: pulumi.output('low' as const) });
      workload = new TensorFusionWorkload('w', { name: 'fixed' });
    });
    expect(await valueOf(profile.profileName)).toBe('p');
    expect(await valueOf(workload.workloadName)).toBe('fixed');
  });

  it('gpuWorkload takes its options as Inputs: wired from Outputs, it renders what plain values render', async () => {
    const pod = { metadata: { name: 'train' }, spec: { containers: [{ name: 'python', image: 'pytorch' }] } };
    const options = { pool: 'training', workloadProfile: 'small', tflopsRequest: 10, vramRequest: '4Gi', injectContainers: ['python'] };
    const plain = objectsOf(await capture(() => void new k8s.core.v1.Pod('train', gpuWorkload(pod, options))));
    let pool!: GpuPool;
    const wired = objectsOf(
      await capture(() => {
        pool = new GpuPool('pool', { name: 'training' });
        const profile = new WorkloadProfile('small', {});
        new k8s.core.v1.Pod(
          'train',
          gpuWorkload(pod, {
            ...options,
            pool: pool.poolName,
            workloadProfile: profile.profileName,
            tflopsRequest: Promise.resolve(10),
            injectContainers: [pulumi.output('python')],
          }),
        );
      }),
    );
    expect(wired.filter((o) => o.kind === 'Pod')).toEqual(plain);
    expect((plain[0].metadata as { annotations: Record<string, string> }).annotations['tensor-fusion.ai/gpupool']).toBe('training');
  });

  it('gpuWorkload refuses a bad plain option at the call even when another option is an Output', () => {
    const pod = { metadata: { name: 'train' }, spec: { containers: [{ name: 'python', image: 'pytorch' }] } };
    expect(() => gpuWorkload(pod, { pool: pulumi.output('training'), tflopsRequest: -1 })).toThrow(
      'gpuWorkload train: tflopsRequest: got -1, expected',
    );
  });

  it('still refuses bad plain values in the constructor, before registering anything', async () => {
    const registered = await capture(() => {
      expect(() => new GpuPool('pool', { defaultQos: 'urgent' as never })).toThrow(
        'GpuPool pool: defaultQos: got "urgent", expected one of low, medium, high, critical',
      );
    });
    expect(registered).toEqual([]);
  });
});

describe('ordering by dependsOn', () => {
  it("exposes the Namespaces (the agent's last) and the CRDs as `crds`, for custom resources to depend on, and the namespace as an Output", async () => {
    let controller!: TensorFusionController;
    await capture(() => void (controller = new TensorFusionController('tf', { image: 'registry.example.com/tf:1' })));
    expect(controller.crds.map((r) => r.constructor.name)).toEqual([
      'Namespace',
      ...Array(controller.crds.length - 2).fill('CustomResourceDefinition'),
      'Namespace',
    ]);
    expect(controller.crds.length).toBeGreaterThanOrEqual(6);
    expect(
      controller.crds.every((r) => r instanceof k8s.core.v1.Namespace || r instanceof k8s.apiextensions.v1.CustomResourceDefinition),
    ).toBe(true);
    expect(await valueOf(controller.namespace)).toBe('tensor-fusion-system');
  });
});

describe('a bad value held in an Output', () => {
  const run = (name: string) => {
    const result = spawnSync(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', join(__dirname, '../support/pulumi-failures.ts'), name],
      {
        encoding: 'utf8',
        cwd: join(__dirname, '../..'),
      },
    );
    return { ...JSON.parse(result.stdout.trim().split('\n').pop()!), stderr: result.stderr };
  };

  it('a valid Output leaves no error and no pending promise', () => {
    expect(run('valid')).toEqual({ reported: [], exitCode: 0, stderr: '' });
  }, 60_000);

  it.each([
    ['pool-qos', 'GpuPool gpu-pool: defaultQos: got "urgent", expected one of low, medium, high, critical'],
    [
      'node-name',
      `GpuNode a100: nodeName: got "Bad_Node", expected a DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)`,
    ],
    ['workload-inject', 'gpuWorkload train: injectContainers: got "pythn", expected a container of the pod template: one of python'],
    [
      'pool-duplicate',
      'GpuPool second-pool: name: got "pool", expected a name no other GPUPool of this stack has (GpuPool gpu-pool already registers one): set another name',
    ],
    [
      'workload-pool-output',
      'gpuWorkload train: pool: got "Bad_Pool", expected a DNS-1123 label of at most 58 characters (lowercase letters, digits and \'-\', starting and ending with a letter or digit)',
    ],
    ['workload-limit-output', 'gpuWorkload train: tflopsLimit: got 5, expected at least tflopsRequest (10)'],
    [
      'profile-vram',
      'WorkloadProfile profile: spec.resources.limits.vram: got "2Gi", expected at least spec.resources.requests.vram (4Gi)',
    ],
    ['quota-limits', 'GpuResourceQuota quota: spec.total.limits.tflops: got "50", expected at least spec.total.requests.tflops (100)'],
  ])(
    '%s: fails the program once, naming the component and the field',
    (name, message) => {
      expect(run(name)).toEqual({ reported: [{ type: 'InputError', message }], exitCode: 32, stderr: '' });
    },
    60_000,
  );
});

/**
 * Runs one Pulumi program under mocks in its own process and prints, as one JSON line, the errors
 * the program fails with, deduplicated by identity as Pulumi's program runner does (it reports an
 * error object once however many promises it rejects), then the exit code. Usage:
 * node -r ts-node/register/transpile-only <this> <case>.
 */
import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { GpuNode, GpuPool, GpuResourceQuota, gpuWorkload, WorkloadProfile } from '../../components/pulumi';

const POD = { metadata: { name: 'train' }, spec: { containers: [{ name: 'python', image: 'pytorch' }] } };

const CASES: Record<string, () => void> = {
  valid: () => void new GpuPool('gpu-pool', { defaultQos: pulumi.output('high' as const) }),
  'pool-qos': () => void new GpuPool('gpu-pool', { defaultQos: pulumi.output('urgent' as never) }),
  'pool-duplicate': () => {
    new GpuPool('gpu-pool', { name: 'pool' });
    new GpuPool('second-pool', { name: pulumi.output('pool') });
  },
  'node-name': () => void new GpuNode('a100', { nodeName: pulumi.output('Bad_Node') }),
  'profile-vram': () =>
    void new WorkloadProfile('profile', {
      resources: pulumi.output({ requests: { tflops: '5', vram: '4Gi' }, limits: { tflops: '5', vram: '2Gi' } }),
    }),
  'quota-limits': () =>
    void new GpuResourceQuota('quota', {
      namespace: 'ml',
      total: pulumi.output({ requests: { tflops: '100' }, limits: { tflops: '50' } }),
    }),
  'workload-inject': () =>
    void new k8s.apps.v1.Deployment(
      'train',
      gpuWorkload(
        {
          metadata: { name: 'train' },
          spec: pulumi.output({
            selector: { matchLabels: { app: 'train' } },
            template: { metadata: { labels: { app: 'train' } }, spec: { containers: [{ name: 'python', image: 'pytorch' }] } },
          }),
        },
        { injectContainers: ['pythn'] },
      ),
    ),
  'workload-pool-output': () => void new k8s.core.v1.Pod('train', gpuWorkload(POD, { pool: pulumi.output('Bad_Pool'), tflopsRequest: 10 })),
  // A rule over two options, one of them an Output: checked once both are known.
  'workload-limit-output': () => void new k8s.core.v1.Pod('train', gpuWorkload(POD, { tflopsRequest: pulumi.output(10), tflopsLimit: 5 })),
};

const errors = new Set<unknown>();
process.on('unhandledRejection', (err) => {
  errors.add(err);
  // As Pulumi's runner does once it has reported an error: the run failed (and its resource
  // operations are abandoned, so they are not reported as leaked promises).
  process.exitCode = 32;
});
void pulumi.runtime.setMocks(
  { newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }), call: (args) => args.inputs },
  'project',
  'stack',
  true,
);
CASES[process.argv[2]]();
setTimeout(() => {
  const reported = [...errors].map((e) => ({ type: (e as Error).constructor.name, message: (e as Error).message }));
  // eslint-disable-next-line no-console -- the one line the test reads
  console.log(JSON.stringify({ reported, exitCode: process.exitCode ?? 0 }));
}, 1500);

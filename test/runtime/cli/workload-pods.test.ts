import { workloadPods } from '../../../lib/runtime/cli/workload-pods';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { gpuPod } from './fixtures';

const template = { metadata: gpuPod('', '10').metadata, spec: gpuPod('', '10').spec };
const o = (kind: string, spec: object, name = 'w') => ({ apiVersion: 'x', kind, metadata: { name, namespace: 'ml' }, spec }) as K8sObject;

describe('kubectl tf plan: the pods manifests create', () => {
  test('each controller kind once per replica or parallel pod, named after it', () => {
    const r = workloadPods([
      o('Deployment', { replicas: 2, template }, 'd'),
      o('StatefulSet', { template }, 's'),
      o('ReplicaSet', { replicas: 0, template }, 'r'),
      o('Job', { parallelism: 2, template }, 'j'),
      o('CronJob', { jobTemplate: { spec: { template } } }, 'c'),
      o('Service', {}),
      o('ConfigMap', {}),
      o('ConfigMap', {}),
    ]);
    expect(r.pods.map((p) => `${p.namespace}/${p.name} ${p.source}`)).toEqual([
      'ml/d-0 Deployment ml/d',
      'ml/d-1 Deployment ml/d',
      'ml/s-0 StatefulSet ml/s',
      'ml/j-0 Job ml/j',
      'ml/j-1 Job ml/j',
      'ml/c-0 CronJob ml/c',
    ]);
    expect(r.ignored).toEqual({ Service: 1, ConfigMap: 2 });
  });

  test('pods without the enabled label and not of our scheduler are counted out; ours without it take CPU only', () => {
    const plain = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' }, spec: { containers: [] } } as K8sObject;
    const ours = { ...plain, metadata: { name: 'cpu' }, spec: { schedulerName: 'tensor-fusion-scheduler', containers: [] } } as K8sObject;
    const r = workloadPods([plain, ours, gpuPod('gpu', '1') as K8sObject], 'team');
    expect(r.notGpu).toBe(1);
    expect(r.pods.map((p) => [p.namespace, p.name, p.cpuOnly])).toEqual([
      ['team', 'cpu', true],
      ['ml', 'gpu', undefined],
    ]);
  });

  test('a bad replica count or a missing template names the object and the field', () => {
    expect(() => workloadPods([o('Job', { parallelism: 1.5, template })])).toThrow(
      'Job ml/w: spec.parallelism is 1.5, expected a whole number of pods (0 or more)',
    );
    expect(() => workloadPods([o('Deployment', { replicas: 1 })])).toThrow('Deployment ml/w: has no pod template');
  });
});

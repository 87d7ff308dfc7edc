/**
 * Pulumi components refuse to write an object another component of the same stack already writes
 * (same kind, namespace and name, same cluster), as the cdk8s ones do within an app, with the same
 * words: otherwise two GpuPools of one `name` would fight over one GPUPool.
 */
import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { GpuNode, GpuPool, GpuResourceQuota, TensorFusionController, WorkloadProfile } from '../../components/pulumi';
import { capture, objectsOf } from '../support/pulumi-mocks';

const names = (objects: Record<string, unknown>[]) => objects.map((o) => `${o.kind} ${(o.metadata as { name: string }).name}`);

describe('one name per kind in a Pulumi stack', () => {
  it('refuses a second GpuPool of one name in the constructor, naming both components, and registers no object for it', async () => {
    const registered = await capture(() => {
      new GpuPool('a', { name: 'pool' });
      expect(() => new GpuPool('b', { name: 'pool' })).toThrow(
        'GpuPool b: name: got "pool", expected a name no other GPUPool of this stack has (GpuPool a already registers one): set another name',
      );
      new GpuPool('c', { name: 'other' });
    });
    expect(names(objectsOf(registered))).toEqual(['GPUPool pool', 'GPUPool other']);
  });

  it('refuses a pool named after a resource name another pool has set as its name', async () => {
    await capture(() => {
      new GpuPool('gpus', { name: 'training' });
      expect(() => new GpuPool('training')).toThrow(
        'GpuPool training: name: got "training", expected a name no other GPUPool of this stack has (GpuPool gpus already registers one)',
      );
    });
  });

  it('allows one name in two namespaces for namespaced kinds, and refuses it twice in one namespace', async () => {
    await capture(() => {
      new WorkloadProfile('ml', { name: 'profile', namespace: 'ml' });
      new WorkloadProfile('research', { name: 'profile', namespace: 'research' });
      expect(() => new WorkloadProfile('again', { name: 'profile', namespace: 'ml' })).toThrow(
        'WorkloadProfile again: name: got "profile", expected a name no other WorkloadProfile of this stack has (WorkloadProfile ml already registers one): set another name',
      );
      new GpuResourceQuota('quota-ml', { name: 'quota', namespace: 'ml', total: { maxWorkers: 1 } });
      new GpuResourceQuota('quota-research', { name: 'quota', namespace: 'research', total: { maxWorkers: 1 } });
      expect(() => new GpuResourceQuota('quota-again', { name: 'quota', namespace: 'ml', total: { maxWorkers: 2 } })).toThrow(
        'GpuResourceQuota quota-again: name: got "quota", expected a name no other GPUResourceQuota of this stack has (GpuResourceQuota quota-ml already registers one): set another name',
      );
    });
  });

  it('refuses two GpuNodes labelling one node, and two controllers', async () => {
    await capture(() => {
      new GpuNode('first', { nodeName: 'gpu-0', pools: ['a'] });
      expect(() => new GpuNode('second', { nodeName: 'gpu-0', pools: ['b'] })).toThrow(
        'GpuNode second: name: got "gpu-0", expected a name no other Node of this stack has (GpuNode first already registers one): set another name',
      );
      new TensorFusionController('tf', { image: 'registry.example.com/tf:1' });
      expect(() => new TensorFusionController('tf2', { image: 'registry.example.com/tf:1' })).toThrow(
        /^TensorFusionController tf2: name: got "tensor-fusion-system", expected a name no other Namespace of this stack has \(TensorFusionController tf already registers one\)/,
      );
    });
  });

  it('allows one name on two clusters (two Kubernetes providers), and in two stacks', async () => {
    await capture(() => {
      const other = new k8s.Provider('other-cluster', {});
      new GpuPool('a', { name: 'pool' });
      new GpuPool('b', { name: 'pool' }, { provider: other });
      const parent = new pulumi.ComponentResource('test:index:Group', 'group', {}, { providers: [other] });
      expect(() => new GpuPool('c', { name: 'pool' }, { parent })).toThrow(
        'GpuPool c: name: got "pool", expected a name no other GPUPool of this stack has (GpuPool b already registers one)',
      );
    });
    await capture(() => void new GpuPool('a', { name: 'pool' }));
  });
});

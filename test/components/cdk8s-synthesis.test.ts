/**
 * cdk8s behaviour users expect from a construct library: gpuWorkload reads the final pod template
 * at synthesis (later containers, scheduling and JSON patches are kept), the controller's objects
 * come first in their chart whatever the declaration order, and names follow the construct id with
 * duplicates refused.
 */
import { ApiObject, App, Chart, JsonPatch, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-31';
import { GpuNode, GpuPool, GpuResourceQuota, TensorFusionController, TensorFusionWorkload, WorkloadProfile } from '../../components/cdk8s';
import { gpuWorkload, t9kGpuWorkload } from '../../components/cdk8s';
import type { GpuWorkloadOptions } from '../../lib/annotations';
import { KubeObject } from '../../lib/k8s/object';
import { thrownMessage } from './frameworks';

type Template = {
  metadata: { annotations: Record<string, string> };
  spec: { containers: { name: string }[]; affinity?: unknown; schedulerName?: string };
};
const templateOf = (objects: KubeObject[], kind = 'Deployment') =>
  (objects.find((o) => o.kind === kind)!.spec as { template: Template }).template;
const deploymentArgs = () => ({
  metadata: { name: 'train' },
  spec: {
    selector: { matchLabels: { app: 'train' } },
    template: { metadata: { labels: { app: 'train' } }, spec: { containers: [{ name: 'python', image: 'pytorch/pytorch' }] } },
  },
});

describe('gpuWorkload reads the final pod template at synthesis', () => {
  it('keeps containers and scheduling added later to a cdk8s-plus Deployment that had none at the call', () => {
    const chart = new Chart(Testing.app(), 'c');
    const deployment = new kplus.Deployment(chart, 'plus');
    gpuWorkload(deployment, { injectContainers: ['python'], tflopsRequest: 10, vramRequest: '4Gi' });
    deployment.addContainer({ name: 'python', image: 'pytorch/pytorch' });
    deployment.addContainer({ name: 'sidecar', image: 'envoy' });
    deployment.scheduling.attract(kplus.Node.labeled(kplus.NodeLabelQuery.is('gpu', 'a100')));
    const template = templateOf(Testing.synth(chart));
    expect(template.spec.containers.map((c) => c.name)).toEqual(['python', 'sidecar']);
    expect(template.spec.affinity).toBeDefined();
    expect(template.metadata.annotations).toMatchObject({
      'tensor-fusion.ai/inject-container': 'python',
      'tensor-fusion.ai/vram-request': '4Gi',
    });
  });

  it('keeps a JSON patch added after the call, and checks inject-container against the patched containers', () => {
    const chart = new Chart(Testing.app(), 'c');
    const deployment = new kplus.k8s.KubeDeployment(chart, 'd', deploymentArgs());
    gpuWorkload(deployment, { injectContainers: ['sidecar'], tflopsRequest: 10 });
    deployment.addJsonPatch(JsonPatch.add('/spec/template/spec/containers/-', { name: 'sidecar', image: 'envoy' }));
    const template = templateOf(Testing.synth(chart));
    expect(template.spec.containers.map((c) => c.name)).toEqual(['python', 'sidecar']);
    expect(template.metadata.annotations['tensor-fusion.ai/inject-container']).toBe('sidecar');
  });

  it('reports an inject-container missing from the final template at synthesis, naming gpuWorkload and the construct path', () => {
    const chart = new Chart(Testing.app(), 'c');
    const deployment = new kplus.Deployment(chart, 'plus');
    gpuWorkload(deployment, { injectContainers: ['python'] });
    deployment.addContainer({ name: 'main', image: 'nginx' });
    expect(thrownMessage(() => Testing.synth(chart))).toBe(
      'gpuWorkload c/plus: injectContainers: got "python", expected a container of the pod template: one of main',
    );
  });

  it('writes the options as they were checked at the call, even if the caller changes them afterwards', () => {
    const chart = new Chart(Testing.app(), 'c');
    const options: GpuWorkloadOptions = { qos: 'high', injectContainers: ['python'] };
    gpuWorkload(new kplus.k8s.KubeDeployment(chart, 'd', deploymentArgs()), options);
    (options as { qos: string }).qos = 'urgent';
    (options.injectContainers as string[]).push('gone');
    expect(templateOf(Testing.synth(chart)).metadata.annotations).toMatchObject({
      'tensor-fusion.ai/qos': 'high',
      'tensor-fusion.ai/inject-container': 'python',
    });
  });

  it('t9kGpuWorkload also sees containers added after the call', () => {
    const chart = new Chart(Testing.app(), 'c');
    const deployment = new kplus.Deployment(chart, 'plus');
    t9kGpuWorkload(deployment, { mode: 'exclusive-gpu', gpus: 1 });
    deployment.addContainer({ name: 'main', image: 'nginx' });
    expect(templateOf(Testing.synth(chart)).spec.schedulerName).toBe('t9k-scheduler');
  });
});

describe('apply order in one chart', () => {
  const kinds = (objects: KubeObject[]) => objects.map((o) => o.kind);

  it('puts every object of the controller before the custom resources and GPU workloads declared before it', () => {
    const alone = Testing.synth(
      (() => {
        const c = new Chart(Testing.app(), 'c');
        new TensorFusionController(c, 'tf', { image: 'registry.example.com/tf:1' });
        return c;
      })(),
    );
    const chart = new Chart(Testing.app(), 'c');
    new GpuPool(chart, 'default-pool');
    new WorkloadProfile(chart, 'profile', { namespace: 'ml' });
    new TensorFusionWorkload(chart, 'workers', { namespace: 'ml' });
    new GpuResourceQuota(chart, 'quota', { namespace: 'ml', total: { maxWorkers: 4 } });
    gpuWorkload(new ApiObject(chart, 'train', { apiVersion: 'apps/v1', kind: 'Deployment', ...deploymentArgs() }), { tflopsRequest: 10 });
    new TensorFusionController(chart, 'tf', { image: 'registry.example.com/tf:1' });
    const objects = Testing.synth(chart);
    // The controller's objects first, in their own order (namespace and CRDs leading).
    expect(kinds(objects).slice(0, alone.length)).toEqual(kinds(alone));
    expect(kinds(objects).slice(alone.length).sort()).toEqual([
      'Deployment',
      'GPUPool',
      'GPUResourceQuota',
      'TensorFusionWorkload',
      'WorkloadProfile',
    ]);
  });

  it('leaves objects unrelated to the controller where they were declared', () => {
    const chart = new Chart(Testing.app(), 'c');
    new GpuNode(chart, 'n', { nodeName: 'gpu-0' });
    new TensorFusionController(chart, 'tf', { image: 'registry.example.com/tf:1' });
    expect(Testing.synth(chart)[0].kind).toBe('Node');
  });
});

describe('names', () => {
  it('names a pool after its id, and says to set name when the id is not a valid pool name', () => {
    const chart = new Chart(Testing.app(), 'c');
    expect(new GpuPool(chart, 'h100').poolName).toBe('h100');
    expect(thrownMessage(() => new GpuPool(chart, 'H100Pool'))).toBe(
      'GpuPool H100Pool: name: got "H100Pool", expected a DNS-1123 label of at most 58 characters (lowercase letters, digits and \'-\', starting and ending with a letter or digit); name is not set, so the id was used: set name, e.g. name: "h100pool"',
    );
    expect(new GpuPool(chart, 'H100Pool', { name: 'h100-pool' }).poolName).toBe('h100-pool');
  });

  it('refuses two GPUPools of one name in one app, even in two charts, and adds nothing', () => {
    const app = new App({ outdir: Testing.app().outdir });
    new GpuPool(new Chart(app, 'a'), 'pool');
    const b = new Chart(app, 'b');
    expect(thrownMessage(() => new GpuPool(b, 'pool'))).toBe(
      'GpuPool pool: name: got "pool", expected a name no other GPUPool of this app has (a/pool already synthesizes one): set another name',
    );
    expect(b.node.children).toEqual([]);
    expect(new GpuPool(b, 'other', { name: 'other' }).poolName).toBe('other');
  });

  it('allows one name in two namespaces for namespaced kinds, and refuses it twice in one namespace', () => {
    const app = Testing.app();
    new WorkloadProfile(new Chart(app, 'a', { namespace: 'ml' }), 'profile');
    new WorkloadProfile(new Chart(app, 'b', { namespace: 'research' }), 'profile');
    expect(thrownMessage(() => new WorkloadProfile(new Chart(app, 'c'), 'profile', { namespace: 'ml' }))).toBe(
      'WorkloadProfile profile: name: got "profile", expected a name no other WorkloadProfile of this app has (a/profile already synthesizes one): set another name',
    );
    new GpuResourceQuota(new Chart(app, 'd'), 'quota', { namespace: 'ml', total: { maxWorkers: 1 } });
    new GpuResourceQuota(new Chart(app, 'e'), 'quota', { namespace: 'research', total: { maxWorkers: 1 } });
    expect(thrownMessage(() => new GpuResourceQuota(new Chart(app, 'f'), 'quota', { namespace: 'ml', total: { maxWorkers: 2 } }))).toBe(
      'GpuResourceQuota quota: name: got "quota", expected a name no other GPUResourceQuota of this app has (d/quota already synthesizes one): set another name',
    );
  });
});

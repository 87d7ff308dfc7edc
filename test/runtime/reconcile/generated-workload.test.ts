/**
 * Generated TensorFusionWorkloads come from the controller (leader), made from opted-in pods that
 * exist, never from an AdmissionReview; a workload it did not generate is never overwritten.
 */
import type { GPUPool, TensorFusionWorkload, WorkloadProfile } from '../../../lib/api';
import { DEFAULT_POOL_ANNOTATION, ENABLED_LABEL, WORKLOAD_LABEL } from '../../../lib/model/metadata-keys';
import { API_VERSION } from '../../../lib/model/group';
import type { Controller } from '../../../lib/runtime/reconcile/controller';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { planGeneratedWorkload } from '../../../lib/runtime/reconcile/generated-workload';
import { TopOwners } from '../../../lib/runtime/shared/top-owner';
import type { SettingsView } from '../../../lib/runtime/shared/resolve-pod';
import { ApiServerDouble, clusterFor } from '../../support/api-server';
import { eventually, testController } from '../fixtures';
import { ann } from '../../support/annotations';
import { seedPool, startDouble, writes } from '../webhook/fixtures';

/** A pod as the API server stores it after admission: opted in, labelled for its workload. */
function admittedPod(
  name: string,
  workload: string,
  annotations: Record<string, string>,
  extra: Partial<K8sObject['metadata']> = {},
  phase = 'Running',
): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ml',
      labels: { [ENABLED_LABEL]: 'true', [WORKLOAD_LABEL]: workload },
      annotations: ann(annotations),
      ...extra,
    },
    spec: { containers: [{ name: 'main', image: 'example.io/app:1' }] },
    status: { phase },
  };
}

const LOCAL = { 'is-local-gpu': 'true', 'tflops-request': '10', 'vram-request': '4Gi', 'tflops-limit': '20' };

describe('the plan for one workload name', () => {
  const pool: GPUPool = {
    apiVersion: API_VERSION,
    kind: 'GPUPool',
    metadata: { name: 'pool-a', annotations: { [DEFAULT_POOL_ANNOTATION]: 'true' } },
    spec: { nodeManagerConfig: {} },
  };
  const profile: WorkloadProfile = {
    apiVersion: API_VERSION,
    kind: 'WorkloadProfile',
    metadata: { name: 'p', namespace: 'ml' },
    spec: { qos: 'critical' },
  };
  const view: SettingsView = {
    pool: (n) => (n === 'pool-a' ? pool : undefined),
    poolNames: () => ['pool-a'],
    defaultPool: () => 'pool-a',
    profile: (ns, n) => (ns === 'ml' && n === 'p' ? profile : undefined),
  };
  const at = (t: string) => ({ creationTimestamp: t });

  it('takes the spec of the newest pod that resolves, in the shape the webhook used to write', async () => {
    const pods = [
      admittedPod('old', 'train', { ...LOCAL, 'gpu-count': '1' }, at('2026-01-01T00:00:00Z')),
      admittedPod('new', 'train', { ...LOCAL, 'gpu-count': '2', 'workload-profile': 'p', 'gpu-model': 'A100' }, at('2026-01-02T00:00:00Z')),
      admittedPod('newest-but-broken', 'train', { ...LOCAL, 'workload-profile': 'gone' }, at('2026-01-03T00:00:00Z')),
    ];
    expect(await planGeneratedWorkload('ml', 'train', pods, undefined, view)).toEqual({
      apply: {
        apiVersion: API_VERSION,
        kind: 'TensorFusionWorkload',
        metadata: { name: 'train', namespace: 'ml', labels: { [WORKLOAD_LABEL]: 'train', 'tensor-fusion.ai/generated': 'true' } },
        spec: {
          poolName: 'pool-a',
          qos: 'critical',
          isLocalGPU: true,
          gpuCount: 2,
          gpuModel: 'A100',
          resources: { requests: { tflops: '10', vram: '4Gi' }, limits: { tflops: '20', vram: '4Gi' } },
        },
      },
    });
  });

  it('gives a remote workload one replica unless the pod asks for more', async () => {
    const plan = await planGeneratedWorkload(
      'ml',
      'infer',
      [admittedPod('c', 'infer', { ...LOCAL, 'is-local-gpu': 'false' })],
      undefined,
      view,
    );
    expect(plan.apply?.spec).toMatchObject({ isLocalGPU: false, replicas: 1 });
  });

  it('generates nothing from pods that opt out, left, are not opted in, or carry another workload name', async () => {
    const optedOut = admittedPod('a', 'w', { ...LOCAL, 'generate-workload': 'false', workload: 'w' });
    const finished = admittedPod('b', 'w', LOCAL, {}, 'Succeeded');
    const leaving = admittedPod('c', 'w', LOCAL, { deletionTimestamp: '2026-01-01T00:00:00Z' });
    const notOptedIn = admittedPod('d', 'w', LOCAL);
    notOptedIn.metadata.labels = { [WORKLOAD_LABEL]: 'w' };
    const relabelled = admittedPod('e', 'w', { ...LOCAL, workload: 'other' });
    expect(await planGeneratedWorkload('ml', 'w', [optedOut, finished, leaving, notOptedIn, relabelled], undefined, view)).toEqual({});
  });

  it('never overwrites a workload it did not generate', async () => {
    const mine = {
      apiVersion: API_VERSION,
      kind: 'TensorFusionWorkload',
      metadata: { name: 'w', namespace: 'ml', labels: { [WORKLOAD_LABEL]: 'w' } },
      spec: { replicas: 5 },
    } as TensorFusionWorkload;
    expect(await planGeneratedWorkload('ml', 'w', [admittedPod('a', 'w', LOCAL)], mine, view)).toEqual({
      skipped: 'TensorFusionWorkload ml/w exists and was not generated (no tensor-fusion.ai/generated: "true"); left as it is',
    });
  });

  it('applies nothing when the generated workload already matches, whatever the key order it comes back in', async () => {
    const first = (await planGeneratedWorkload('ml', 'w', [admittedPod('a', 'w', LOCAL)], undefined, view)).apply!;
    const stored = JSON.parse(
      JSON.stringify({
        ...first,
        spec: { resources: first.spec && (first.spec as any).resources, ...(first.spec as object), extra: 'by hand' },
      }),
    );
    expect(await planGeneratedWorkload('ml', 'w', [admittedPod('a', 'w', LOCAL)], stored, view)).toEqual({});
    expect(
      (await planGeneratedWorkload('ml', 'w', [admittedPod('a', 'w', { ...LOCAL, 'gpu-count': '3' })], stored, view)).apply?.spec,
    ).toMatchObject({ gpuCount: 3 });
  });
});

describe('owners of generated workloads (issue 14.10)', () => {
  const pool: GPUPool = {
    apiVersion: API_VERSION,
    kind: 'GPUPool',
    metadata: { name: 'pool-a', annotations: { [DEFAULT_POOL_ANNOTATION]: 'true' } },
    spec: { nodeManagerConfig: {} },
  };
  const view: SettingsView = { pool: () => pool, poolNames: () => ['pool-a'], defaultPool: () => 'pool-a', profile: () => undefined };
  const rs = (name: string, uid: string) => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', name, uid, controller: true });
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'd-1' };

  it("owns the workload by every generating pod's top owner, adding owners and never dropping one", async () => {
    const owners = new TopOwners({
      get: async (_rt, ref) =>
        ({
          metadata: {
            name: ref.name,
            namespace: ref.namespace,
            uid: `uid-${ref.name}`,
            ownerReferences: [{ ...deployment, controller: true }],
          },
        }) as never,
    });
    const a = admittedPod('web-abc-1', 'web', LOCAL, { uid: 'p1', ownerReferences: [rs('web-abc', 'uid-web-abc')] as never });
    const bare = admittedPod('solo', 'web', LOCAL, { uid: 'p2' });
    const plan = await planGeneratedWorkload('ml', 'web', [a, bare], undefined, view, (p) => owners.of(p));
    expect(plan.apply?.metadata.ownerReferences).toEqual([deployment, { apiVersion: 'v1', kind: 'Pod', name: 'solo', uid: 'p2' }]);
    // Stored with one more owner (someone's): kept; nothing new, nothing to apply.
    const stored = {
      ...plan.apply!,
      metadata: {
        ...plan.apply!.metadata,
        ownerReferences: [...plan.apply!.metadata.ownerReferences!, { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'x' }],
      },
    };
    expect(
      await planGeneratedWorkload('ml', 'web', [a, bare], stored as unknown as TensorFusionWorkload, view, (p) => owners.of(p)),
    ).toEqual({});
  });

  it('resolves a Job to its CronJob, a StatefulSet to itself, and a ReplicaSet with no Deployment to itself', async () => {
    const parents: Record<string, K8sObject['metadata']> = {
      'nightly-29000000': {
        name: 'nightly-29000000',
        uid: 'j-1',
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'nightly', uid: 'c-1', controller: true }] as never,
      },
      'lonely-rs': { name: 'lonely-rs', uid: 'r-9' },
    };
    const owners = new TopOwners({ get: async (_rt, ref) => (parents[ref.name] ? ({ metadata: parents[ref.name] } as never) : undefined) });
    const owned = (kind: string, apiVersion: string, name: string, uid: string) =>
      admittedPod('x', 'w', LOCAL, { uid: 'p', ownerReferences: [{ apiVersion, kind, name, uid, controller: true }] as never });
    expect(await owners.of(owned('Job', 'batch/v1', 'nightly-29000000', 'j-1'))).toEqual({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      name: 'nightly',
      uid: 'c-1',
    });
    expect(await owners.of(owned('StatefulSet', 'apps/v1', 'db', 's-1'))).toEqual({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      name: 'db',
      uid: 's-1',
    });
    expect(await owners.of(owned('ReplicaSet', 'apps/v1', 'lonely-rs', 'r-9'))).toEqual({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: 'lonely-rs',
      uid: 'r-9',
    });
    // A ReplicaSet that is gone (or was replaced under the same name): not told now.
    expect(await owners.of(owned('ReplicaSet', 'apps/v1', 'gone', 'r-0'))).toBeUndefined();
  });

  it('deletes a generated workload left with no owner and no pod asking for it, and nothing else', async () => {
    const generated = {
      apiVersion: API_VERSION,
      kind: 'TensorFusionWorkload',
      metadata: { name: 'w', namespace: 'ml', labels: { 'tensor-fusion.ai/generated': 'true' } },
      spec: {},
    } as TensorFusionWorkload;
    const worker = admittedPod('w-worker-0', 'w', { ...LOCAL, 'generate-workload': 'false', workload: 'w' });
    expect(await planGeneratedWorkload('ml', 'w', [worker], generated, view)).toEqual({ delete: true });
    expect(
      await planGeneratedWorkload(
        'ml',
        'w',
        [],
        { ...generated, metadata: { ...generated.metadata, ownerReferences: [deployment] } } as TensorFusionWorkload,
        view,
      ),
    ).toEqual({});
    expect(
      await planGeneratedWorkload('ml', 'w', [], { ...generated, metadata: { name: 'w', namespace: 'ml' } } as TensorFusionWorkload, view),
    ).toEqual({});
  });
});

describe('the controller generating workloads from pods in the cluster', () => {
  let double: ApiServerDouble;
  let ctl: Controller;

  beforeAll(async () => {
    double = await startDouble();
    seedPool(double, { name: 'pool-a', nodes: 1, gpusPerNode: 1, isDefault: true });
    double.put('tensorfusionworkloads', {
      apiVersion: API_VERSION,
      kind: 'TensorFusionWorkload',
      metadata: { name: 'hand-made', namespace: 'ml' },
      spec: { poolName: 'pool-a', replicas: 7 },
    });
    ctl = testController(double);
    ctl.startInformers();
    await ctl.startReconciling(clusterFor(double, 'leader'));
  });

  afterAll(async () => {
    await ctl.stop();
    await double.stop();
  });

  it('creates the workload of a pod that exists, with the resolved spec', async () => {
    double.put('pods', admittedPod('web-5d8f7-abcde', 'web', LOCAL));
    await eventually(() =>
      expect(double.getObject('tensorfusionworkloads', 'web', 'ml')).toMatchObject({
        metadata: { labels: { [WORKLOAD_LABEL]: 'web', 'tensor-fusion.ai/generated': 'true' } },
        spec: {
          poolName: 'pool-a',
          qos: 'medium',
          isLocalGPU: true,
          gpuCount: 1,
          resources: { requests: { tflops: '10', vram: '4Gi' }, limits: { tflops: '20', vram: '4Gi' } },
        },
      }),
    );
  });

  it('follows a newer pod of the same workload', async () => {
    await new Promise((r) => setTimeout(r, 1100)); // creation timestamps have whole seconds
    double.put('pods', admittedPod('web-6c9d1-fghij', 'web', { ...LOCAL, 'gpu-count': '2' }));
    await eventually(() => expect(double.getObject('tensorfusionworkloads', 'web', 'ml')?.spec.gpuCount).toBe(2));
  });

  it('leaves a workload someone else made alone, while generating the others', async () => {
    const path = '/apis/tensor-fusion.ai/v1/namespaces/ml/tensorfusionworkloads/hand-made';
    double.put('pods', admittedPod('hm-0', 'hand-made', LOCAL));
    double.put('pods', admittedPod('other-0', 'other', LOCAL));
    await eventually(() => expect(double.getObject('tensorfusionworkloads', 'other', 'ml')).toBeDefined());
    await new Promise((r) => setTimeout(r, 200));
    expect(double.getObject('tensorfusionworkloads', 'hand-made', 'ml')!.spec).toEqual({ poolName: 'pool-a', replicas: 7 });
    // Its status is the controller's to write, its spec is not.
    expect(writes(double).filter((q) => q.path === path)).toEqual([]);
  });

  it('generates nothing for a pod without the workload label the webhook gives', async () => {
    const bare = admittedPod('unlabelled', 'x', LOCAL);
    bare.metadata.labels = { [ENABLED_LABEL]: 'true' };
    double.put('pods', bare);
    double.put('pods', admittedPod('marker', 'marker', LOCAL));
    await eventually(() => expect(double.getObject('tensorfusionworkloads', 'marker', 'ml')).toBeDefined());
    expect(
      double
        .listObjects('tensorfusionworkloads')
        .map((w) => w.metadata.name)
        .sort(),
    ).toEqual(['hand-made', 'marker', 'other', 'web']);
  });
});

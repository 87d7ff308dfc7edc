/**
 * In-place resize of bound pods' shares to their workload's recommendation, through the extender's
 * allocator (Allocator.resize, PlacementState.resize, ShareResizer) against the API-server double:
 * the pod's record and MPS annotations are patched, a GPU is never over-committed, a share whose GPUs
 * have no room stays with a condition saying why, and a failed patch gives the room back.
 */
import { ALLOCATION_ANNOTATION, PLACEMENT_ANNOTATIONS, WORKLOAD_LABEL } from '../../../lib/model/metadata-keys';
import { Allocator } from '../../../lib/allocator';
import type { Cluster, K8sObject } from '../../../lib/runtime/kube/cluster';
import type { Informer } from '../../../lib/runtime/kube/informer';
import type { Extender } from '../../../lib/runtime/extender/extender';
import type { PlacementState } from '../../../lib/runtime/extender/placement-state';
import { RESIZE_CONDITION, ShareResizer } from '../../../lib/runtime/autoscale/resize';
import type { Workload } from '../../../lib/runtime/autoscale/loop';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { eventually } from '../fixtures';
import { GiB, seedPool } from '../webhook/fixtures';
import { shareOf, sharePod, startExtender } from './fixtures';

describe('Allocator.resize', () => {
  const a = () => {
    const al = new Allocator({ pools: { p: { tflopsOversellRatio: 100 } } });
    al.addNode({ name: 'n', pool: 'p', gpus: [{ id: 'G0', index: 0, model: 'A100', tflops: 100, vram: 80 * GiB }] });
    return al;
  };

  test('grows a share on its own GPU when it has room, and refuses (changing nothing) when it has not', () => {
    const al = a();
    const x = al.allocate({ id: 'x', pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, vramRequest: 30 * GiB });
    const y = al.allocate({ id: 'y', pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, vramRequest: 30 * GiB }, { node: 'n' });
    expect(x.ok && y.ok).toBe(true);
    // One GPU holds both, so growth is bounded by the other share.
    const gpu = 'G0';
    const grown = al.resize('x', { tflopsRequest: 20, tflopsLimit: 40, vramRequest: 50 * GiB, vramLimit: 60 * GiB });
    expect(grown).toEqual({
      ok: true,
      allocation: expect.objectContaining({
        id: 'x',
        node: 'n',
        gpuIds: [gpu],
        tflopsRequest: 20,
        tflopsLimit: 40,
        vramRequest: 50 * GiB,
        vramLimit: 60 * GiB,
      }),
    });
    expect(al.gpuUsage(gpu)).toMatchObject({ tflops: { requested: 30, limits: 50 }, vram: { requested: 80 * GiB } });
    const refused = al.resize('x', { tflopsRequest: 20, tflopsLimit: 40, vramRequest: 51 * GiB, vramLimit: 60 * GiB });
    expect(refused).toEqual({ ok: false, reasons: [{ kind: 'InsufficientVram', gpus: 1, message: '1 GPU: not enough free VRAM' }] });
    const oversold = al.resize('x', { tflopsRequest: 20, tflopsLimit: 95, vramRequest: 50 * GiB });
    expect(oversold).toEqual({
      ok: false,
      reasons: [{ kind: 'TflopsOversellExceeded', gpus: 1, ratio: 100, message: '1 GPU: TFLOPS limits would exceed 100% of capacity' }],
    });
    expect(al.gpuUsage(gpu)).toMatchObject({ tflops: { requested: 30, limits: 50 }, vram: { requested: 80 * GiB } });
    expect(al.allocation('x')).toMatchObject({ vramRequest: 50 * GiB });
  });

  test('refuses an unknown id with its message', () => {
    expect(() => a().resize('nope', { tflopsRequest: 1, vramRequest: GiB })).toThrow(
      'resize: id: got "nope", expected the id of a placed allocation of at least one GPU',
    );
  });
});

const SHARE = shareOf(30 * GiB);
const NODE = 'p-node-0';

describe('ShareResizer against the API double', () => {
  let api: ApiServerDouble;
  let informers: Informer<K8sObject>[];
  let state: PlacementState;
  let extender: Extender;

  beforeEach(async () => {
    api = await startApiServer({ bookmarkIntervalMs: 60_000 });
    seedPool(api, { name: 'p', nodes: 1, gpusPerNode: 1, vram: 80 * GiB, tflops: 100 });
    ({ informers, state, extender } = await startExtender(api));
  });

  afterEach(async () => {
    await Promise.all(informers.map((i) => i.stop()));
    await api.stop();
  });

  /** Creates a pod of workload `web` and places it through filter and bind on the one node. */
  async function place(name: string): Promise<K8sObject> {
    const pod = api.put('pods', sharePod(name, SHARE, { [WORKLOAD_LABEL]: 'web' })) as K8sObject;
    const f = await extender.filter({ Pod: pod, NodeNames: [NODE], Nodes: null });
    expect(f.NodeNames).toEqual([NODE]);
    expect(await extender.bind({ PodName: name, PodNamespace: 'default', PodUID: pod.metadata.uid!, Node: NODE })).toEqual({ Error: '' });
    return pod;
  }

  function workload(vram: string): Workload {
    return api.put('tensorfusionworkloads', {
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'TensorFusionWorkload',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        poolName: 'p',
        resources: { requests: { tflops: '10', vram: '30Gi' }, limits: { tflops: '20', vram: '30Gi' } },
        autoScalingConfig: { autoSetRequests: { enable: true }, autoSetLimits: { enable: true } },
      },
      status: { workerCount: 2, autoscaling: { recommendation: { requests: { tflops: '15', vram }, limits: { tflops: '25', vram } } } },
    }) as Workload;
  }

  const podsInformer = () => informers[3];
  const resizer = (cluster: Cluster, active = () => true) =>
    new ShareResizer({
      cluster,
      state,
      active,
      now: () => Date.parse('2027-01-01T00:00:00Z'),
      workloads: () => [api.getObject('tensorfusionworkloads', 'web', 'default') as Workload],
      pods: () =>
        podsInformer()
          .list()
          .filter((p) => p.metadata.labels?.[WORKLOAD_LABEL] === 'web')
          .sort((x, y) => x.metadata.name!.localeCompare(y.metadata.name!)),
    });
  const record = (name: string) => JSON.parse(api.getObject('pods', name, 'default')!.metadata.annotations[ALLOCATION_ANNOTATION]);
  const gpuVram = () => state.current().gpuUsage('p-node-0-gpu-0')!.vram;

  test('grows the shares that fit, patches their record and MPS annotations, and leaves the one that does not with a condition', async () => {
    const a = await place('a');
    await place('b');
    await eventually(async () =>
      expect(
        podsInformer()
          .list()
          .filter((p) => p.metadata.annotations?.[ALLOCATION_ANNOTATION]),
      ).toHaveLength(2),
    );
    workload('45Gi');
    const cluster = clusterFor(api, 'controller');
    await resizer(cluster).tick();

    expect(record('a')).toMatchObject({
      id: a.metadata.uid,
      node: NODE,
      gpuIds: ['p-node-0-gpu-0'],
      tflopsRequest: 15,
      tflopsLimit: 25,
      vramRequest: 45 * GiB,
      vramLimit: 45 * GiB,
    });
    const ann = api.getObject('pods', 'a', 'default')!.metadata.annotations;
    expect(ann[PLACEMENT_ANNOTATIONS.mpsMemoryLimit]).toBe('0=46080M');
    expect(ann[PLACEMENT_ANNOTATIONS.mpsThreadPercentage]).toBe('25');
    // b stays: 80 GiB - 45 GiB (a) leaves 35 GiB, less than 45 GiB.
    expect(record('b')).toMatchObject({ vramRequest: 30 * GiB, tflopsRequest: 10 });
    expect(gpuVram()).toMatchObject({ capacity: 80 * GiB, requested: 75 * GiB });
    const wl = api.getObject('tensorfusionworkloads', 'web', 'default')!;
    expect(wl.status.conditions).toEqual([
      {
        type: RESIZE_CONDITION,
        status: 'False',
        reason: 'NoRoomOnGpu',
        lastTransitionTime: '2027-01-01T00:00:00.000Z',
        message: `the recommendation stays in status for 1 pod(s) whose GPUs have no room: pod b on ${NODE}: 1 GPU: not enough free VRAM`,
      },
    ]);
    // The recommendation stays as the loop wrote it.
    expect(wl.status.autoscaling.recommendation.requests.vram).toBe('45Gi');
    // A pass with nothing new changes nothing more.
    await resizer(cluster).tick();
    expect(record('a').vramRequest).toBe(45 * GiB);
    expect(gpuVram().requested).toBe(75 * GiB);
    // Once the recommendation fits both, both hold it and the condition turns True.
    workload('40Gi');
    await resizer(cluster).tick();
    expect([record('a').vramRequest, record('b').vramRequest]).toEqual([40 * GiB, 40 * GiB]);
    expect(gpuVram().requested).toBe(80 * GiB);
    expect(api.getObject('tensorfusionworkloads', 'web', 'default')!.status.conditions[0]).toMatchObject({
      status: 'True',
      reason: 'Resized',
      message: 'every bound pod holds the recommended share',
    });
  });

  test("a DRA pod keeps its share (its claim's allocation cannot change): a Warning Event and the condition say so", async () => {
    // Bound by kube-scheduler with its claim: the extender holds no allocation for it.
    const pod = sharePod('d', SHARE, { [WORKLOAD_LABEL]: 'web' }) as K8sObject & { spec: object };
    api.put('pods', {
      ...pod,
      spec: { ...pod.spec, nodeName: NODE, resourceClaims: [{ name: 'tensor-fusion-gpu', resourceClaimTemplateName: 'tf-0123456789ab' }] },
    });
    await eventually(async () =>
      expect(
        podsInformer()
          .list()
          .map((p) => (p.spec as { nodeName?: string }).nodeName),
      ).toEqual([NODE]),
    );
    workload('40Gi');
    await resizer(clusterFor(api, 'controller')).tick();
    expect(api.listObjects('events').map((e) => [e.involvedObject.name, e.type, e.reason, e.message])).toEqual([
      [
        'd',
        'Warning',
        'ShareNotResized',
        'GPU share not resized in place (tensor-fusion.ai/tflops-request 10 -> 15, tensor-fusion.ai/tflops-limit 20 -> 25, tensor-fusion.ai/vram-request 30Gi -> 40Gi, tensor-fusion.ai/vram-limit 30Gi -> 40Gi): its pool delivers shares by DRA, and kube-scheduler allocated its ResourceClaim, whose allocation cannot change once made; recreate the pod to take the recommendation',
      ],
    ]);
    expect(api.getObject('tensorfusionworkloads', 'web', 'default')!.status.conditions).toEqual([
      {
        type: RESIZE_CONDITION,
        status: 'False',
        reason: 'DraClaim',
        lastTransitionTime: '2027-01-01T00:00:00.000Z',
        message: "the recommendation stays in status for 1 pod(s) of a DRA pool, whose claim's allocation cannot change once made: d",
      },
    ]);
    expect(api.getObject('pods', 'd', 'default')!.metadata.annotations[ALLOCATION_ANNOTATION]).toBeUndefined();
  });

  test("does nothing while this replica's extender is not the active one", async () => {
    await place('a');
    await eventually(async () => expect(podsInformer().list()[0]?.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeTruthy());
    workload('40Gi');
    await resizer(clusterFor(api, 'controller'), () => false).tick();
    expect(record('a').vramRequest).toBe(30 * GiB);
  });

  test('a failed patch gives the room back: the allocator holds the old share', async () => {
    const a = await place('a');
    await eventually(async () => expect(podsInformer().list()[0]?.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeTruthy());
    workload('40Gi');
    const real = clusterFor(api, 'controller');
    const failing = {
      ...real,
      get: real.get.bind(real),
      replaceStatus: real.replaceStatus.bind(real),
      recordEvent: real.recordEvent.bind(real),
      jsonPatch: async () => {
        throw new Error('boom');
      },
    } as unknown as Cluster;
    await resizer(failing).tick();
    expect(state.holding(a.metadata.uid!)).toMatchObject({ vramRequest: 30 * GiB, tflopsRequest: 10 });
    expect(gpuVram().requested).toBe(30 * GiB);
    expect(record('a').vramRequest).toBe(30 * GiB);
  });
});

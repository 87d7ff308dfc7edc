/**
 * The scheduler extender's filter, prioritize and bind against the API-server double: placement among
 * the scheduler's feasible nodes, typed reasons, reservations between filter and bind, the record in
 * the Binding, and what releases a share (a deleted or finished pod) and what does not (a terminating
 * pod, a copied record, a stalled watch).
 */
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, GPU_IDS_ANNOTATION, PLACEMENT_ANNOTATIONS } from '../../../lib/model/metadata-keys';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import type { Informer } from '../../../lib/runtime/kube/informer';
import { Extender, refusalListSpacingMs } from '../../../lib/runtime/extender/extender';
import type { ExtenderArgs } from '../../../lib/runtime/extender/protocol';
import { PlacementState } from '../../../lib/runtime/extender/placement-state';
import { LearnedMixes } from '../../../lib/allocator';
import type { ShareRequest } from '../../../lib/runtime/shared/share';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { eventually } from '../fixtures';
import { GiB, seedPool } from '../webhook/fixtures';
import { shareOf, sharePod, startExtender } from './fixtures';

const SHARE = shareOf(60 * GiB);
const NODES = ['p-node-0', 'p-node-1'];

let api: ApiServerDouble;
let informers: Informer<K8sObject>[];
let state: PlacementState;
let extender: Extender;

function podObj(name: string, share: ShareRequest | null = SHARE, extra: Record<string, unknown> = {}): K8sObject {
  return { ...sharePod(name, share), ...extra };
}

/** Creates the pod in the double and returns it with its uid. */
function put(pod: K8sObject): K8sObject {
  return api.put('pods', pod) as K8sObject;
}

function args(pod: K8sObject, nodes = NODES): ExtenderArgs {
  return { Pod: pod, NodeNames: nodes, Nodes: null };
}

/** A client of the double whose lists go through `through` (straight on by default), counted in `counter.lists`. */
function countingLists(through: <T>(next: () => Promise<T>) => Promise<T> = (next) => next()) {
  const cluster = clusterFor(api);
  const counter = { lists: 0 };
  const client = {
    ...cluster,
    bind: cluster.bind.bind(cluster),
    get: cluster.get.bind(cluster),
    list: ((...a: Parameters<typeof cluster.list>) => {
      counter.lists++;
      return through(() => cluster.list(...a));
    }) as typeof cluster.list,
  };
  return { client, counter };
}

async function place(name: string, share?: ShareRequest, nodes = NODES): Promise<{ pod: K8sObject; node?: string }> {
  const pod = put(podObj(name, share));
  const f = await extender.filter(args(pod, nodes));
  if (f.NodeNames.length !== 1) return { pod };
  const b = await extender.bind({ PodName: name, PodNamespace: 'default', PodUID: pod.metadata.uid!, Node: f.NodeNames[0] });
  expect(b.Error).toBe('');
  return { pod, node: f.NodeNames[0] };
}

beforeEach(async () => {
  api = await startApiServer({ bookmarkIntervalMs: 60_000 });
  seedPool(api, { name: 'p', nodes: 2, gpusPerNode: 1, vram: 80 * GiB, tflops: 100 });
  seedPool(api, { name: 'other', nodes: 1, gpusPerNode: 1 });
  ({ informers, state, extender } = await startExtender(api));
});

afterEach(async () => {
  await Promise.all(informers.map((i) => i.stop()));
  await api.stop();
});

describe('filter', () => {
  test('a pod without a share passes every node', async () => {
    const f = await extender.filter(args(put(podObj('plain', null))));
    expect(f).toEqual({ Nodes: null, NodeNames: NODES, FailedNodes: {}, FailedAndUnresolvableNodes: {}, Error: '' });
  });

  /** Gives the pool's nodes 4 CPUs each. */
  const fourCpuNodes = () => {
    for (const n of NODES) api.put('nodes', { ...api.getObject('nodes', n)!, status: { allocatable: { cpu: '4', memory: '16Gi' } } });
  };
  /** Creates a pod without a share that asks for 3 CPUs. */
  const cpuPod = (name: string) =>
    put({ ...podObj(name, null), spec: { containers: [{ name: 'main', image: 'x', resources: { requests: { cpu: '3' } } }] } });

  test("a pod without a share but with CPU, on nodes of one pool, is placed by the pool's mode and counted until its event comes", async () => {
    fourCpuNodes();
    await eventually(async () =>
      expect(
        state.current().choose({ id: 'probe', pool: 'p', qos: 'low', gpuCount: 0, tflopsRequest: 0, vramRequest: 0, cpu: 4000 }, NODES)
          .best,
      ).toBeDefined(),
    );
    const first = cpuPod('cpu-1');
    const f1 = await extender.filter(args(first));
    expect(f1.NodeNames).toHaveLength(1);
    expect(await extender.bind({ PodName: 'cpu-1', PodNamespace: 'default', PodUID: first.metadata.uid!, Node: f1.NodeNames[0] })).toEqual({
      Error: '',
    });
    // No record on a pod without a share, and its CPU is counted before the watch reports the bind.
    expect(api.getObject('pods', 'cpu-1', 'default')?.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeUndefined();
    const f2 = await extender.filter(args(cpuPod('cpu-2')));
    expect(f2.NodeNames).toEqual(NODES.filter((n) => n !== f1.NodeNames[0]));
    // Nodes of two pools, or of none: kube-scheduler's own choice.
    expect((await extender.filter(args(cpuPod('cpu-3'), [...NODES, 'other-node-0']))).NodeNames).toEqual([...NODES, 'other-node-0']);
  });

  test('a pod without a share bound here keeps its CPU counted through a rebuild of the state before its event comes', async () => {
    fourCpuNodes();
    const probe = { id: 'probe', pool: 'p', qos: 'low' as const, gpuCount: 0, tflopsRequest: 0, vramRequest: 0, cpu: 3000 };
    await eventually(async () => expect(state.current().choose({ ...probe, cpu: 4000 }, NODES).best).toBeDefined());
    // On the node the mode prefers, so that a lost count shows: the next pod would go there too.
    const preferred = state.current().choose(probe, NODES).best!;
    expect(api.stallWatches('pods')).toBeGreaterThan(0);
    const pod = cpuPod('cpu-1');
    expect(await extender.filter(args(pod, [preferred]))).toMatchObject({ NodeNames: [preferred] });
    expect(await extender.bind({ PodName: 'cpu-1', PodNamespace: 'default', PodUID: pod.metadata.uid!, Node: preferred })).toEqual({
      Error: '',
    });
    // A list made meanwhile (before a refusal, or after a pause) rebuilds the allocator; the stalled cache has not seen the bind.
    state.resetFromPods([], Date.now());
    expect(state.current().choose(probe, NODES).best).toBe(NODES.find((n) => n !== preferred));
  });

  test('narrows to the node the placement mode chooses and reserves the share there', async () => {
    const first = await extender.filter(args(put(podObj('a'))));
    expect(first.NodeNames).toHaveLength(1);
    // The reservation counts before any bind: the second pod goes to the other node.
    const second = await extender.filter(args(put(podObj('b'))));
    expect(second.NodeNames).toHaveLength(1);
    expect(second.NodeNames[0]).not.toBe(first.NodeNames[0]);
  });

  test('nodes that cannot take the share get a typed reason, unresolvable by preemption', async () => {
    await place('a');
    await place('b');
    const f = await extender.filter(args(put(podObj('c')), [...NODES, 'other-node-0', 'plain-node']));
    expect(f.NodeNames).toEqual([]);
    expect(f.FailedAndUnresolvableNodes).toEqual({
      'p-node-0': 'not enough free VRAM on any GPU',
      'p-node-1': 'not enough free VRAM on any GPU',
      'other-node-0': 'no GPUs of pool "p"',
      'plain-node': 'no GPUs of pool "p"',
    });
  });

  test('CPU taken on a node by other pods keeps the share off it, as the scheduler would', async () => {
    const node = api.getObject('nodes', 'p-node-0')!;
    api.put('nodes', { ...node, status: { allocatable: { cpu: '4', memory: '16Gi' } } });
    api.put('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'busy', namespace: 'default' },
      spec: { nodeName: 'p-node-0', containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: '3500m' } } }] },
    });
    const pod = put(podObj('needs-cpu'));
    const withCpu = { ...pod, spec: { containers: [{ name: 'main', image: 'x', resources: { requests: { cpu: '1' } } }] } };
    await eventually(async () => {
      expect((await extender.filter(args(withCpu as K8sObject))).NodeNames).toEqual(['p-node-1']);
      // Reasons are given when no node can take the share (a placed pod shows none).
      const f = await extender.filter(args(withCpu as K8sObject, ['p-node-0']));
      expect(f.NodeNames).toEqual([]);
      expect(f.FailedAndUnresolvableNodes).toEqual({ 'p-node-0': 'not enough CPU or memory for the GPU share' });
    });
  });

  test('a GPU model the pool lacks, and more GPUs than a node has, say so', async () => {
    const model = await extender.filter(args(put(podObj('m', { ...SHARE, gpuModel: 'H100' }))));
    expect(model.FailedAndUnresolvableNodes['p-node-0']).toBe('no H100 GPU');
    const many = await extender.filter(args(put(podObj('k', { ...SHARE, gpuCount: 2 }))));
    expect(many.FailedAndUnresolvableNodes['p-node-0']).toBe('fewer than 2 GPUs with room for the share');
  });

  test('filtering the same pod again moves its reservation instead of holding two', async () => {
    const pod = put(podObj('again'));
    await extender.filter(args(pod));
    await extender.filter(args(pod));
    expect(state.stats()).toEqual({ held: 0, reserved: 1 });
  });
});

describe('state', () => {
  test('status the controller rewrites after each placement keeps the allocator; a capacity change rebuilds it', async () => {
    const before = state.current();
    const gpu = api.getObject('gpus', 'p-node-0-gpu-0')!;
    api.put('gpus', { ...gpu, status: { ...gpu.status, available: { tflops: '50', vram: '1Gi' } } });
    await new Promise((r) => setTimeout(r, 300));
    expect(state.current()).toBe(before);
    api.put('gpus', { ...gpu, status: { ...gpu.status, capacity: { tflops: '100', vram: String(40 * GiB) } } });
    await eventually(() => expect(state.current()).not.toBe(before));
  });
});

describe('state rebuilt from a list', () => {
  test('a bind committed after the LIST was sent survives the reset; one committed before it follows the list', async () => {
    const { pod } = await place('late');
    const uid = pod.metadata.uid!;
    // A list sent before the bind does not show its record.
    state.resetFromPods([], Date.now() - 60_000);
    expect(state.holding(uid)).toBeDefined();
    // A list sent after the bind is the truth: the pod is not in it, so it holds nothing.
    state.resetFromPods([], Date.now() + 1);
    expect(state.holding(uid)).toBeUndefined();
  });

  test('a pod deleted or finished while a LIST was under way stays released: the list, sent before, still shows its share', async () => {
    const deleted = await place('deleted');
    const finished = await place('finished');
    await eventually(() => expect(informers[3].get('default/finished')?.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeDefined());
    const listedAt = Date.now();
    const list = api.listObjects('pods') as K8sObject[];
    api.remove('pods', 'deleted', 'default');
    api.put('pods', { ...api.getObject('pods', 'finished', 'default')!, status: { phase: 'Succeeded' } });
    await eventually(() => expect(state.stats().held).toBe(0));
    state.resetFromPods(list, listedAt);
    expect(state.holding(deleted.pod.metadata.uid!)).toBeUndefined();
    expect(state.holding(finished.pod.metadata.uid!)).toBeUndefined();
    // Both GPUs are free again.
    expect((await extender.filter(args(put(podObj('next')), [deleted.node!]))).NodeNames).toEqual([deleted.node]);
    expect((await extender.filter(args(put(podObj('after')), [finished.node!]))).NodeNames).toEqual([finished.node]);
  });

  test('a record that arrived by watch while a LIST was under way survives it (another replica bound the pod)', async () => {
    const listedAt = Date.now();
    const list = api.listObjects('pods') as K8sObject[];
    // Bound elsewhere: the record comes with the pod, not from a bind of this extender.
    const other = new Extender({
      state: new PlacementState({
        sources: { nodes: informers[4], pools: informers[0], gpuNodes: informers[1], gpus: informers[2], pods: informers[3] } as never,
      }),
      cluster: clusterFor(api),
      pods: informers[3],
    });
    const pod = put(podObj('theirs'));
    const f = await other.filter(args(pod));
    expect(await other.bind({ PodName: 'theirs', PodNamespace: 'default', PodUID: pod.metadata.uid!, Node: f.NodeNames[0] })).toEqual({
      Error: '',
    });
    await eventually(() => expect(state.holding(pod.metadata.uid!)?.node).toBe(f.NodeNames[0]));
    state.resetFromPods(list, listedAt);
    expect(state.holding(pod.metadata.uid!)?.node).toBe(f.NodeNames[0]);
  });
});

describe('the learned mix', () => {
  test('counts each pod once: a refused one too, not its retries, its record or a rebuild; a share found held counts', async () => {
    const earlier = await place('earlier');
    await eventually(() => expect(informers[3].get('default/earlier')?.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeDefined());
    // A second replica's state, learning into `mixes`: its first build finds `earlier` held.
    const mixes = new LearnedMixes();
    const sources = { nodes: informers[4], pools: informers[0], gpuNodes: informers[1], gpus: informers[2], pods: informers[3] };
    const other = new PlacementState({ sources: sources as never, mixes });
    const ext = new Extender({ state: other, cluster: clusterFor(api), pods: informers[3] });
    const big = put(podObj('big', shareOf(100 * GiB)));
    for (let i = 0; i < 3; i++) expect((await ext.filter(args(big))).NodeNames).toEqual([]);
    expect(mixes.seen('p')).toBe(2);
    const mine = put(podObj('mine'));
    const free = NODES.filter((n) => n !== earlier.node);
    const [node] = (await ext.filter(args(mine, free))).NodeNames;
    expect(await ext.bind({ PodName: 'mine', PodNamespace: 'default', PodUID: mine.metadata.uid!, Node: node })).toEqual({ Error: '' });
    await eventually(() => expect(informers[3].get('default/mine')?.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeDefined());
    // A capacity change rebuilds the allocator, which restores both shares.
    const before = other.current();
    const gpu = api.getObject('gpus', 'p-node-0-gpu-0')!;
    api.put('gpus', { ...gpu, status: { ...gpu.status, capacity: { tflops: '100', vram: String(90 * GiB) } } });
    await eventually(() => expect(other.current()).not.toBe(before));
    expect(mixes.seen('p')).toBe(3);
  });
});

describe('prioritize', () => {
  test('scores the chosen node 10 and the others 0', async () => {
    const pod = put(podObj('p1'));
    const f = await extender.filter(args(pod));
    const scores = await extender.prioritize(args(pod));
    expect(scores).toEqual(NODES.map((n) => ({ Host: n, Score: n === f.NodeNames[0] ? 10 : 0 })));
  });
});

describe('bind', () => {
  test('binds with the allocation, keyed by pod UID, and the downward-API values in the Binding', async () => {
    const { pod, node } = await place('bound');
    const live = api.getObject('pods', 'bound', 'default')!;
    expect(live.spec.nodeName).toBe(node);
    const ann = live.metadata.annotations;
    const a = JSON.parse(ann[ALLOCATION_ANNOTATION]);
    expect(a).toMatchObject({ id: pod.metadata.uid, pool: 'p', node, tflopsRequest: 10, tflopsLimit: 20, vramRequest: 60 * GiB });
    expect(ann[GPU_IDS_ANNOTATION]).toBe(`${node}-gpu-0`);
    expect(ann[PLACEMENT_ANNOTATIONS.allocationId]).toBe(pod.metadata.uid);
    expect(ann[PLACEMENT_ANNOTATIONS.visibleDevices]).toMatch(/^GPU-p-\d-0$/);
    expect(ann[PLACEMENT_ANNOTATIONS.mpsMemoryLimit]).toBe('0=61440M');
    expect(ann[PLACEMENT_ANNOTATIONS.mpsThreadPercentage]).toBe('20');
  });

  test('a bind for another node than filter chose places the share on that node', async () => {
    const pod = put(podObj('moved'));
    const f = await extender.filter(args(pod));
    const other = NODES.find((n) => n !== f.NodeNames[0])!;
    expect((await extender.bind({ PodName: 'moved', PodNamespace: 'default', PodUID: pod.metadata.uid!, Node: other })).Error).toBe('');
    expect(JSON.parse(api.getObject('pods', 'moved', 'default')!.metadata.annotations[ALLOCATION_ANNOTATION]).node).toBe(other);
    expect(state.stats()).toEqual({ held: 1, reserved: 0 });
  });

  test('a failed bind (the pod is gone) drops the reservation and reports the API error', async () => {
    const pod = put(podObj('gone'));
    const f = await extender.filter(args(pod));
    api.remove('pods', 'gone', 'default');
    const b = await extender.bind({ PodName: 'gone', PodNamespace: 'default', PodUID: pod.metadata.uid!, Node: f.NodeNames[0] });
    expect(b.Error).toMatch(/404|not found/i);
    expect(state.stats().reserved).toBe(0);
  });
});

describe('what releases a share', () => {
  test('a deleted pod releases it; a terminating one keeps it; a finished one releases it', async () => {
    await place('a');
    await place('b');
    const full = async () =>
      (await extender.filter(args(put(podObj(`probe-${Math.random().toString(36).slice(2, 8)}`))))).NodeNames.length === 0;
    expect(await full()).toBe(true);
    // Terminating: deletionTimestamp set, still there.
    const a = api.getObject('pods', 'a', 'default')!;
    api.put('pods', { ...a, metadata: { ...a.metadata, deletionTimestamp: new Date().toISOString() } });
    await new Promise((r) => setTimeout(r, 300));
    expect(await full()).toBe(true);
    // Succeeded: released.
    const b = api.getObject('pods', 'b', 'default')!;
    api.put('pods', { ...b, status: { phase: 'Succeeded' } });
    await eventually(async () => expect(state.holding(b.metadata.uid)).toBeUndefined());
    // Gone: released.
    api.remove('pods', 'a', 'default');
    await eventually(async () => expect(state.holding(a.metadata.uid)).toBeUndefined());
  });

  test('a record copied from another pod holds nothing', async () => {
    const { pod } = await place('original');
    const record = api.getObject('pods', 'original', 'default')!.metadata.annotations;
    const copy = put({ ...podObj('copy'), metadata: { ...podObj('copy').metadata, annotations: { ...record } } });
    await new Promise((r) => setTimeout(r, 300));
    expect(state.holding(copy.metadata.uid!)).toBeUndefined();
    expect(state.holding(pod.metadata.uid!)).toBeDefined();
  });

  test('records on a pod without the opt-in label "true" count for nothing: its share is not placed, its allocation holds nothing', async () => {
    const { pod } = await place('original');
    const record = api.getObject('pods', 'original', 'default')!.metadata.annotations;
    for (const labels of [{}, { [ENABLED_LABEL]: 'false' }] as Record<string, string>[]) {
      const name = `unlabelled-${Object.keys(labels).length}`;
      // Its own record (the id is its UID) and a share: neither was checked by the webhook or the policy.
      const copy = put({ ...podObj(name), metadata: { ...podObj(name).metadata, labels } });
      const own = { ...record, [ALLOCATION_ANNOTATION]: record[ALLOCATION_ANNOTATION].replace(pod.metadata.uid!, copy.metadata.uid!) };
      api.put('pods', { ...copy, metadata: { ...copy.metadata, annotations: own } });
      // Placed as a pod without a share: every node passes, and nothing is reserved.
      expect((await extender.filter(args(api.getObject('pods', name, 'default')!))).NodeNames).toEqual(NODES);
      await new Promise((r) => setTimeout(r, 300));
      expect(state.holding(copy.metadata.uid!)).toBeUndefined();
    }
    expect(state.holding(pod.metadata.uid!)).toBeDefined();
  });

  test('a stalled pod watch releases nothing; after a pause the state is rebuilt from a fresh list', async () => {
    const { pod } = await place('kept');
    expect(api.stallWatches('pods')).toBeGreaterThan(0);
    api.remove('pods', 'kept', 'default');
    await new Promise((r) => setTimeout(r, 500));
    // The stalled cache still shows the pod, and nothing releases its share on a timer.
    expect(state.holding(pod.metadata.uid!)).toBeDefined();
    // A call after an idle pause re-lists: the deleted pod's share is gone.
    const idle = new Extender({ state, cluster: clusterFor(api), pods: informers[3], resyncAfterIdleMs: 0 });
    await idle.filter(args(put(podObj('next'))));
    expect(state.holding(pod.metadata.uid!)).toBeUndefined();
  });

  test("after a pause the pods are listed again unless this replica's scheduler has held the Lease since the last list", async () => {
    const { client: counting, counter } = countingLists();
    let tenure: () => Promise<string | undefined> = async () => 'ctl-0_a/3/t1';
    // Every call comes after a pause: the clock moves 10 s at each reading.
    let t = Date.now();
    const idle = new Extender({ state, cluster: counting, pods: informers[3], now: () => (t += 10_000), schedulerTenure: () => tenure() });
    // Small shares: no call is refused (a refusal lists on its own).
    const call = async (name: string) =>
      expect((await idle.filter(args(put(podObj(name, { ...SHARE, tflopsRequest: 1, vramRequest: GiB }))))).NodeNames).toHaveLength(1);
    // [tenure after the call, lists so far]: a tenure vouches only for a list made under it.
    const steps: [string, () => Promise<string | undefined>, number][] = [
      ['first call', async () => 'ctl-0_a/3/t1', 1],
      ['same tenure', async () => 'ctl-0_a/3/t1', 1],
      ['another replica held it in between', async () => 'ctl-0_a/5/t2', 2],
      ['same tenure again', async () => 'ctl-0_a/5/t2', 2],
      ['this replica does not hold it', async () => undefined, 3],
      ['still not', async () => undefined, 4],
      ['held again: the list after a pause is not vouched for by a tenure read before it', async () => 'ctl-0_b/6/t3', 5],
      [
        'the Lease cannot be read',
        async () => {
          throw new Error('connection refused');
        },
        6,
      ],
      ['held: the previous call had no tenure to compare', async () => 'ctl-0_b/6/t3', 7],
      ['same tenure', async () => 'ctl-0_b/6/t3', 7],
    ];
    for (const [i, [step, next, expected]] of steps.entries()) {
      tenure = next;
      await call(`burst-${i}`);
      expect({ step, lists: counter.lists }).toEqual({ step, lists: expected });
    }
  });

  test('with the Lease held throughout, a deleted pod whose event has not arrived keeps its share until it does; a refusal still lists first', async () => {
    const { pod: kept, node } = await place('kept');
    await place('other');
    let t = Date.now();
    const idle = new Extender({
      state,
      cluster: clusterFor(api),
      pods: informers[3],
      now: () => (t += 10_000),
      schedulerTenure: async () => 'ctl-0_a/1/t',
    });
    await idle.filter(args(put(podObj('first', { ...SHARE, vramRequest: 5 * GiB }))));
    expect(api.stallWatches('pods')).toBeGreaterThan(0);
    api.remove('pods', 'kept', 'default');
    // Counted, as between any two calls: the stalled watch has not said the pod is gone.
    expect((await idle.filter(args(put(podObj('small', { ...SHARE, vramRequest: 5 * GiB }))))).NodeNames).toHaveLength(1);
    expect(state.holding(kept.metadata.uid!)).toBeDefined();
    // Both GPUs are full for 60 GiB: before refusing, the extender lists, and finds kept's room.
    expect((await idle.filter(args(put(podObj('big'))))).NodeNames).toEqual([node]);
    expect(state.holding(kept.metadata.uid!)).toBeUndefined();
  });
});

describe('the list before a refusal', () => {
  /**
   * Both GPUs full for the 60 GiB of SHARE, and an extender whose lists go through `list`, on a clock
   * each `refuse(at)` sets: every call is a refusal, and none comes after a pause.
   */
  async function refusing(list: <T>(next: () => Promise<T>) => Promise<T>) {
    await place('a');
    await place('b');
    const { client, counter } = countingLists(list);
    let t = 0;
    const ext = new Extender({ state, cluster: client, pods: informers[3], now: () => t, resyncAfterIdleMs: Infinity });
    return {
      /** A pod that does not fit, filtered at `at` ms: its nodes and the lists so far. */
      refuse: async (at: number) => {
        t = at;
        const f = await ext.filter(args(put(podObj(`big-${at}`))));
        return { nodes: f.NodeNames, lists: counter.lists };
      },
    };
  }

  test('is spaced by twenty times what the last list took, and by a second at least', async () => {
    let listMs = 0;
    const { refuse } = await refusing(async (next) => {
      await new Promise((r) => setTimeout(r, listMs));
      return next();
    });
    // However fast the list, the next one is a second later at the soonest.
    expect(await refuse(0)).toEqual({ nodes: [], lists: 1 });
    expect(await refuse(900)).toEqual({ nodes: [], lists: 1 });
    expect(await refuse(5_000)).toEqual({ nodes: [], lists: 2 });
    // A list of 200 ms or more: none for 4 s or more after it.
    listMs = 200;
    expect(await refuse(10_000)).toEqual({ nodes: [], lists: 3 });
    expect(await refuse(13_500)).toEqual({ nodes: [], lists: 3 });
    expect(await refuse(60_000)).toEqual({ nodes: [], lists: 4 });
  });

  test('a failed list spaces the next one too', async () => {
    const { refuse } = await refusing(async () => {
      throw new Error('the server is currently unable to handle the request');
    });
    await expect(refuse(0)).rejects.toThrow('unable to handle');
    expect(await refuse(500)).toEqual({ nodes: [], lists: 1 });
  });

  test.each([
    [0, 1_000],
    [10, 1_000],
    [50, 1_000],
    [200, 4_000],
    [2_500, 50_000],
    [3_000, 60_000],
    [30_000, 60_000],
  ])('after a list of %i ms, the next waits %i ms', (lastMs, spacing) => {
    expect(refusalListSpacingMs(lastMs)).toBe(spacing);
  });
});

describe('releases found by a fresh list', () => {
  test("are announced: the pod's delete event, when it comes, finds nothing left to release", async () => {
    const released: string[] = [];
    const [pools, gpuNodes, gpus, pods, nodes] = informers;
    const watched = new PlacementState({ sources: { nodes, pools, gpuNodes, gpus, pods } as never, onRoom: (n) => released.push(n) });
    watched.resetFromCaches();
    const { pod, node } = await place('gone');
    await eventually(() => expect(watched.holding(pod.metadata.uid!)?.node).toBe(node));
    expect(api.stallWatches('pods')).toBeGreaterThan(0);
    api.remove('pods', 'gone', 'default');
    watched.resetFromPods(api.listObjects('pods') as K8sObject[], Date.now());
    expect(watched.holding(pod.metadata.uid!)).toBeUndefined();
    expect(released).toEqual([node]);
  });

  test('a dropped reservation (its bind failed) is announced too: a pod may have been turned away for that room', async () => {
    const released: string[] = [];
    const [pools, gpuNodes, gpus, pods, nodes] = informers;
    const watched = new PlacementState({ sources: { nodes, pools, gpuNodes, gpus, pods } as never, onRoom: (n) => released.push(n) });
    watched.resetFromCaches();
    const r = watched.reserve({ id: 'uid-r', pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, vramRequest: GiB }, 'p-node-1');
    expect(r.ok).toBe(true);
    watched.cancel('uid-r');
    expect(released).toEqual(['p-node-1']);
  });
});

describe('pods turned away', () => {
  const BIG = { ...SHARE, vramRequest: 70 * GiB, vramLimit: 70 * GiB };

  test('are remembered until placed: room is announced only while one may wait', async () => {
    const { node } = await place('fits');
    expect(extender.hasWaiting()).toBe(false);
    const big = put(podObj('big', BIG));
    expect((await extender.filter(args(big, [node!]))).NodeNames).toEqual([]);
    expect(extender.hasWaiting()).toBe(true);
    const other = NODES.find((n) => n !== node)!;
    expect((await extender.filter(args(big, [other]))).NodeNames).toEqual([other]);
    expect(extender.hasWaiting()).toBe(false);
  });

  test('room that reached the state but no announcement is found by the sweep, on a node kube-scheduler offered the pod, once', async () => {
    const a = await place('a');
    const b = await place('b');
    // Offered only the node of b: room on a's node is no use to it.
    const waiting = put(podObj('waiting'));
    expect((await extender.filter(args(waiting, [b.node!]))).NodeNames).toEqual([]);
    await eventually(() => expect(informers[3].get('default/waiting')).toBeDefined());
    expect(extender.sweep()).toBeUndefined();
    // This state has no onRoom: the releases below are announced by nobody.
    api.remove('pods', 'a', 'default');
    await eventually(() => expect(state.holding(a.pod.metadata.uid!)).toBeUndefined());
    expect(extender.sweep()).toBeUndefined();
    api.remove('pods', 'b', 'default');
    await eventually(() => expect(state.holding(b.pod.metadata.uid!)).toBeUndefined());
    expect(extender.sweep()).toBe(b.node);
    // The announcement retried every waiting pod: nothing more until one is turned away again.
    expect(extender.sweep()).toBeUndefined();
    expect((await extender.filter(args(waiting, [b.node!]))).NodeNames).toEqual([b.node]);
    expect(extender.hasWaiting()).toBe(false);
  });

  test('a pod turned away that is deleted, bound elsewhere or terminating is dropped by the sweep, its room not announced', async () => {
    await place('a');
    await place('b');
    const gone = put(podObj('gone'));
    const bound = put(podObj('bound'));
    const terminating = put(podObj('terminating'));
    for (const p of [gone, bound, terminating]) expect((await extender.filter(args(p))).NodeNames).toEqual([]);
    await eventually(() =>
      expect(informers[3].list().filter((p) => ['gone', 'bound', 'terminating'].includes(p.metadata.name!))).toHaveLength(3),
    );
    api.remove('pods', 'gone', 'default');
    api.put('pods', { ...bound, spec: { ...(bound.spec as object), nodeName: 'elsewhere' } });
    api.put('pods', { ...terminating, metadata: { ...terminating.metadata, deletionTimestamp: new Date().toISOString() } });
    await eventually(() => {
      const pods = informers[3];
      expect(pods.get('default/gone')).toBeUndefined();
      expect((pods.get('default/bound')?.spec as { nodeName?: string }).nodeName).toBe('elsewhere');
      expect(pods.get('default/terminating')?.metadata.deletionTimestamp).toBeDefined();
    });
    api.remove('pods', 'a', 'default');
    await eventually(() => expect(state.stats().held).toBe(1));
    expect(extender.sweep()).toBeUndefined();
    expect(extender.hasWaiting()).toBe(false);
  });
});

describe('room kube-scheduler cannot see is announced', () => {
  let room: string[];
  let watched: PlacementState;

  beforeEach(() => {
    room = [];
    const [pools, gpuNodes, gpus, pods, nodes] = informers;
    watched = new PlacementState({ sources: { nodes, pools, gpuNodes, gpus, pods } as never, onRoom: (n) => room.push(n) });
    watched.resetFromCaches();
  });

  test('a GPU added or brought up, and a GPU node joining a pool, name their node; a GPU status write that placement does not read names none', async () => {
    seedPool(api, { name: 'new', nodes: 1, gpusPerNode: 1 });
    await eventually(() => expect(room).toEqual(expect.arrayContaining(['new-node-0'])));
    room.length = 0;
    const gpu = api.getObject('gpus', 'p-node-0-gpu-0')!;
    api.put('gpus', { ...gpu, status: { ...gpu.status, available: { tflops: '1', vram: '1' } } });
    api.put('gpus', {
      ...gpu,
      metadata: { ...gpu.metadata, name: 'p-node-0-gpu-9' },
      status: { ...gpu.status, phase: 'Pending', index: 9 },
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(room).toEqual([]);
    const pending = api.getObject('gpus', 'p-node-0-gpu-9')!;
    api.put('gpus', { ...pending, status: { ...pending.status, phase: 'Running' } });
    await eventually(() => expect(room).toEqual(['p-node-0']));
  });

  test("a pool's placement settings changed name one of its nodes", async () => {
    const pool = api.getObject('gpupools', 'p')!;
    api.put('gpupools', { ...pool, spec: { ...pool.spec, capacityConfig: { oversubscription: { tflopsOversellRatio: 300 } } } });
    await eventually(() => expect(room).toHaveLength(1));
    expect(NODES).toContain(room[0]);
  });

  test('a pod without a share leaving names its node: its CPU is room too', async () => {
    put({
      ...podObj('plain-cpu', null),
      spec: { nodeName: 'p-node-1', containers: [{ name: 'main', image: 'x', resources: { requests: { cpu: '1' } } }] },
    });
    api.put('nodes', { ...api.getObject('nodes', 'p-node-1')!, status: { allocatable: { cpu: '4', memory: '16Gi' } } });
    await eventually(() =>
      expect(
        watched
          .current()
          .choose({ id: 'probe', pool: 'p', qos: 'low', gpuCount: 0, tflopsRequest: 0, vramRequest: 0, cpu: 3500 }, ['p-node-1']).best,
      ).toBeUndefined(),
    );
    room.length = 0;
    api.remove('pods', 'plain-cpu', 'default');
    await eventually(() => expect(room).toEqual(['p-node-1']));
  });

  test('a pod deleted between filter and bind names the node of its reservation', async () => {
    const pod = put(podObj('reserved-then-gone'));
    await eventually(() => expect(watched.current()).toBeDefined());
    expect(
      watched.reserve({ id: pod.metadata.uid!, pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, vramRequest: GiB }, 'p-node-1').ok,
    ).toBe(true);
    room.length = 0;
    api.remove('pods', 'reserved-then-gone', 'default');
    await eventually(() => expect(room).toEqual(['p-node-1']));
    expect(watched.isReserved(pod.metadata.uid!)).toBe(false);
  });

  test('a reservation whose bind never comes expires on time and names its node, with no call to expire it', async () => {
    const [pools, gpuNodes, gpus, pods, nodes] = informers;
    const expiring: string[] = [];
    const short = new PlacementState({
      sources: { nodes, pools, gpuNodes, gpus, pods } as never,
      reservationTtlMs: 50,
      onRoom: (n) => expiring.push(n),
    });
    short.resetFromCaches();
    expect(
      short.reserve({ id: 'uid-orphan', pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, vramRequest: GiB }, 'p-node-0').ok,
    ).toBe(true);
    await eventually(() => expect(expiring).toEqual(['p-node-0']));
    expect(short.isReserved('uid-orphan')).toBe(false);
  });

  test('a share resized down names its node; one resized up does not', async () => {
    const { pod, node } = await place('resized');
    await eventually(() => expect(watched.holding(pod.metadata.uid!)?.node).toBe(node));
    room.length = 0;
    expect(watched.resize(pod.metadata.uid!, { tflopsRequest: 20, tflopsLimit: 40, vramRequest: 60 * GiB, vramLimit: 60 * GiB })?.ok).toBe(
      true,
    );
    expect(room).toEqual([]);
    expect(watched.resize(pod.metadata.uid!, { tflopsRequest: 5, tflopsLimit: 40, vramRequest: 60 * GiB, vramLimit: 60 * GiB })?.ok).toBe(
      true,
    );
    expect(room).toEqual([node]);
  });
});

describe('upstream keys and several inject-containers', () => {
  test('gpu-indices: the share goes only on GPUs of those device indices', async () => {
    seedPool(api, { name: 'q', nodes: 1, gpusPerNode: 4, vram: 80 * GiB, tflops: 100 });
    await eventually(() => expect(state.gpus().size).toBe(7));
    const share: ShareRequest = { ...SHARE, pool: 'q', gpuCount: 2, gpuIndices: [1, 3] };
    const { node } = await place('pinned', share, ['q-node-0']);
    expect(node).toBe('q-node-0');
    expect(api.getObject('pods', 'pinned', 'default')!.metadata.annotations[GPU_IDS_ANNOTATION]).toBe('q-node-0-gpu-1,q-node-0-gpu-3');
    // Those two are now full of VRAM (60 of 80 GiB each): another share pinned to them does not fit, one pinned elsewhere does.
    const f = await extender.filter(args(put(podObj('again', { ...share, gpuCount: 1, gpuIndices: [3] })), ['q-node-0']));
    expect(f.NodeNames).toEqual([]);
    expect((await place('elsewhere', { ...share, gpuCount: 1, gpuIndices: [0] }, ['q-node-0'])).node).toBe('q-node-0');
  });

  test('two inject-containers each get half of the MPS limits', async () => {
    await place('two', { ...SHARE, containers: 2 });
    const ann = api.getObject('pods', 'two', 'default')!.metadata.annotations;
    expect(ann[PLACEMENT_ANNOTATIONS.mpsMemoryLimit]).toBe('0=30720M');
    expect(ann[PLACEMENT_ANNOTATIONS.mpsThreadPercentage]).toBe('10');
  });
});

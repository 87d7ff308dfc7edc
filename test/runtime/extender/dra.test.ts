/**
 * DRA pods at the extender (their share's GPU is chosen by kube-scheduler's allocator, in the claim):
 * every node kube-scheduler hands over passes, no GPU is recorded at bind, and the namespace quota
 * counts them as it counts device-plugin shares, with the same messages.
 */
import { API_VERSION } from '../../../lib/model/group';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import type { Cluster, K8sObject } from '../../../lib/runtime/kube/cluster';
import type { Informer } from '../../../lib/runtime/kube/informer';
import { Extender } from '../../../lib/runtime/extender/extender';
import type { PlacementState } from '../../../lib/runtime/extender/placement-state';
import { MAX_EXTENDER_PRIORITY } from '../../../lib/runtime/extender/protocol';
import { encodeShare, ShareRequest } from '../../../lib/runtime/shared/share';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { eventually } from '../fixtures';
import { GiB, seedPool } from '../webhook/fixtures';
import { startExtender } from './fixtures';
import { allocatedClaim } from '../../support/dra-claim';

/** The claim kube-scheduler's allocator gave pod `pod`: `tflops` of `node`'s GPU 0 (unallocated: none). */
function claim(pod: string, node: string | undefined, tflops = '60', podUid = `uid-${pod}`): K8sObject {
  const at = node === undefined ? undefined : { node, index: 0, consumed: { tflops, memory: '8Gi' } };
  return api.put(
    'resourceclaims',
    allocatedClaim({ name: `${pod}-gpu`, namespace: 'ml', pod: { name: pod, uid: podUid }, at }),
  ) as K8sObject;
}

const SHARE: ShareRequest = { pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, tflopsLimit: 20, vramRequest: GiB, vramLimit: GiB };
// Three nodes, though the pool's GPU objects are on two: DRA nodes need none of ours.
const NODES = ['p-node-0', 'p-node-1', 'dra-only'];

let api: ApiServerDouble;
let informers: Informer<K8sObject>[];
let state: PlacementState;
let extender: Extender;

function putPod(name: string, namespace = 'ml'): K8sObject {
  return api.put('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { [ENABLED_LABEL]: 'true' }, annotations: { [SHARE_ANNOTATION]: encodeShare(SHARE) } },
    spec: {
      containers: [{ name: 'main', image: 'x', resources: { claims: [{ name: 'tensor-fusion-gpu' }] } }],
      resourceClaims: [{ name: 'tensor-fusion-gpu', resourceClaimTemplateName: 'tf-000000000000' }],
    },
  }) as K8sObject;
}

async function place(name: string, namespace = 'ml'): Promise<{ pod: K8sObject; nodes: string[]; failed: Record<string, string> }> {
  const pod = putPod(name, namespace);
  const f = await extender.filter({ Pod: pod, NodeNames: NODES, Nodes: null });
  if (f.NodeNames.length > 0) {
    const b = await extender.bind({ PodName: name, PodNamespace: namespace, PodUID: pod.metadata.uid!, Node: f.NodeNames[1] });
    expect(b.Error).toBe('');
  }
  return { pod, nodes: f.NodeNames, failed: f.FailedAndUnresolvableNodes };
}

/** Sets the quota of `ml` to `tflops` TFLOPS requested, and waits until the extender's state enforces it. */
async function setQuota(tflops: number): Promise<void> {
  api.put('gpuresourcequotas', {
    apiVersion: API_VERSION,
    kind: 'GPUResourceQuota',
    metadata: { name: 'team-a', namespace: 'ml' },
    spec: { total: { requests: { tflops: String(tflops) } } },
  });
  await eventually(() =>
    expect(
      state.quotaRefusal('ml', { id: 'x', pool: 'p', qos: 'medium', gpuCount: tflops / 10 + 1, tflopsRequest: 10, vramRequest: 1 }),
    ).toBeDefined(),
  );
}

beforeEach(async () => {
  api = await startApiServer({ bookmarkIntervalMs: 60_000 });
  seedPool(api, { name: 'p', nodes: 2, gpusPerNode: 1, vram: 80 * GiB, tflops: 100 });
  api.put('gpuresourcequotas', {
    apiVersion: API_VERSION,
    kind: 'GPUResourceQuota',
    metadata: { name: 'team-a', namespace: 'ml' },
    spec: { total: { requests: { tflops: '30' } } },
  });
  ({ informers, state, extender } = await startExtender(api));
});

afterEach(async () => {
  await Promise.all(informers.map((i) => i.stop()));
  await api.stop();
});

test('passes every node it is given, and binds with no GPU record', async () => {
  const { nodes } = await place('a');
  expect(nodes).toEqual(NODES);
  const bound = api.getObject('pods', 'a', 'ml')!;
  expect(bound.spec.nodeName).toBe('p-node-1');
  expect(bound.metadata.annotations[ALLOCATION_ANNOTATION]).toBeUndefined();
  expect(state.stats()).toEqual({ held: 0, reserved: 0 });
});

test('counts DRA shares in the namespace quota with the same message, frees them when the pod goes', async () => {
  for (const n of ['a', 'b', 'c']) expect((await place(n)).nodes).toEqual(NODES);
  const refused = await place('d');
  const reason = 'namespace "ml" would use 40 of 30 TFLOPS requested (GPUResourceQuota "team-a")';
  expect(refused.failed).toEqual(Object.fromEntries(NODES.map((n) => [n, reason])));
  expect(state.quotaUsed('ml')).toMatchObject({ 'requests.tflops': 30_000, workers: 3 });
  expect((await place('elsewhere', 'other')).nodes).toEqual(NODES);
  api.remove('pods', 'a', 'ml');
  await eventually(() => expect(state.quotaUsed('ml')).toMatchObject({ 'requests.tflops': 20_000, workers: 2 }), 5_000);
  expect((await place('e')).nodes).toEqual(NODES);
});

test('a reservation counts before its bind, and a list after a failover keeps the bound ones', async () => {
  const [first, second] = [putPod('first'), putPod('second'), putPod('third')].slice(0, 2);
  await setQuota(10);
  const answers = await Promise.all([first, second].map((p) => extender.filter({ Pod: p, NodeNames: NODES, Nodes: null })));
  expect(answers.map((a) => a.NodeNames.length).sort()).toEqual([0, 3]);
  const winner = [first, second][answers.findIndex((a) => a.NodeNames.length === 3)];
  await extender.bind({ PodName: winner.metadata.name!, PodNamespace: 'ml', PodUID: winner.metadata.uid!, Node: 'dra-only' });
  await eventually(() => expect(api.getObject('pods', winner.metadata.name!, 'ml')!.spec.nodeName).toBe('dra-only'));
  const pods = api.listObjects('pods') as K8sObject[];
  state.resetFromPods(pods, Date.now());
  expect(state.quotaUsed('ml')).toMatchObject({ 'requests.tflops': 10_000, workers: 1 });
});

test('a list sent while DRA pods are between their filter and their bind keeps their reservations, and a bind that lands after it', async () => {
  await setQuota(20);
  const [first, second, third] = [putPod('first'), putPod('second'), putPod('third')];
  for (const p of [first, second]) expect((await extender.filter({ Pod: p, NodeNames: NODES, Nodes: null })).NodeNames).toEqual(NODES);
  // The list is sent now, with both pods unbound; the first one's bind lands before it is read.
  await new Promise((r) => setTimeout(r, 5));
  const listedAt = Date.now();
  const stale = structuredClone(api.listObjects('pods')) as K8sObject[];
  await extender.bind({ PodName: 'first', PodNamespace: 'ml', PodUID: first.metadata.uid!, Node: 'dra-only' });
  state.resetFromPods(stale, listedAt);
  expect(state.quotaUsed('ml')).toMatchObject({ 'requests.tflops': 20_000, workers: 2 });
  expect((await extender.filter({ Pod: third, NodeNames: NODES, Nodes: null })).NodeNames).toEqual([]);
});

describe('after kube-scheduler stops waiting for a bind (its httpTimeout) and schedules the pod again', () => {
  /** An extender on the same state whose Bindings wait for `release()`; `sent()` counts them. */
  function gatedExtender(opts: { now?: () => number } = {}) {
    const real = clusterFor(api, 'extender');
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let sent = 0;
    let lists = 0;
    const cluster = {
      get: real.get.bind(real),
      list: (...args: Parameters<Cluster['list']>) => (lists++, real.list(...args)),
      bind: async (...args: Parameters<Cluster['bind']>) => {
        sent++;
        await gate;
        return real.bind(...args);
      },
    } as unknown as Cluster;
    const ext = new Extender({ state, cluster, pods: informers[3], ...opts });
    return { ext, release: () => open(), sent: () => sent, lists: () => lists };
  }
  const bindArgs = (pod: K8sObject, node: string) => ({
    PodName: pod.metadata.name!,
    PodNamespace: 'ml',
    PodUID: pod.metadata.uid!,
    Node: node,
  });

  beforeEach(async () => {
    await setQuota(10);
  });

  test('a pod whose Binding is on the wire passes on that node, still counted, and the bind asked again gets the first one’s answer', async () => {
    const g = gatedExtender();
    const [a, b] = [putPod('a'), putPod('b')];
    await eventually(() => expect(informers[3].get('ml/b')).toBeDefined());
    expect((await g.ext.filter({ Pod: a, NodeNames: NODES, Nodes: null })).NodeNames).toEqual(NODES);
    const first = g.ext.bind(bindArgs(a, 'dra-only'));
    // Filtered again: only the node its Binding names; a refusal here would have kube-scheduler's DRA
    // plugin deallocate the claim while the Binding lands.
    expect((await g.ext.filter({ Pod: a, NodeNames: NODES, Nodes: null })).NodeNames).toEqual(['dra-only']);
    expect((await g.ext.filter({ Pod: b, NodeNames: NODES, Nodes: null })).NodeNames).toEqual([]);
    const again = g.ext.bind(bindArgs(a, 'dra-only'));
    const elsewhere = await g.ext.bind(bindArgs(a, 'p-node-0'));
    expect(elsewhere.Error).toBe('the Binding of pod ml/a to node dra-only is not answered yet');
    g.release();
    expect(await Promise.all([first, again])).toEqual([{ Error: '' }, { Error: '' }]);
    expect(g.sent()).toBe(1);
    expect(api.getObject('pods', 'a', 'ml')!.spec.nodeName).toBe('dra-only');
    expect(state.quotaUsed('ml')).toMatchObject({ 'requests.tflops': 10_000, workers: 1 });
  });

  test('a pod whose Binding landed passes on its node, and its bind is answered without another Binding', async () => {
    const g = gatedExtender();
    g.release();
    const a = putPod('a');
    expect((await g.ext.filter({ Pod: a, NodeNames: NODES, Nodes: null })).NodeNames).toEqual(NODES);
    expect(await g.ext.bind(bindArgs(a, 'p-node-0'))).toEqual({ Error: '' });
    expect((await g.ext.filter({ Pod: a, NodeNames: NODES, Nodes: null })).NodeNames).toEqual(['p-node-0']);
    expect(await g.ext.bind(bindArgs(a, 'p-node-0'))).toEqual({ Error: '' });
    expect(await g.ext.bind(bindArgs(a, 'dra-only'))).toEqual({ Error: 'pod ml/a is bound to node p-node-0' });
    expect(g.sent()).toBe(1);
  });

  test('a Binding refused as already assigned to the node asked counts as landed (one sent before a restart)', async () => {
    const a = putPod('a');
    const g = gatedExtender();
    g.release();
    expect((await g.ext.filter({ Pod: a, NodeNames: NODES, Nodes: null })).NodeNames).toEqual(NODES);
    await clusterFor(api, 'earlier').bind({ namespace: 'ml', name: 'a', uid: a.metadata.uid! }, 'dra-only');
    expect(await g.ext.bind(bindArgs(a, 'dra-only'))).toEqual({ Error: '' });
    expect((await g.ext.bind(bindArgs(a, 'p-node-0'))).Error).toBe('pod ml/a is bound to node dra-only');
  });

  test('a DRA pod’s bind after an idle spell does not wait for the list of pods', async () => {
    let t = Date.now();
    const g = gatedExtender({ now: () => t });
    g.release();
    const a = putPod('a');
    await eventually(() => expect(informers[3].get('ml/a')).toBeDefined());
    expect((await g.ext.filter({ Pod: a, NodeNames: NODES, Nodes: null })).NodeNames).toEqual(NODES);
    const listed = g.lists();
    t += 60_000;
    expect(await g.ext.bind(bindArgs(a, 'dra-only'))).toEqual({ Error: '' });
    expect(g.lists()).toBe(listed);
  });
});

describe("prioritize ranks a DRA pod's nodes with the pool's mode, counting the GPUs claims hold", () => {
  /** The node scored best for a new DRA pod among the pool's two nodes and one outside it. */
  const best = async () => {
    const scores = await extender.prioritize({ Pod: putPod(`probe-${Math.random()}`, 'other'), NodeNames: NODES, Nodes: null });
    expect(scores.filter((s) => s.Score > 0)).toHaveLength(1);
    expect(scores.find((s) => s.Host === 'dra-only')!.Score).toBe(0);
    return scores.find((s) => s.Score === MAX_EXTENDER_PRIORITY)!.Host;
  };

  test('the node whose GPU a claim holds part of wins; deallocated or deleted, the claim holds nothing', async () => {
    const empty = await best();
    const other = empty === 'p-node-0' ? 'p-node-1' : 'p-node-0';
    // MinFragmentation packs: a GPU partly held leaves less stranded than an empty one.
    claim('held', other);
    await eventually(async () => expect(await best()).toBe(other));
    // Nothing reserved: scoring again changes nothing.
    expect(await best()).toBe(other);
    expect(state.stats()).toEqual({ held: 0, reserved: 0 });
    claim('held', undefined);
    await eventually(async () => expect(await best()).toBe(empty));
    claim('held', other);
    await eventually(async () => expect(await best()).toBe(other));
    api.remove('resourceclaims', 'held-gpu', 'ml');
    await eventually(async () => expect(await best()).toBe(empty));
  });

  test('a GPU a claim fills is not chosen', async () => {
    const empty = await best();
    claim('full', empty, '100');
    const other = empty === 'p-node-0' ? 'p-node-1' : 'p-node-0';
    await eventually(async () => expect(await best()).toBe(other));
  });
});

test("a claim's allocation carries its pod's CPU and memory (no background allocation beside it), until the pod goes", async () => {
  const unbound = putPod('cpu');
  const spec = unbound.spec as { nodeName?: string; containers: { resources: Record<string, unknown> }[] };
  spec.nodeName = 'p-node-0';
  spec.containers[0].resources.requests = { cpu: '2', memory: '1Gi' };
  const pod = api.put('pods', unbound) as K8sObject;
  const c = claim('cpu', 'p-node-0', '60', pod.metadata.uid);
  const ofPod = () =>
    state
      .current()
      .allocations()
      .filter((a) => a.id === pod.metadata.uid || a.id === `claim/${c.metadata.uid}`)
      .map((a) => ({ id: a.id, gpus: a.gpuIds, cpu: a.cpu, memory: a.memory }));
  await eventually(() =>
    expect(ofPod()).toEqual([{ id: `claim/${c.metadata.uid}`, gpus: ['p-node-0-gpu-0'], cpu: 2000, memory: 2 ** 30 }]),
  );
  api.remove('pods', 'cpu', 'ml');
  // kube-scheduler keeps the claim's GPU until it deallocates the claim.
  await eventually(() => expect(ofPod()).toEqual([{ id: `claim/${c.metadata.uid}`, gpus: ['p-node-0-gpu-0'], cpu: 0, memory: 0 }]));
});

/**
 * Namespace quotas at placement (GPUResourceQuota `total`), against the API-server double: the
 * extender counts the namespace's bound and reserved shares, places none past a quota and says why,
 * frees room when a pod is gone (not while it terminates), and refuses growth by an in-place resize.
 */
import { API_VERSION } from '../../../lib/model/group';
import { ENABLED_LABEL, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import type { Informer } from '../../../lib/runtime/kube/informer';
import type { Extender } from '../../../lib/runtime/extender/extender';
import type { PlacementState } from '../../../lib/runtime/extender/placement-state';
import { encodeShare, ShareRequest } from '../../../lib/runtime/shared/share';
import { ApiServerDouble, startApiServer } from '../../support/api-server';
import { eventually } from '../fixtures';
import { GiB, seedPool } from '../webhook/fixtures';
import { startExtender } from './fixtures';

const SHARE: ShareRequest = { pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, tflopsLimit: 20, vramRequest: GiB, vramLimit: GiB };
const NODES = ['p-node-0', 'p-node-1'];

let api: ApiServerDouble;
let informers: Informer<K8sObject>[];
let state: PlacementState;
let extender: Extender;

function putPod(name: string, namespace = 'ml', share: ShareRequest = SHARE): K8sObject {
  return api.put('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { [ENABLED_LABEL]: 'true' }, annotations: { [SHARE_ANNOTATION]: encodeShare(share) } },
    spec: { containers: [{ name: 'main', image: 'x' }] },
  }) as K8sObject;
}

function putQuota(name: string, spec: Record<string, unknown>, namespace = 'ml'): void {
  api.put('gpuresourcequotas', { apiVersion: API_VERSION, kind: 'GPUResourceQuota', metadata: { name, namespace }, spec });
}

/** Filters and binds a new pod; the node it went to, or the reasons it was refused with. */
async function place(
  name: string,
  namespace = 'ml',
  share = SHARE,
): Promise<{ pod: K8sObject; node?: string; failed?: Record<string, string> }> {
  const pod = putPod(name, namespace, share);
  const f = await extender.filter({ Pod: pod, NodeNames: NODES, Nodes: null });
  if (f.NodeNames.length !== 1) return { pod, failed: { ...f.FailedNodes, ...f.FailedAndUnresolvableNodes } };
  const b = await extender.bind({ PodName: name, PodNamespace: namespace, PodUID: pod.metadata.uid!, Node: f.NodeNames[0] });
  expect(b.Error).toBe('');
  return { pod, node: f.NodeNames[0] };
}

beforeEach(async () => {
  api = await startApiServer({ bookmarkIntervalMs: 60_000 });
  // Room for 16 shares of SHARE by capacity: the quotas below bind first.
  seedPool(api, { name: 'p', nodes: 2, gpusPerNode: 1, vram: 80 * GiB, tflops: 100 });
  putQuota('team-a', { total: { requests: { tflops: '30' } } });
  ({ informers, state, extender } = await startExtender(api));
});

afterEach(async () => {
  await Promise.all(informers.map((i) => i.stop()));
  await api.stop();
});

test('shares past the quota wait with the reason on every node; other namespaces are not bound by it', async () => {
  for (const n of ['a', 'b', 'c']) expect((await place(n)).node).toBeDefined();
  const refused = await place('d');
  const reason = 'namespace "ml" would use 40 of 30 TFLOPS requested (GPUResourceQuota "team-a")';
  expect(refused.failed).toEqual({ 'p-node-0': reason, 'p-node-1': reason });
  // Counted for tf_pending_gpu_pods by the kind of reason, never its words.
  await eventually(() => expect(extender.waiting()).toEqual([{ pool: 'p', reason: 'OverQuota', pods: 1 }]), 5_000);
  expect(state.quotaUsed('ml')).toMatchObject({ 'requests.tflops': 30_000, workers: 3 });
  expect((await place('elsewhere', 'other')).node).toBeDefined();
});

test('a reservation counts before its bind: two pods filtered at once cannot both take the last room', async () => {
  putQuota('team-a', { total: { requests: { tflops: '10' } } });
  await eventually(async () =>
    expect(state.quotaRefusal('ml', { id: 'x', pool: 'p', qos: 'medium', gpuCount: 2, tflopsRequest: 10, vramRequest: 1 })).toBeDefined(),
  );
  const [first, second] = [putPod('first'), putPod('second')];
  const [f1, f2] = await Promise.all([first, second].map((p) => extender.filter({ Pod: p, NodeNames: NODES, Nodes: null })));
  expect([f1.NodeNames.length, f2.NodeNames.length].sort()).toEqual([0, 1]);
  expect(state.stats()).toEqual({ held: 0, reserved: 1 });
});

test('a terminating pod keeps its share counted; a deleted one frees the room and the next pod is placed', async () => {
  const placed = await Promise.all(['a', 'b', 'c'].map((n) => place(n)));
  expect((await place('d')).failed).toBeDefined();
  const victim = api.getObject('pods', 'a', 'ml')!;
  api.put('pods', { ...victim, metadata: { ...victim.metadata, deletionTimestamp: new Date().toISOString() } });
  await new Promise((r) => setTimeout(r, 200));
  expect((await extender.filter({ Pod: api.getObject('pods', 'd', 'ml')!, NodeNames: NODES, Nodes: null })).NodeNames).toEqual([]);
  api.remove('pods', 'a', 'ml');
  await eventually(() => expect(state.quotaUsed('ml').workers).toBe(2));
  const retried = await extender.filter({ Pod: api.getObject('pods', 'd', 'ml')!, NodeNames: NODES, Nodes: null });
  expect(retried.NodeNames).toHaveLength(1);
  expect(placed.every((p) => p.node)).toBe(true);
});

test('a quota raised or deleted lets waiting pods be placed; a lowered one evicts nothing', async () => {
  for (const n of ['a', 'b', 'c']) await place(n);
  putQuota('team-a', { total: { requests: { tflops: '10' } } });
  await new Promise((r) => setTimeout(r, 200));
  // Lowered below what is bound: the three shares stay, new ones wait.
  expect(state.stats().held).toBe(3);
  expect((await place('d')).failed?.['p-node-0']).toBe('namespace "ml" would use 40 of 10 TFLOPS requested (GPUResourceQuota "team-a")');
  api.remove('gpuresourcequotas', 'team-a', 'ml');
  await eventually(async () =>
    expect((await extender.filter({ Pod: api.getObject('pods', 'd', 'ml')!, NodeNames: NODES, Nodes: null })).NodeNames).toHaveLength(1),
  );
});

test('an in-place resize that grows a share past the quota is refused; shrinking always passes', async () => {
  const { pod } = await place('a');
  for (const n of ['b', 'c']) await place(n);
  const uid = pod.metadata.uid!;
  const grown = state.resize(uid, { tflopsRequest: 15, tflopsLimit: 20, vramRequest: GiB, vramLimit: GiB });
  expect(grown).toEqual({ ok: false, overQuota: 'namespace "ml" would use 35 of 30 TFLOPS requested (GPUResourceQuota "team-a")' });
  expect(state.quotaUsed('ml')['requests.tflops']).toBe(30_000);
  putQuota('team-a', { total: { requests: { tflops: '5' } } });
  await new Promise((r) => setTimeout(r, 200));
  expect(state.resize(uid, { tflopsRequest: 4, tflopsLimit: 20, vramRequest: GiB, vramLimit: GiB })).toMatchObject({ ok: true });
  expect(state.quotaUsed('ml')['requests.tflops']).toBe(24_000);
});

test('the sweep finds a waiting pod room only once its quota has some', async () => {
  for (const n of ['a', 'b', 'c']) await place(n);
  await place('d');
  // The pod cache has the waiting pod (a pod it lacks counts as gone), and the quota has no room for it.
  await eventually(() => expect(informers[3].get('ml/d')).toBeDefined());
  expect(extender.sweep()).toBeUndefined();
  expect(extender.hasWaiting()).toBe(true);
  putQuota('team-a', { total: { requests: { tflops: '40' } } });
  await eventually(() => expect(extender.sweep()).toBeDefined());
});

/**
 * The node's ResourceSlice follows its pool's delivery, its GPUs and their readiness: published while
 * the node is in a DRA pool, republished with a higher generation when a GPU's readiness changes (a
 * not-ready GPU keeps its device, tainted NoSchedule), left alone when nothing changed, deleted when
 * the node leaves DRA.
 */
import { sortedKeys } from '../../support/sorted-keys';
import type { GpuReadiness } from '../../../lib/runtime/agent/mps/supervisor';
import { SlicePublisher } from '../../../lib/runtime/agent/dra/slice-publisher';
import { ApiError, type Cluster, type K8sObject } from '../../../lib/runtime/kube/cluster';
import { TWO_A100 } from './fixtures';

const NODE = 'gpu-node-1';
const node = (labels: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: NODE,
    uid: 'node-uid',
    labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB', 'nvidia.com/gpu.count': '2', 'nvidia.com/gpu.memory': '81920', ...labels },
  },
});
const pool = (name: string, shareDelivery: string) => ({
  apiVersion: 'tensor-fusion.ai/v1',
  kind: 'GPUPool',
  metadata: { name },
  spec: { nodeManagerConfig: { shareDelivery }, capacityConfig: { oversubscription: { tflopsOversellRatio: 100 } } },
});
const objects = new Map<string, K8sObject>();
const calls: string[] = [];
const cluster = {
  get: async (rt: { plural: string }, r: { name: string }) => objects.get(`${rt.plural}/${r.name}`),
  apply: async (rt: { plural: string }, o: K8sObject) => {
    calls.push(`apply ${o.metadata.name} generation ${(o as unknown as { spec: { pool: { generation: number } } }).spec.pool.generation}`);
    objects.set(`${rt.plural}/${o.metadata.name}`, o);
    return o;
  },
  delete: async (rt: { plural: string }, r: { name: string }) => {
    calls.push(`delete ${r.name}`);
    return objects.delete(`${rt.plural}/${r.name}`);
  },
} as unknown as Cluster;
const ready: GpuReadiness = { ready: true, reason: 'MpsReady', message: '' };
let readiness = new Map<string, GpuReadiness>();
const publisher = new SlicePublisher({
  cluster,
  nodeName: NODE,
  gpus: () => TWO_A100,
  readiness: () => readiness,
  minors: () =>
    new Map([
      ['GPU-a', 1],
      ['GPU-b', 0],
    ]),
});
const slice = () =>
  objects.get(`resourceslices/${NODE}-gpu.tensor-fusion.ai`) as unknown as {
    metadata: { ownerReferences: unknown[] };
    spec: { devices: { name: string; taints?: unknown[] }[] };
  };

test('published in a DRA pool, republished on a readiness change only, deleted when the node leaves DRA', async () => {
  objects.set('gpupools/dp', pool('dp', 'DevicePlugin') as K8sObject);
  objects.set('gpupools/dra', pool('dra', 'DRA') as K8sObject);
  objects.set(`nodes/${NODE}`, node({ 'tensor-fusion.ai/pool-dp': 'true' }) as K8sObject);
  await publisher.refresh();
  expect(calls).toEqual([`delete ${NODE}-gpu.tensor-fusion.ai`]);
  objects.set(`nodes/${NODE}`, node({ 'tensor-fusion.ai/pool-dra': 'true' }) as K8sObject);
  readiness = new Map([
    ['GPU-a', ready],
    ['GPU-b', ready],
  ]);
  await publisher.refresh();
  await publisher.refresh();
  expect(calls.slice(1)).toEqual([`apply ${NODE}-gpu.tensor-fusion.ai generation 1`]);
  expect(slice().metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: 'node-uid', controller: true }]);
  expect(slice().spec.devices.map((d) => [d.name, d.taints])).toEqual([
    ['gpu-0', undefined],
    ['gpu-1', undefined],
  ]);
  expect(publisher.tflopsOf(TWO_A100[0])).toBe(312);
  readiness = new Map([
    ['GPU-a', ready],
    ['GPU-b', { ready: false, reason: 'MpsDaemonNotAnswering', message: 'x' }],
  ]);
  await publisher.refresh();
  expect(calls.slice(2)).toEqual([`apply ${NODE}-gpu.tensor-fusion.ai generation 2`]);
  expect(slice().spec.devices[1].taints).toEqual([
    { key: 'gpu.tensor-fusion.ai/not-ready', value: 'MpsDaemonNotAnswering', effect: 'NoSchedule' },
  ]);
  objects.set(`nodes/${NODE}`, node({}) as K8sObject);
  await publisher.refresh();
  await publisher.refresh();
  expect(calls.slice(3)).toEqual([`delete ${NODE}-gpu.tensor-fusion.ai`]);
  expect(slice()).toBeUndefined();
});

test('a slice deleted behind its back (the kubelet wipes them when it starts) is published again at the next pass', async () => {
  objects.set(`nodes/${NODE}`, node({ 'tensor-fusion.ai/pool-dra': 'true' }) as K8sObject);
  await publisher.refresh();
  expect(slice()).toBeDefined();
  objects.delete(`resourceslices/${NODE}-gpu.tensor-fusion.ai`);
  calls.length = 0;
  await publisher.refresh();
  expect(calls).toEqual([`apply ${NODE}-gpu.tensor-fusion.ai generation 1`]);
});

test("the API server's echo of the slice (keys sorted, taints stamped) is no change: the next passes publish nothing", async () => {
  objects.set(`nodes/${NODE}`, node({ 'tensor-fusion.ai/pool-dra': 'true' }) as K8sObject);
  readiness = new Map([['GPU-a', ready]]);
  await publisher.refresh();
  const echo = sortedKeys(structuredClone(slice())) as ReturnType<typeof slice>;
  for (const d of echo.spec.devices) for (const t of (d.taints ?? []) as Record<string, string>[]) t.timeAdded = '2026-11-28T21:00:00Z';
  objects.set(`resourceslices/${NODE}-gpu.tensor-fusion.ai`, echo as unknown as K8sObject);
  calls.length = 0;
  await publisher.refresh();
  await publisher.refresh();
  expect(calls).toEqual([]);
});

/** A publisher whose deletes of the slice fail with `err`: what it tried to delete and what it logged. */
function failingDeletes(err: ApiError) {
  const deletes: string[] = [];
  const logs: string[] = [];
  const failing = {
    get: cluster.get,
    delete: async (_rt: unknown, r: { name: string }) => {
      deletes.push(r.name);
      throw err;
    },
  } as unknown as Cluster;
  const agent = new SlicePublisher({
    cluster: failing,
    nodeName: NODE,
    gpus: () => TWO_A100,
    readiness: () => readiness,
    minors: () => new Map(),
    log: (m) => logs.push(m),
  });
  return { agent, deletes, logs };
}

test('an install without DRA forbids the agent slices (403): the node in no DRA pool tries the delete once, logs nothing and does not retry', async () => {
  const { agent, deletes, logs } = failingDeletes(new ApiError(403, 'Forbidden', 'resourceslices.resource.k8s.io is forbidden'));
  objects.set(`nodes/${NODE}`, node({ 'tensor-fusion.ai/pool-dp': 'true' }) as K8sObject);
  await agent.refresh();
  await agent.refresh();
  await agent.refresh();
  expect([deletes, logs]).toEqual([[`${NODE}-gpu.tensor-fusion.ai`], []]);
});

test('any other failure to delete is logged and tried again at the next pass', async () => {
  const { agent, deletes, logs } = failingDeletes(new ApiError(500, 'InternalError', 'etcdserver: request timed out'));
  objects.set(`nodes/${NODE}`, node({}) as K8sObject);
  await agent.refresh();
  await agent.refresh();
  expect([deletes.length, logs]).toEqual([
    2,
    ['publishing the ResourceSlice failed; trying again', 'publishing the ResourceSlice failed; trying again'],
  ]);
});

/**
 * The DRA front door against a fake kubelet (test/support/kubelet/fake-kubelet.ts: the plugin
 * watcher's registration calls and the DRA service, over the kubelet's generated gRPC services) and
 * the fake MPS control daemon: registration names our driver, its endpoint and the v1 service;
 * prepare reads the claim and its pod, starts the share's daemon with the pod's limits (or, with no
 * share record, the claim's consumedCapacity) and answers the claim's CDI device; each bad claim gets
 * its own error; unprepare ends the share and removes its spec.
 */
import { join } from 'node:path';
import type { CdiWriter } from '../../../lib/runtime/agent/cdi/writer';
import { DraDoor } from '../../../lib/runtime/agent/dra/door';
import type { MpsSupervisor } from '../../../lib/runtime/agent/mps/supervisor';
import type { Cluster, K8sObject } from '../../../lib/runtime/kube/cluster';
import { encodeShare } from '../../../lib/runtime/shared/share';
import type { FakeKubelet } from '../../support/kubelet/fake-kubelet';
import { DoorBench, startDoorBench } from './fixtures';

const NODE = 'gpu-node-1';
const GI = 2 ** 30;
const objects = new Map<string, K8sObject>();
const key = (plural: string, name: string) => `${plural}/${name}`;

/** A DRA pod of this node holding claim `<name>-gpu`; its share record asks 20 TFLOPS and 8Gi as limits. */
function pod(name: string, o: { record?: boolean; node?: string; containers?: number } = {}): K8sObject {
  const share = encodeShare({
    pool: 'p',
    qos: 'medium',
    gpuCount: 1,
    tflopsRequest: 10,
    tflopsLimit: 20,
    vramRequest: 4 * GI,
    vramLimit: 8 * GI,
    containers: o.containers,
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ml',
      uid: `uid-${name}`,
      labels: { 'tensor-fusion.ai/enabled': 'true' },
      annotations: o.record === false ? {} : { 'tensor-fusion.ai/share': share },
    },
    spec: {
      nodeName: o.node ?? NODE,
      resourceClaims: [{ name: 'tensor-fusion-gpu', resourceClaimTemplateName: 'tf-abc' }],
      containers: Array.from({ length: o.containers ?? 1 }, (_, i) => ({
        name: `c${i}`,
        resources: { claims: [{ name: 'tensor-fusion-gpu' }] },
      })),
    },
  } as K8sObject;
}

/** An allocated claim of pod `podName` on `devices` of pool `pool`, each consuming 10 TFLOPS and 4Gi. */
function claim(name: string, podName: string, devices: string[], o: { pool?: string; reserved?: string[] } = {}): K8sObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace: 'ml', uid: `cuid-${name}` },
    status: {
      allocation: {
        devices: {
          results: devices.map((device, i) => ({
            request: 'gpu',
            driver: 'gpu.tensor-fusion.ai',
            pool: o.pool ?? NODE,
            device,
            shareID: `share-${i}`,
            consumedCapacity: { tflops: '10', memory: '4Gi' },
          })),
        },
      },
      reservedFor: (o.reserved ?? [podName]).map((p) => ({ resource: 'pods', name: p, uid: `uid-${p}` })),
    },
  } as K8sObject;
}
const put = (o: K8sObject) => objects.set(key(o.kind === 'Pod' ? 'pods' : 'resourceclaims', o.metadata.name!), o);
const ref = (c: K8sObject) => ({ namespace: 'ml', name: c.metadata.name!, uid: c.metadata.uid! });

let bench: DoorBench;
let kubelet: FakeKubelet;
let door: DraDoor;
let sup: MpsSupervisor;
let cdi: CdiWriter;

beforeEach(async () => {
  bench = await startDoorBench(NODE);
  ({ kubelet, sup, cdi } = bench);
  objects.clear();
  const cluster = {
    get: async (rt: { plural: string }, r: { name: string }) => objects.get(key(rt.plural, r.name)),
  } as unknown as Cluster;
  door = new DraDoor({
    cluster,
    nodeName: NODE,
    delivery: bench.delivery,
    registryDir: kubelet.registryDir,
    pluginDir: join(kubelet.pluginsDir, 'gpu.tensor-fusion.ai'),
    tflopsOf: () => 312,
  });
  await door.start();
});

afterEach(async () => {
  await door.stop();
  await bench.stop();
});

test('the plugin watcher finds a DRAPlugin of our driver, its endpoint and the v1 service', async () => {
  expect(await kubelet.registerDra('gpu.tensor-fusion.ai-reg.sock')).toEqual({
    type: 'DRAPlugin',
    name: 'gpu.tensor-fusion.ai',
    endpoint: join(kubelet.pluginsDir, 'gpu.tensor-fusion.ai', 'dra.sock'),
    supported_versions: ['v1.DRAPlugin'],
  });
});

test("prepare starts the share's daemon with the pod's limits and answers the claim's CDI device, the pool, device and share id", async () => {
  put(pod('a'));
  const c = claim('a-gpu', 'a', ['gpu-1']);
  put(c);
  await kubelet.registerDra('gpu.tensor-fusion.ai-reg.sock');
  const res = await kubelet.prepare([ref(c)]);
  expect(res.claims).toEqual({
    'cuid-a-gpu': {
      error: '',
      devices: [
        {
          request_names: ['gpu'],
          pool_name: NODE,
          device_name: 'gpu-1',
          cdi_device_ids: ['tensor-fusion.ai/share=claim-cuid-a-gpu'],
          share_id: 'share-0',
        },
      ],
    },
  });
  // 20 TFLOPS of a 312-TFLOPS A100 is 7 %; the share's GPU 1 is GPU-b, minor 0.
  expect(sup.shares().map((s) => [s.id, s.pod, s.gpuUuids, s.threadPercentage, s.vramLimitBytes])).toEqual([
    ['uid-a', 'ml/a', ['GPU-b'], 7, 8 * GI],
  ]);
  const spec = cdi.read('claim-cuid-a-gpu')!;
  expect(spec.annotations).toEqual({
    'tensor-fusion.ai/pod': 'ml/a',
    'tensor-fusion.ai/claim': 'ml/a-gpu',
    'tensor-fusion.ai/pod-uid': 'uid-a',
  });
  expect(spec.devices[0].containerEdits.deviceNodes.map((n) => n.path)).toContain('/dev/nvidia0');
  expect(spec.devices[0].containerEdits.env).toContain(`CUDA_MPS_PIPE_DIRECTORY=${sup.dirsOf('uid-a').pipeDir}`);
  // Prepared again (a kubelet restart): the same answer.
  expect((await kubelet.prepare([ref(c)])).claims).toEqual(res.claims);
});

test("a pod's containers share its limits; a pod without a share record is held to its claim's consumedCapacity", async () => {
  put(pod('two', { containers: 2 }));
  put(pod('bare', { record: false }));
  const two = claim('two-gpu', 'two', ['gpu-0']);
  const bare = claim('bare-gpu', 'bare', ['gpu-0']);
  [two, bare].forEach(put);
  await kubelet.registerDra('gpu.tensor-fusion.ai-reg.sock');
  await kubelet.prepare([ref(two), ref(bare)]);
  expect(
    sup
      .shares()
      .map((s) => [s.pod, s.threadPercentage, s.vramLimitBytes, s.containers])
      .sort(),
  ).toEqual([
    ['ml/bare', 4, 4 * GI, 1],
    ['ml/two', 4, 4 * GI, 2],
  ]);
});

test('each bad claim gets its own error, and the good one in the same call is prepared', async () => {
  put(pod('a'));
  put(pod('far', { node: 'other-node' }));
  const good = claim('a-gpu', 'a', ['gpu-0']);
  const elsewhere = claim('x-gpu', 'a', ['gpu-0'], { pool: 'other-node' });
  const twoPods = claim('y-gpu', 'a', ['gpu-0'], { reserved: ['a', 'b'] });
  const far = claim('far-gpu', 'far', ['gpu-0']);
  const odd = claim('odd-gpu', 'a', ['gpu-7']);
  [good, elsewhere, twoPods, far, odd].forEach(put);
  await kubelet.registerDra('gpu.tensor-fusion.ai-reg.sock');
  const errors = (
    await kubelet.prepare(
      [good, elsewhere, twoPods, far, odd].map(ref).concat([
        { namespace: 'ml', name: 'gone', uid: 'u-gone' },
        { ...ref(good), uid: 'stale' },
      ]),
    )
  ).claims;
  expect(Object.fromEntries(Object.entries(errors).map(([uid, r]) => [uid, r.error]))).toEqual({
    'cuid-a-gpu': '',
    'cuid-x-gpu': `claim ml/x-gpu is allocated no device of driver gpu.tensor-fusion.ai on node ${NODE} (pool ${NODE})`,
    'cuid-y-gpu': "claim ml/y-gpu is reserved for 2 pods (a, b): a GPU share is one pod's",
    'cuid-far-gpu': `pod ml/far is bound to node other-node, not ${NODE}`,
    'cuid-odd-gpu': 'claim ml/odd-gpu: device gpu-7 is not on this node (nvidia-smi lists indexes 0, 1)',
    'u-gone': 'claim ml/gone is not in the API',
    stale: 'claim ml/a-gpu has UID cuid-a-gpu, not stale: it was deleted and made again',
  });
  expect(sup.shares().map((s) => s.pod)).toEqual(['ml/a']);
  expect(cdi.list().map((s) => s.name)).toEqual(['claim-cuid-a-gpu']);
});

test('unprepare ends the share and removes its spec; a claim never prepared here is done', async () => {
  put(pod('a'));
  const c = claim('a-gpu', 'a', ['gpu-0']);
  put(c);
  await kubelet.registerDra('gpu.tensor-fusion.ai-reg.sock');
  await kubelet.prepare([ref(c)]);
  expect(sup.shares()).toHaveLength(1);
  expect((await kubelet.unprepare([ref(c), { namespace: 'ml', name: 'other', uid: 'u-other' }])).claims).toEqual({
    'cuid-a-gpu': { error: '' },
    'u-other': { error: '' },
  });
  expect(sup.shares()).toEqual([]);
  expect(cdi.list()).toEqual([]);
});

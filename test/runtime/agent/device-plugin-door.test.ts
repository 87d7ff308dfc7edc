/**
 * The device-plugin front door against a fake kubelet (test/support/kubelet/fake-kubelet.ts: the
 * kubelet's own generated gRPC services on unix sockets) and the fake MPS control daemon: Allocate
 * answers from the ids alone; PreStartContainer names the pod through PodResources and writes the
 * CDI spec of that pod's share, whatever order the kubelet asks in; a pod without a share record, or
 * ids no pod holds, keep the container from starting with a message that says why. It reports itself
 * registered (the agent's readiness) only with the kubelet that accepted it.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import type { CdiWriter } from '../../../lib/runtime/agent/cdi/writer';
import { KUBELET_SOCKET } from '../../../lib/runtime/agent/device-plugin/api';
import { DevicePluginDoor, deviceKey } from '../../../lib/runtime/agent/device-plugin/door';
import { shareDevices } from '../../../lib/runtime/agent/device-plugin/devices';
import type { MpsSupervisor } from '../../../lib/runtime/agent/mps/supervisor';
import type { Cluster, K8sObject } from '../../../lib/runtime/kube/cluster';
import type { FakeKubelet } from '../../support/kubelet/fake-kubelet';
import { DoorBench, sharePod, startDoorBench, TWO_A100 } from './fixtures';

const NODE = 'gpu-node-1';
const GPUS = TWO_A100;
const pods = new Map<string, K8sObject>();
/** A pod of this node holding a share of GPU `gpu` (its object name) at `percent`. */
const put = (name: string, gpu: string, percent: string, o: { record?: boolean; node?: string } = {}) =>
  pods.set(name, sharePod(name, { node: NODE, gpus: [gpu], percent, ...o }));

let bench: DoorBench;
let kubelet: FakeKubelet;
let dir: string;
let door: DevicePluginDoor;
let sup: MpsSupervisor;
let cdi: CdiWriter;

beforeEach(async () => {
  bench = await startDoorBench(NODE);
  ({ kubelet, dir, sup, cdi } = bench);
  pods.clear();
  const cluster = { get: async (_rt: unknown, ref: { name: string }) => pods.get(ref.name) } as unknown as Cluster;
  door = new DevicePluginDoor({
    cluster,
    delivery: bench.delivery,
    pluginDir: kubelet.pluginDir,
    podResourcesSocket: kubelet.podResourcesSocket,
    devices: () => shareDevices(GPUS, new Map(), 2),
    registry: new Registry(),
  });
  await door.start();
});

afterEach(async () => {
  await door.stop();
  await bench.stop();
});

const holds = (pod: string, ids: string[]) => ({
  name: pod,
  namespace: 'ml',
  containers: [
    {
      name: 'main',
      devices: [{ resource_name: 'tensor-fusion.ai/share', device_ids: ids, cpu_ids: [] }],
      cpu_ids: [],
      memory: [],
      dynamic_resources: [],
    },
  ],
});

test('registers for the share resource with PreStartContainer required, advertising neutral ids', async () => {
  expect(kubelet.registered.map((r) => [r.resource_name, r.endpoint, r.options?.pre_start_required])).toEqual([
    ['tensor-fusion.ai/share', 'tensor-fusion-share.sock', true],
  ]);
  expect(await kubelet.options()).toEqual({ pre_start_required: true, get_preferred_allocation_available: false });
  expect((await kubelet.devices()).map((d) => d.ID)).toEqual(['share-0', 'share-1', 'share-2', 'share-3']);
});

test('is registered while the kubelet that accepted it runs: a kubelet socket made again is a kubelet that forgot it', async () => {
  expect(door.registered).toBe(true);
  // A restarted kubelet makes its socket again (a new inode) before the plugin registers with it.
  const socket = join(kubelet.pluginDir, KUBELET_SOCKET);
  renameSync(socket, `${socket}.old`);
  writeFileSync(socket, '');
  expect(door.registered).toBe(false);
  rmSync(socket);
  renameSync(`${socket}.old`, socket);
  expect(door.registered).toBe(true);
});

test('Allocate answers from the ids alone: the same CDI device for the same ids, in any order, and nothing else', async () => {
  const a = await kubelet.allocate(['share-3', 'share-1']);
  expect(a).toEqual({
    envs: {},
    mounts: [],
    devices: [],
    annotations: {},
    cdi_devices: [{ name: `tensor-fusion.ai/share=${deviceKey(['share-1', 'share-3'])}` }],
  });
  expect(await kubelet.allocate(['share-1', 'share-3'])).toEqual(a);
  expect((await kubelet.allocate(['share-2'])).cdi_devices).not.toEqual(a.cdi_devices);
});

test('PreStartContainer writes the spec of the pod the kubelet names, whatever order the pods come in', async () => {
  put('a', `${NODE}-gpu-0`, '25');
  put('b', `${NODE}-gpu-1`, '50');
  kubelet.podResources = [holds('a', ['share-0']), holds('b', ['share-1'])];
  // B first, although A holds the lower ids and comes first in the list.
  await kubelet.preStart(['share-1']);
  await kubelet.preStart(['share-0']);
  const spec = (ids: string[]) => JSON.parse(readFileSync(join(dir, 'cdi', `tensor-fusion.ai-share_${deviceKey(ids)}.json`), 'utf8'));
  const b = spec(['share-1']);
  expect(b.kind).toBe('tensor-fusion.ai/share');
  expect(b.annotations).toEqual({
    'tensor-fusion.ai/pod': 'ml/b',
    'tensor-fusion.ai/container': 'main',
    'tensor-fusion.ai/pod-uid': 'uid-b',
  });
  const edits = b.devices[0].containerEdits;
  // GPU 1 of the node is GPU-b, whose minor is 0.
  expect(edits.deviceNodes.map((n: { path: string }) => n.path)).toEqual([
    '/dev/nvidiactl',
    '/dev/nvidia-uvm',
    '/dev/nvidia-uvm-tools',
    '/dev/nvidia0',
  ]);
  expect(edits.env).toContain(`CUDA_MPS_PIPE_DIRECTORY=${sup.dirsOf('uid-b').pipeDir}`);
  expect(edits.env).toContain('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50');
  expect(spec(['share-0']).devices[0].containerEdits.env).toContain(`CUDA_MPS_PIPE_DIRECTORY=${sup.dirsOf('uid-a').pipeDir}`);
  // Each share's daemon runs with its own pod's limits.
  expect(
    sup
      .shares()
      .map((s) => [s.pod, s.threadPercentage])
      .sort(),
  ).toEqual([
    ['ml/a', 25],
    ['ml/b', 50],
  ]);
});

test('a pod that holds the resource without a share record, ids no pod holds, and a pod of another node keep the container from starting', async () => {
  put('rogue', `${NODE}-gpu-0`, '25', { record: false });
  put('far', `${NODE}-gpu-0`, '25', { node: 'other-node' });
  kubelet.podResources = [holds('rogue', ['share-0']), holds('far', ['share-2'])];
  await expect(kubelet.preStart(['share-0'])).rejects.toThrow(
    'pod ml/rogue requests tensor-fusion.ai/share but holds no share admitted by the tensor-fusion webhook and placed by its scheduler: refused',
  );
  await expect(kubelet.preStart(['share-1'])).rejects.toThrow(
    "the kubelet's PodResources API names no container holding tensor-fusion.ai/share devices share-1",
  );
  await expect(kubelet.preStart(['share-2'])).rejects.toThrow('pod ml/far is bound to node other-node, not gpu-node-1');
  expect(cdi.list()).toEqual([]);
  expect(sup.shares()).toEqual([]);
});

test('specs of finished pods are removed, the others kept', async () => {
  put('a', `${NODE}-gpu-0`, '25');
  kubelet.podResources = [holds('a', ['share-0'])];
  await kubelet.preStart(['share-0']);
  cdi.prune((uid) => uid === 'uid-a');
  expect(cdi.list().map((s) => s.podUid)).toEqual(['uid-a']);
  cdi.prune(() => false);
  expect(cdi.list()).toEqual([]);
});

/**
 * The pure parts of the node side of hard isolation: which pod a device-plugin Allocate is for, the
 * share a pod's bind records, what its container gets, and the backstop's breaches.
 */
import { breaches, GpuProcess } from '../../../lib/runtime/agent/backstop';
import { MpsShare } from '../../../lib/runtime/agent/mps/supervisor';
import { containerResponse, mpsShareOf, nextClaim, shareContainers } from '../../../lib/runtime/agent/share-claims';

const GPUS = [
  { index: 0, uuid: 'GPU-a', name: 'NVIDIA A100-SXM4-80GB' },
  { index: 1, uuid: 'GPU-b', name: 'NVIDIA A100-SXM4-80GB' },
];
const MIB = 2 ** 20;

function pod(name: string, o: { rv?: string; phase?: string; containers?: number; gpus?: string[]; deleting?: boolean } = {}) {
  const uid = `uid-${name}`;
  const share = { 'tensor-fusion.ai/share': '1' };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ml',
      uid,
      resourceVersion: o.rv ?? '100',
      creationTimestamp: '2026-11-27T10:00:00Z',
      labels: { 'tensor-fusion.ai/enabled': 'true' },
      ...(o.deleting ? { deletionTimestamp: '2026-11-27T10:05:00Z' } : {}),
      annotations: {
        'tensor-fusion.ai/allocation': JSON.stringify({
          id: uid,
          pool: 'p',
          node: 'n',
          gpuIds: o.gpus ?? ['n-gpu-1'],
          vramLimit: 8 * 2 ** 30,
          tflopsLimit: 20,
        }),
        'tensor-fusion.ai/mps-memory-limit': '0=4096M',
        'tensor-fusion.ai/mps-thread-percentage': '7',
      },
    },
    spec: {
      containers: Array.from({ length: o.containers ?? 1 }, (_, i) => ({ name: `c${i}`, resources: { limits: share } })).concat([
        { name: 'side', resources: { limits: {} } } as never,
      ]),
    },
    status: { phase: o.phase ?? 'Pending' },
  };
}

describe('the pod an Allocate is for', () => {
  test('counts only the containers that request the share resource', () => {
    expect(shareContainers(pod('a', { containers: 2 }))).toBe(2);
  });

  test("is the pending pod bound first (lowest resourceVersion, numerically: the binds' order) with containers left to serve", () => {
    const a = pod('a', { rv: '1000' });
    const b = pod('b', { rv: '999', containers: 2 });
    expect(nextClaim([a, b], new Map())?.metadata.name).toBe('b');
    expect(nextClaim([a, b], new Map([['uid-b', 1]]))?.metadata.name).toBe('b');
    expect(nextClaim([a, b], new Map([['uid-b', 2]]))?.metadata.name).toBe('a');
  });

  test('is never a running, deleted or share-less pod', () => {
    const plain = { ...pod('plain'), metadata: { ...pod('plain').metadata, annotations: {} } };
    expect(nextClaim([pod('r', { phase: 'Running' }), pod('d', { deleting: true }), plain], new Map())).toBeUndefined();
  });
});

describe('the share of a pod', () => {
  test("maps its GPU objects to the node's device UUIDs and takes the per-container limits the bind wrote", () => {
    expect(mpsShareOf(pod('a', { containers: 2 }), GPUS)).toEqual({
      id: 'uid-a',
      pod: 'ml/a',
      gpuUuids: ['GPU-b'],
      vramLimitBytes: 4096 * MIB,
      threadPercentage: 7,
      containers: 2,
    });
  });

  test('names a GPU the node does not have, and missing limits', () => {
    expect(() => mpsShareOf(pod('a', { gpus: ['n-gpu-7'] }), GPUS)).toThrow(
      'pod ml/a: GPU n-gpu-7 is not on this node (nvidia-smi lists indexes 0, 1)',
    );
    const bare = pod('b');
    delete (bare.metadata.annotations as Record<string, string>)['tensor-fusion.ai/mps-thread-percentage'];
    expect(() => mpsShareOf(bare, GPUS)).toThrow(
      'pod ml/b: no MPS limits in tensor-fusion.ai/mps-memory-limit and tensor-fusion.ai/mps-thread-percentage',
    );
  });

  test("gives the container its GPU device nodes that exist, its daemon's folders and the variables", () => {
    const share = mpsShareOf(pod('a'), GPUS);
    const dirs = { pipeDir: '/run/tf/uid-a/pipe', logDir: '/run/tf/uid-a/log', shmDir: '/run/tf/uid-a/shm' };
    const r = containerResponse(share, dirs, GPUS, '/dev', (p) => p !== '/dev/nvidia-uvm-tools');
    expect(r).toEqual({
      envs: {
        CUDA_MPS_PIPE_DIRECTORY: dirs.pipeDir,
        NVIDIA_VISIBLE_DEVICES: 'GPU-b',
        CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=4096M',
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '7',
      },
      mounts: [
        { container_path: dirs.pipeDir, host_path: dirs.pipeDir, read_only: false },
        { container_path: '/tmp/nvidia-mps', host_path: dirs.pipeDir, read_only: false },
        { container_path: '/dev/shm', host_path: dirs.shmDir, read_only: false },
      ],
      devices: ['nvidiactl', 'nvidia-uvm', 'nvidia1'].map((n) => ({
        container_path: `/dev/${n}`,
        host_path: `/dev/${n}`,
        permissions: 'rw',
      })),
    });
  });
});

describe('the backstop', () => {
  const share: MpsShare = {
    id: 'uid-a',
    pod: 'ml/a',
    gpuUuids: ['GPU-a'],
    vramLimitBytes: 4096 * MIB,
    threadPercentage: 25,
    containers: 1,
  };
  const proc = (pid: number, mib: number, mpsClient: boolean, podUid = 'uid-a'): GpuProcess => ({
    pid,
    gpuUuid: 'GPU-a',
    usedBytes: mib * MIB,
    mpsClient,
    podUid,
  });

  test("stops a share's process that runs outside MPS, and leaves other pods' processes alone", () => {
    expect(breaches([proc(10, 100, false), proc(11, 100, false, 'uid-other'), proc(12, 100, true)], [share])).toEqual([
      {
        pid: 10,
        share,
        reason: 'MpsBypassed',
        message:
          'process 10 of ml/a uses GPU GPU-a outside its MPS daemon (CUDA_MPS_PIPE_DIRECTORY changed?), where no limit binds it; it was stopped',
      },
    ]);
  });

  test('ends the newest clients while a share holds more than its limit × containers', () => {
    expect(
      breaches([proc(20, 3000, true), proc(21, 3000, true), proc(22, 3000, true)], [share]).map((b) => [b.pid, b.reason, b.message]),
    ).toEqual([
      [
        22,
        'VramLimitExceeded',
        'ml/a holds 9000 MiB on GPU GPU-a, over its limit of 4096 MiB (more processes than containers); its newest process 22 was ended',
      ],
      [
        21,
        'VramLimitExceeded',
        'ml/a holds 6000 MiB on GPU GPU-a, over its limit of 4096 MiB (more processes than containers); its newest process 21 was ended',
      ],
    ]);
    expect(breaches([proc(20, 3000, true), proc(21, 3000, true)], [{ ...share, containers: 2 }])).toEqual([]);
  });
});

/**
 * The pure parts of the node side of hard isolation: the share a pod's bind records, what its
 * container gets (neutral container edits, for the CDI spec), when a share is over, and the
 * backstop's breaches.
 */
import { breaches, GpuProcess } from '../../../lib/runtime/agent/backstop';
import { MpsShare } from '../../../lib/runtime/agent/mps/supervisor';
import { sharePod, TWO_A100 } from './fixtures';
import { shareEdits } from '../../../lib/runtime/agent/share/container-edits';
import { mpsShareOf, shareContainers } from '../../../lib/runtime/agent/share/mps-share';
import { podEnded } from '../../../lib/runtime/agent/share/pod-ended';

const GPUS = TWO_A100;
const MIB = 2 ** 20;
const pod = sharePod;

describe('when a share is over', () => {
  const running = { state: { running: { startedAt: '2026-11-27T10:01:00Z' } } };
  const done = { state: { terminated: { exitCode: 0 } } };
  const withStatus = (p: ReturnType<typeof pod>, status: object) => ({ ...p, status: { ...p.status, ...status } });

  test('counts only the containers that request the share resource', () => {
    expect(shareContainers(pod('a', { containers: 2 }))).toBe(2);
  });

  test('not at deletionTimestamp while a container still runs (its SIGTERM handler may use the GPU)', () => {
    expect(podEnded(withStatus(pod('d', { deleting: true }), { phase: 'Running', containerStatuses: [running, done] }))).toBe(false);
    expect(podEnded(withStatus(pod('d', { deleting: true }), { phase: 'Running', containerStatuses: [done, done] }))).toBe(true);
  });

  test('when the pod finished, whatever its containers report', () => {
    expect(podEnded(withStatus(pod('s'), { phase: 'Succeeded' }))).toBe(true);
    expect(podEnded(withStatus(pod('f'), { phase: 'Failed', containerStatuses: [running] }))).toBe(true);
    expect(podEnded(withStatus(pod('r'), { phase: 'Running', containerStatuses: [running] }))).toBe(false);
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

  test('gives the container its GPU by its device minor, the control nodes that exist, its pipe folder, the libraries and the variables', () => {
    const share = mpsShareOf(pod('a'), GPUS);
    const pipe = '/run/tf/uid-a/pipe';
    // GPU-b is index 1 but minor 0: the node is /dev/nvidia0.
    const host = {
      minors: new Map([
        ['GPU-a', 1],
        ['GPU-b', 0],
      ]),
      devRoot: '/host-dev',
      exists: (p: string) => p !== '/host-dev/nvidia-uvm-tools',
      libraries: [
        {
          hostPath: '/usr/lib64/libcuda.so.580.1',
          containerPaths: ['/usr/local/nvidia/lib64/libcuda.so.580.1', '/usr/local/nvidia/lib64/libcuda.so.1'],
        },
      ],
    };
    expect(shareEdits(share, pipe, host)).toEqual({
      env: [
        `CUDA_MPS_PIPE_DIRECTORY=${pipe}`,
        'NVIDIA_VISIBLE_DEVICES=void',
        'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M',
        'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=7',
      ],
      deviceNodes: ['nvidiactl', 'nvidia-uvm', 'nvidia0'].map((n) => ({
        path: `/dev/${n}`,
        hostPath: `/host-dev/${n}`,
        permissions: 'rw',
      })),
      mounts: [
        { hostPath: pipe, containerPath: pipe, options: ['rw', 'nosuid', 'nodev', 'bind'] },
        { hostPath: pipe, containerPath: '/tmp/nvidia-mps', options: ['rw', 'nosuid', 'nodev', 'bind'] },
        {
          hostPath: '/usr/lib64/libcuda.so.580.1',
          containerPath: '/usr/local/nvidia/lib64/libcuda.so.580.1',
          options: ['ro', 'nosuid', 'nodev', 'bind'],
        },
        {
          hostPath: '/usr/lib64/libcuda.so.580.1',
          containerPath: '/usr/local/nvidia/lib64/libcuda.so.1',
          options: ['ro', 'nosuid', 'nodev', 'bind'],
        },
      ],
    });
  });

  test('refuses a GPU whose device minor the driver does not list, rather than guessing', () => {
    const share = mpsShareOf(pod('a'), GPUS);
    expect(() => shareEdits(share, '/p', { minors: new Map(), devRoot: '/dev', exists: () => true, libraries: [] })).toThrow(
      "share of pod ml/a: no device minor for GPU GPU-b (the driver's /proc/driver/nvidia/gpus lists none for it)",
    );
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

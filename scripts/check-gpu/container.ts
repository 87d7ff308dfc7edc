/**
 * A client started the way the container runtime starts a share's container from a CDI spec: its
 * own mount namespace with a /dev holding only the spec's device nodes (and the usual null, zero,
 * random), a size-bounded /dev/shm, the spec's mounts (the share's pipe folder) and variables, and
 * the pod's uid. The edits are the agent's own (lib/runtime/agent/share/container-edits.ts, what its
 * CDI writer writes); `ContainerSpec` is the part of them this launch applies. The driver's libraries
 * are left out: the client is a host process, which finds them where the driver put them.
 */
import { join } from 'node:path';
import type { MpsShare, ShareDirs } from '../../lib/runtime/agent/mps/supervisor';
import { shareEdits } from '../../lib/runtime/agent/share/container-edits';

/** The part of a CDI spec's container edits a launch applies. */
export interface ContainerSpec {
  readonly env: Readonly<Record<string, string>>;
  /** Bind mounts: host path to container path. */
  readonly mounts: readonly { readonly hostPath: string; readonly containerPath: string }[];
  /** Device nodes by name under /dev (`nvidia0`, `nvidiactl`, ...), taken from `devDir` on the host. */
  readonly deviceNodes: readonly string[];
  /** Size of the container's /dev/shm, bytes. */
  readonly shmBytes: number;
}

/** The container's /dev/shm size in the check (a pod's default, 64 MiB). */
const SHM_BYTES = 64 * 2 ** 20;
/** Nodes every container has besides its devices. */
const BASE_NODES = ['null', 'zero', 'random', 'urandom'];

/**
 * A share's container as the agent's CDI spec makes it: its variables (the pipe folder, the
 * informational limits), the pipe folder mounted at the same path and at CUDA's default, and the
 * GPUs' device nodes by their minor numbers (`minors[i]` for the share's GPU i) plus the driver's
 * control nodes.
 */
export function shareContainer(share: MpsShare, dirs: ShareDirs, minors: readonly number[]): ContainerSpec {
  const edits = shareEdits(share, dirs.pipeDir, {
    minors: new Map(share.gpuUuids.map((uuid, i) => [uuid, minors[i]])),
    devRoot: '/dev',
    exists: () => true, // the launch skips the nodes the host lacks
    libraries: [],
  });
  return {
    env: Object.fromEntries(edits.env.map((e) => e.split(/=(.*)/s).slice(0, 2))),
    mounts: edits.mounts.map((m) => ({ hostPath: m.hostPath, containerPath: m.containerPath })),
    deviceNodes: edits.deviceNodes.map((n) => n.path.replace(/^\/dev\//, '')),
    shmBytes: SHM_BYTES,
  };
}

/**
 * The command line (for `unshare`) that starts `argv` in the container `spec` describes, as host
 * `uid` (dropped by the client itself, after the mounts, through $CHECK_GPU_AS_UID). Device nodes
 * missing on the host are skipped (nvidia-uvm-tools is optional). `stage` is a folder of the check's
 * own where the host's /dev is seen while the container's is built.
 */
export function launchArgs(spec: ContainerSpec, devDir: string, stage: string, argv: readonly string[]): string[] {
  const hostDev = join(stage, 'dev');
  const gpuDev = join(stage, 'gpu');
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const node = (from: string, name: string) =>
    `if [ -e ${q(join(from, name))} ]; then touch /dev/${name} && mount --bind ${q(join(from, name))} /dev/${name}; fi`;
  const script = [
    'set -e',
    `mkdir -p ${q(hostDev)} ${q(gpuDev)}`,
    `mount --bind /dev ${q(hostDev)}`,
    `mount --bind ${q(devDir)} ${q(gpuDev)}`,
    'mount -t tmpfs -o mode=755,size=1m tmpfs /dev',
    ...BASE_NODES.map((n) => node(hostDev, n)),
    ...spec.deviceNodes.map((n) => node(gpuDev, n)),
    `mkdir /dev/shm && mount -t tmpfs -o size=${spec.shmBytes},mode=1777 tmpfs /dev/shm`,
    ...spec.mounts.map((m) => `mkdir -p ${q(m.containerPath)} && mount --bind ${q(m.hostPath)} ${q(m.containerPath)}`),
    `exec ${argv.map(q).join(' ')}`,
  ].join('\n');
  return ['--mount', '--propagation', 'private', '--', 'sh', '-c', script];
}

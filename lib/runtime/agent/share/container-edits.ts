/**
 * What a container of a share gets, as neutral container edits (the CDI writer turns them into a
 * spec; both front doors use them): the share's GPU device nodes by their real minor numbers, the
 * driver's control nodes, its daemon's pipe folder (also at CUDA's default pipe folder, so a process
 * that unsets CUDA_MPS_PIPE_DIRECTORY still reaches its share's daemon and limits), the driver's
 * libraries, and the variables that point CUDA at the daemon.
 *
 * No /dev/shm: MPS clients reach their daemon from any /dev/shm on driver 580 (measured on an H200,
 * ../shared/gpu/h200-driver-580), so the container keeps the runtime's own size-bounded one (or the
 * pod's emptyDir) and nothing of the pod's lands on the host's /run.
 */
import { mpsMemoryLimit, NVIDIA_ENV } from '../../shared/pod-share/container-env';
import type { CdiDeviceNode, CdiMount, ContainerEdits } from '../cdi/spec';
import type { DriverLibrary } from '../host/driver-libraries';
import type { MpsShare } from '../mps/supervisor';

/** Where a CUDA process looks for an MPS daemon when CUDA_MPS_PIPE_DIRECTORY is unset. */
export const DEFAULT_PIPE_DIRECTORY = '/tmp/nvidia-mps';

/** The device nodes a CUDA process needs besides its GPUs'; nvidia-uvm-tools is absent on some hosts. */
export const CONTROL_DEVICES = ['nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools'] as const;

/**
 * `void`: where the NVIDIA container toolkit is the runtime, it adds no GPU of its own, whatever the
 * image's NVIDIA_VISIBLE_DEVICES says (CUDA images say `all`): the share's devices come from this spec only.
 */
export const TOOLKIT_NO_DEVICES = 'void';

/** What the host provides for a share's containers. */
export interface ShareHost {
  /** Device minor by GPU UUID (host/gpu-minors.ts). */
  readonly minors: ReadonlyMap<string, number>;
  /** The host's device folder (`/dev`). */
  readonly devRoot: string;
  /** Whether a host path exists (a control node may be missing). */
  readonly exists: (path: string) => boolean;
  /** The driver's libraries (host/driver-libraries.ts). */
  readonly libraries: readonly DriverLibrary[];
}

/**
 * The container edits of a share whose daemon's pipe folder is `pipeDir`.
 * @throws Error when a GPU's device minor is unknown: the container must not start with a guess
 */
export function shareEdits(share: MpsShare, pipeDir: string, host: ShareHost): ContainerEdits {
  const gpuNodes = share.gpuUuids.map((uuid) => {
    const minor = host.minors.get(uuid);
    if (minor === undefined)
      throw new Error(
        `share of pod ${share.pod}: no device minor for GPU ${uuid} (the driver's /proc/driver/nvidia/gpus lists none for it)`,
      );
    return `nvidia${minor}`;
  });
  const deviceNodes: CdiDeviceNode[] = [...CONTROL_DEVICES.filter((n) => host.exists(`${host.devRoot}/${n}`)), ...gpuNodes].map((n) => ({
    path: `/dev/${n}`,
    hostPath: `${host.devRoot}/${n}`,
    permissions: 'rw',
  }));
  const rw = ['rw', 'nosuid', 'nodev', 'bind'];
  const ro = ['ro', 'nosuid', 'nodev', 'bind'];
  const mounts: CdiMount[] = [
    { hostPath: pipeDir, containerPath: pipeDir, options: rw },
    { hostPath: pipeDir, containerPath: DEFAULT_PIPE_DIRECTORY, options: rw },
    ...host.libraries.flatMap((l) => l.containerPaths.map((containerPath) => ({ hostPath: l.hostPath, containerPath, options: ro }))),
  ];
  return {
    env: [
      `CUDA_MPS_PIPE_DIRECTORY=${pipeDir}`,
      `${NVIDIA_ENV.visibleDevices}=${TOOLKIT_NO_DEVICES}`,
      // Informational: the daemon holds the limits whatever a process sets.
      `${NVIDIA_ENV.mpsMemLimit}=${mpsMemoryLimit(share.gpuUuids.length, share.vramLimitBytes)}`,
      `${NVIDIA_ENV.mpsThreads}=${share.threadPercentage}`,
    ],
    deviceNodes,
    mounts,
  };
}

/**
 * Which pod a device-plugin Allocate is for, and what its container gets. The kubelet's Allocate
 * names device ids only, not the pod; it admits one pod at a time and allocates for each of its
 * containers that requests the share resource. So the pod is the one bound to this node, holding a
 * share, not yet running, with containers left to allocate: of several, the one bound first. The
 * kubelet receives pods in the order of its watch, which is the order of their binds, and a pod
 * not yet admitted has had no write since its bind, so its resourceVersion orders the binds; the
 * seconds of creation and scheduling times tie in any burst (a bench of 30 pods found that order
 * by name wrong).
 */
import { gpuIndexOf } from '../../model/gpu-object';
import { PLACEMENT_ANNOTATIONS, SHARE_RESOURCE } from '../../model/metadata-keys';
import type { K8sObject } from '../kube/cluster';
import { allocationOf } from '../shared/pod-share/record';
import { mpsMemoryLimit, NVIDIA_ENV } from '../shared/pod-share/container-env';
import type { ContainerAllocateResponse } from './device-plugin/api';
import type { MpsShare, ShareDirs } from './mps/supervisor';
import type { SmiGpu } from './nvidia-smi';

type PodLike = K8sObject & {
  spec?: { containers?: ContainerLike[]; initContainers?: ContainerLike[] };
  status?: { phase?: string; conditions?: { type: string; lastTransitionTime?: string }[] };
};
interface ContainerLike {
  name: string;
  resources?: { limits?: Record<string, unknown> };
}

/** How many of the pod's containers (init ones included) request the share resource. */
export function shareContainers(pod: PodLike): number {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.filter((c) => c.resources?.limits?.[SHARE_RESOURCE] !== undefined).length;
}

/** The pod the kubelet is allocating for, given how many containers of each pod (by uid) were served. */
export function nextClaim(pods: readonly PodLike[], served: ReadonlyMap<string, number>): PodLike | undefined {
  // resourceVersion is opaque by contract but etcd's revision in practice: compared as numbers, with
  // the name as a last tie-break for anything else.
  const rv = (p: PodLike) => Number(p.metadata.resourceVersion) || Number.MAX_SAFE_INTEGER;
  return pods
    .filter(
      (p) =>
        p.metadata.uid &&
        !p.metadata.deletionTimestamp &&
        (p.status?.phase ?? 'Pending') === 'Pending' &&
        allocationOf(p) &&
        (served.get(p.metadata.uid) ?? 0) < shareContainers(p),
    )
    .sort(
      (a, b) => rv(a) - rv(b) || (`${a.metadata.namespace}/${a.metadata.name}` < `${b.metadata.namespace}/${b.metadata.name}` ? -1 : 1),
    )[0];
}

/**
 * The MPS share of a pod: its GPUs' UUIDs from the node's nvidia-smi inventory, and the per-container
 * limits the bind wrote (`tensor-fusion.ai/mps-memory-limit`, `.../mps-thread-percentage`).
 * @throws Error naming what is missing or unknown
 */
export function mpsShareOf(pod: PodLike, gpus: readonly SmiGpu[]): MpsShare {
  const a = allocationOf(pod);
  const name = `${pod.metadata.namespace}/${pod.metadata.name}`;
  if (!a) throw new Error(`pod ${name} holds no GPU share record`);
  const uuids = a.gpuIds.map((id) => {
    const index = gpuIndexOf(id);
    const gpu = gpus.find((g) => g.index === index);
    if (!gpu)
      throw new Error(
        `pod ${name}: GPU ${id} is not on this node (nvidia-smi lists indexes ${gpus.map((g) => g.index).join(', ') || 'none'})`,
      );
    return gpu.uuid;
  });
  const annotations = pod.metadata.annotations ?? {};
  const mem = /^\d+=(\d+)M/.exec(annotations[PLACEMENT_ANNOTATIONS.mpsMemoryLimit] ?? '');
  const pct = Number(annotations[PLACEMENT_ANNOTATIONS.mpsThreadPercentage]);
  if (!mem || !(pct >= 1 && pct <= 100))
    throw new Error(
      `pod ${name}: no MPS limits in ${PLACEMENT_ANNOTATIONS.mpsMemoryLimit} and ${PLACEMENT_ANNOTATIONS.mpsThreadPercentage}`,
    );
  return {
    id: a.id,
    pod: name,
    gpuUuids: uuids,
    vramLimitBytes: Number(mem[1]) * 2 ** 20,
    threadPercentage: pct,
    containers: Math.max(1, shareContainers(pod)),
  };
}

/** Where a CUDA process looks for an MPS daemon when CUDA_MPS_PIPE_DIRECTORY is unset. */
export const DEFAULT_PIPE_DIRECTORY = '/tmp/nvidia-mps';

/** The device nodes a CUDA process needs besides its GPUs'; nvidia-uvm-tools is absent on some hosts. */
export const CONTROL_DEVICES = ['nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools'] as const;

/**
 * What the kubelet adds to the container: the share's GPU device nodes (of those `exists` finds
 * under `devRoot`), its daemon's pipe folder at the same path and its shm folder as /dev/shm, and
 * the variables that point CUDA at them. NVIDIA_VISIBLE_DEVICES lets the NVIDIA container toolkit,
 * where installed, add the driver's libraries for those GPUs. The MPS limit variables are
 * informational: the daemon holds the limits whatever they say.
 */
export function containerResponse(
  share: MpsShare,
  dirs: ShareDirs,
  gpus: readonly SmiGpu[],
  devRoot: string,
  exists: (path: string) => boolean,
): ContainerAllocateResponse {
  const indexes = share.gpuUuids.map((u) => gpus.find((g) => g.uuid === u)!.index);
  // The device minor number is the driver's index on every host seen; NVML would say for sure.
  const names = [...CONTROL_DEVICES, ...indexes.map((i) => `nvidia${i}`)];
  return {
    envs: {
      CUDA_MPS_PIPE_DIRECTORY: dirs.pipeDir,
      [NVIDIA_ENV.visibleDevices]: share.gpuUuids.join(','),
      [NVIDIA_ENV.mpsMemLimit]: mpsMemoryLimit(share.gpuUuids.length, share.vramLimitBytes),
      [NVIDIA_ENV.mpsThreads]: String(share.threadPercentage),
    },
    mounts: [
      { container_path: dirs.pipeDir, host_path: dirs.pipeDir, read_only: false },
      // Also at CUDA's default pipe folder: a process that unsets CUDA_MPS_PIPE_DIRECTORY still
      // reaches its share's daemon and its limits.
      { container_path: DEFAULT_PIPE_DIRECTORY, host_path: dirs.pipeDir, read_only: false },
      { container_path: '/dev/shm', host_path: dirs.shmDir, read_only: false },
    ],
    devices: names
      .map((n) => `${devRoot}/${n}`)
      .filter(exists)
      .map((host) => ({ container_path: `/dev/${host.split('/').pop()}`, host_path: host, permissions: 'rw' })),
  };
}

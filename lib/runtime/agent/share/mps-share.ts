/**
 * The MPS share a pod's record asks for: its GPUs' UUIDs on this node and the per-container limits the
 * extender's bind wrote. Read by both front doors (the device plugin, DRA) once the kubelet has named
 * the pod; nothing here guesses which pod a request is for.
 */
import { gpuIndexOf } from '../../../model/gpu-object';
import { PLACEMENT_ANNOTATIONS, SHARE_RESOURCE } from '../../../model/metadata-keys';
import type { K8sObject } from '../../kube/cluster';
import { allocationOf } from '../../shared/pod-share/record';
import type { MpsShare } from '../mps/supervisor';
import type { SmiGpu } from '../nvidia-smi';

export type PodLike = K8sObject & {
  spec?: { nodeName?: string; containers?: ContainerLike[]; initContainers?: ContainerLike[] };
  status?: { phase?: string };
};
interface ContainerLike {
  name: string;
  resources?: { limits?: Record<string, unknown> };
}

/** The pod's containers (init ones included) that request the share resource. */
export function shareContainerNames(pod: PodLike): string[] {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.filter((c) => c.resources?.limits?.[SHARE_RESOURCE] !== undefined).map((c) => c.name);
}

/** How many of the pod's containers (init ones included) request the share resource. */
export function shareContainers(pod: PodLike): number {
  return shareContainerNames(pod).length;
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

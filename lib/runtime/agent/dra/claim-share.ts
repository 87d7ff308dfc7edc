/**
 * The MPS share a prepared ResourceClaim becomes: the claim names its devices (our driver's results
 * on this node's pool) and its pod (`status.reservedFor`); the pod's share record (the webhook's
 * `tensor-fusion.ai/share` annotation) gives the limits, as on the device-plugin path. A claim whose
 * pod has no record (made without our webhook) is held to what it consumed: its `consumedCapacity`.
 * Pure: the door reads the claim and the pod.
 */
import { DRA_CAPACITY, DRA_POD_CLAIM } from '../../../model/dra';
import { ClaimResult, ourResults, ResourceClaim } from '../../shared/dra/claim-results';
import { deviceIndex as publishedIndex } from '../../shared/dra/resource-slice';
import { parseQuantity } from '../../../k8s/quantity';
import type { K8sObject } from '../../kube/cluster';
import { mpsParts, shareOf } from '../../shared/share';
import { mpsThreadPercentage } from '../../shared/pod-share/container-env';
import type { MpsShare } from '../mps/supervisor';
import type { SmiGpu } from '../nvidia-smi';

/** A pod as the door reads it: its record, and which containers name the claim. */
export type ClaimPod = K8sObject & {
  spec?: {
    nodeName?: string;
    containers?: ContainerLike[];
    initContainers?: ContainerLike[];
    resourceClaims?: Array<{ name: string }>;
  };
};
interface ContainerLike {
  name: string;
  resources?: { claims?: Array<{ name: string }> };
}

/** `ns/name` of an object, for messages. */
export const named = (o: K8sObject): string => `${o.metadata.namespace}/${o.metadata.name}`;

/** Our driver's results of `claim` on this node's pool (`node`): the devices to prepare. */
export function nodeResults(claim: ResourceClaim, node: string): ClaimResult[] {
  return ourResults(claim).filter((r) => r.pool === node);
}

/** The one pod a claim is reserved for. @throws Error when it is reserved for none or several */
export function reservedPod(claim: ResourceClaim): { name: string; uid: string } {
  const pods = (claim.status?.reservedFor ?? []).filter((r) => (r.resource ?? 'pods') === 'pods');
  if (pods.length !== 1)
    throw new Error(
      `claim ${named(claim)} is reserved for ${pods.length} pods (${pods.map((p) => p.name).join(', ') || 'none'}): a GPU share is one pod's`,
    );
  return pods[0];
}

/** The GPU index of a device we published (`gpu-<index>`). */
function deviceIndex(claim: ResourceClaim, device: string): number {
  const index = publishedIndex(device);
  if (index === undefined) throw new Error(`claim ${named(claim)}: device ${device} is not one this driver publishes (gpu-<index>)`);
  return index;
}

/** The least of a capacity over the results (each GPU of a share holds the same amount). */
function consumed(claim: ResourceClaim, results: ClaimResult[], key: string): number {
  const values = results.map((r) => parseQuantity(r.consumedCapacity?.[key] ?? '') ?? NaN);
  if (values.some((v) => !(v > 0)))
    throw new Error(`claim ${named(claim)}: a device result has no consumedCapacity.${key} (the allocation did not consume capacity)`);
  return Math.min(...values);
}

/**
 * The share of `pod` for `claim`'s devices on this node: its GPUs (by the device names' indices,
 * from nvidia-smi), its per-container limits and its id (the pod's UID, as on the device-plugin path,
 * so the supervision round ends it with the pod).
 * @param tflopsOf the physical TFLOPS of a GPU (0 when unknown: a limit of 100 %)
 * @throws Error naming the claim and what is wrong
 */
export function claimShare(
  claim: ResourceClaim,
  pod: ClaimPod,
  results: ClaimResult[],
  gpus: readonly SmiGpu[],
  tflopsOf: (gpu: SmiGpu) => number,
): MpsShare {
  const onNode = results.map((r) => {
    const index = deviceIndex(claim, r.device);
    const gpu = gpus.find((g) => g.index === index);
    if (!gpu)
      throw new Error(
        `claim ${named(claim)}: device ${r.device} is not on this node (nvidia-smi lists indexes ${gpus.map((g) => g.index).join(', ') || 'none'})`,
      );
    return gpu;
  });
  const record = shareOf(pod);
  const parts = record ? mpsParts(record) : Math.max(1, claimContainers(pod).length);
  const tflops = record ? record.tflopsLimit : consumed(claim, results, DRA_CAPACITY.tflops);
  const vram = record ? record.vramLimit : consumed(claim, results, DRA_CAPACITY.vram);
  const smallest = Math.min(...onNode.map(tflopsOf));
  return {
    id: pod.metadata.uid!,
    pod: named(pod),
    gpuUuids: onNode.map((g) => g.uuid),
    vramLimitBytes: Math.floor(vram / parts),
    threadPercentage: Number(mpsThreadPercentage(tflops / parts, smallest)),
    containers: Math.max(1, claimContainers(pod).length),
  };
}

/** The pod's containers (init ones included) that hold its share's claim. */
export function claimContainers(pod: ClaimPod): string[] {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.filter((c) => (c.resources?.claims ?? []).some((k) => k.name === DRA_POD_CLAIM)).map((c) => c.name);
}

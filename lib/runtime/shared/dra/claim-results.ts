/**
 * What an allocated ResourceClaim (resource.k8s.io/v1) holds of our GPUs: kube-scheduler's allocator
 * writes one result per device in `status.allocation.devices.results`, naming the slice's pool (the
 * node, lib/runtime/shared/dra/resource-slice.ts), the device (`gpu-<index>`) and the capacity it
 * consumed. The one reading of those results for the controller's GPU status, the pool view, `kubectl tf`
 * and the node agent.
 */
import { DRA_CAPACITY, DRA_DRIVER } from '../../../model/dra';
import { gpuName } from '../../../model/gpu-object';
import { parseQuantity } from '../../../k8s/quantity';
import type { K8sObject } from '../../kube/cluster';
import { addGpuUsage, GpuUsage } from '../capacity';
import { deviceIndex } from './resource-slice';

/** One device result of an allocated claim (the API requires all but the last two). */
export interface ClaimResult {
  request: string;
  driver: string;
  /** The slice's pool: for our driver, the node's name. */
  pool: string;
  device: string;
  shareID?: string;
  consumedCapacity?: Record<string, string | undefined>;
}

/** The parts of a ResourceClaim read here. */
export type ResourceClaim = K8sObject & {
  status?: {
    allocation?: { devices?: { results?: ClaimResult[] } };
    reservedFor?: Array<{ resource?: string; name: string; uid: string }>;
  };
};

/** Our driver's results of a claim (none before it is allocated). */
export function ourResults(claim: ResourceClaim): ClaimResult[] {
  return (claim.status?.allocation?.devices?.results ?? []).filter((r) => r.driver === DRA_DRIVER);
}

/** What one result holds: the GPU object it names and the TFLOPS and VRAM bytes it consumed. */
export interface HeldGpu {
  readonly node: string;
  /** The GPU's device index on its node. */
  readonly index: number;
  /** The GPU object's name (lib/model/gpu-object.ts). */
  readonly gpu: string;
  readonly tflops: number;
  readonly vram: number;
}

/** The GPU a result of ours holds, or undefined for a device name we never publish. */
export function heldGpu(r: ClaimResult): HeldGpu | undefined {
  const index = deviceIndex(r.device);
  if (index === undefined) return undefined;
  const amount = (key: string) => parseQuantity(r.consumedCapacity?.[key] ?? 0) ?? 0;
  return { node: r.pool, index, gpu: gpuName(r.pool, index), tflops: amount(DRA_CAPACITY.tflops), vram: amount(DRA_CAPACITY.vram) };
}

/** The GPUs a claim holds, one per result of ours. */
export function claimGpus(claim: ResourceClaim): HeldGpu[] {
  return ourResults(claim)
    .map(heldGpu)
    .filter((g): g is HeldGpu => g !== undefined);
}

/** The nodes a claim holds GPUs on (the claims cache's node index). */
export function claimNodes(claim: ResourceClaim): string[] {
  return [...new Set(claimGpus(claim).map((g) => g.node))];
}

/**
 * The pod a claim belongs to (in the claim's namespace): the Pod owning it (the resourceclaim
 * controller makes a pod's claim from its template with the pod as controller), else the one pod it
 * is reserved for.
 */
export function claimPod(claim: ResourceClaim): { name: string; uid: string } | undefined {
  const owner = claim.metadata.ownerReferences?.find((o) => o.kind === 'Pod' && o.controller);
  if (typeof owner?.uid === 'string' && typeof owner.name === 'string') return { name: owner.name, uid: owner.uid };
  const pods = (claim.status?.reservedFor ?? []).filter((r) => (r.resource ?? 'pods') === 'pods');
  return pods.length === 1 ? { name: pods[0].name, uid: pods[0].uid } : undefined;
}

/** The UID of the pod a claim belongs to ({@link claimPod}). */
export function claimPodUid(claim: ResourceClaim): string | undefined {
  return claimPod(claim)?.uid;
}

/**
 * TFLOPS and VRAM consumed and shares held per GPU object name, as kube-scheduler counts them: every
 * allocated claim holds what it consumed until it is deallocated, whatever its pod's phase.
 */
export function usageFromClaims(claims: Iterable<ResourceClaim>): GpuUsage {
  const usage: GpuUsage = new Map();
  for (const c of claims) for (const g of claimGpus(c)) addGpuUsage(usage, g.gpu, g.tflops, g.vram);
  return usage;
}

/**
 * What the controller caches of a claim (the informer's transform, as slimPod for pods): its identity,
 * its Pod owner, its reservations and our driver's results; other drivers' results and the spec are
 * never read.
 */
export function slimClaim(claim: ResourceClaim): ResourceClaim {
  const m = claim.metadata;
  const owners = m.ownerReferences?.filter((o) => o.kind === 'Pod');
  const results = ourResults(claim).map(({ request, driver, pool, device, shareID, consumedCapacity }) => ({
    request,
    driver,
    pool,
    device,
    shareID,
    consumedCapacity,
  }));
  return {
    apiVersion: claim.apiVersion,
    kind: claim.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      deletionTimestamp: m.deletionTimestamp,
      ...(owners?.length ? { ownerReferences: owners } : {}),
    },
    status: {
      ...(results.length ? { allocation: { devices: { results } } } : {}),
      ...(claim.status?.reservedFor ? { reservedFor: claim.status.reservedFor } : {}),
    },
  };
}

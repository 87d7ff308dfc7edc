/**
 * The share request the webhook resolves for a pod and records in its {@link SHARE_ANNOTATION}, and
 * the scheduler extender reads back to place it: the contract between the two halves of placement.
 * Plain JSON with whole bytes, so that both read the same numbers.
 */
import { ENABLED_LABEL, SHARE_ANNOTATION, SHARE_RESOURCE } from '../../model/metadata-keys';
import type { QosLevel } from '../../model/rules';
import type { AllocationRequest } from '../../allocator';
import type { K8sObject } from '../kube/cluster';

export interface ShareRequest {
  readonly pool: string;
  readonly qos: QosLevel;
  /** GPUs on one node (>= 1). */
  readonly gpuCount: number;
  /** Per-GPU TFLOPS. */
  readonly tflopsRequest: number;
  readonly tflopsLimit: number;
  /** Per-GPU VRAM in whole bytes. */
  readonly vramRequest: number;
  readonly vramLimit: number;
  /** Allowed GPU model, if the pod or its profile names one. */
  readonly gpuModel?: string;
  /** Device indices the GPUs must have on their node (`gpu-indices`), if given. */
  readonly gpuIndices?: readonly number[];
  /**
   * Inject-containers sharing the share, when more than one: each gets an equal part of the MPS
   * limits written at bind (see {@link mpsParts}).
   */
  readonly containers?: number;
}

const QOS: readonly string[] = ['low', 'medium', 'high', 'critical'];

function positive(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

/** The annotation value for a share. */
export function encodeShare(s: ShareRequest): string {
  return JSON.stringify({
    pool: s.pool,
    qos: s.qos,
    gpuCount: s.gpuCount,
    tflopsRequest: s.tflopsRequest,
    tflopsLimit: s.tflopsLimit,
    vramRequest: Math.ceil(s.vramRequest),
    vramLimit: Math.ceil(s.vramLimit),
    ...(s.gpuModel !== undefined ? { gpuModel: s.gpuModel } : {}),
    ...(s.gpuIndices !== undefined ? { gpuIndices: s.gpuIndices } : {}),
    ...(s.containers !== undefined && s.containers > 1 ? { containers: s.containers } : {}),
  });
}

/**
 * Whether the pod opted in (`tensor-fusion.ai/enabled: "true"`). Only such pods pass the webhook, and
 * only they are guarded by the integrity policy (its object selector), so records on any other pod
 * were never checked by us and count for nothing.
 */
export function isOptedIn(pod: K8sObject): boolean {
  return pod.metadata?.labels?.[ENABLED_LABEL] === 'true';
}

/**
 * Whether the pod's share is delivered by the node agent (`hard` isolation): a container holds the
 * share resource, and the pod's limits live in its MPS daemon rather than in its environment.
 */
export function deliveredByAgent(pod: K8sObject): boolean {
  type Container = { resources?: { limits?: Record<string, unknown> } };
  const spec = pod.spec as { containers?: Container[]; initContainers?: Container[] } | undefined;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].some((c) => c.resources?.limits?.[SHARE_RESOURCE] !== undefined);
}

/**
 * The share recorded on an opted-in pod, or undefined when it has none, it does not parse (never
 * written by us) or the pod did not opt in.
 */
export function shareOf(pod: K8sObject): ShareRequest | undefined {
  if (!isOptedIn(pod)) return undefined;
  const text = pod.metadata?.annotations?.[SHARE_ANNOTATION];
  if (typeof text !== 'string') return undefined;
  try {
    const s = JSON.parse(text) as Record<string, unknown>;
    if (typeof s.pool !== 'string' || !QOS.includes(s.qos as string) || !Number.isInteger(s.gpuCount) || (s.gpuCount as number) < 1)
      return undefined;
    if (![s.tflopsRequest, s.tflopsLimit, s.vramRequest, s.vramLimit].every(positive)) return undefined;
    if (s.gpuModel !== undefined && typeof s.gpuModel !== 'string') return undefined;
    if (s.gpuIndices !== undefined && !(Array.isArray(s.gpuIndices) && s.gpuIndices.every((i) => Number.isInteger(i) && i >= 0)))
      return undefined;
    if (s.containers !== undefined && !(Number.isInteger(s.containers) && (s.containers as number) >= 1)) return undefined;
    return s as unknown as ShareRequest;
  } catch {
    return undefined;
  }
}

/**
 * The allocator request for a pod's share; the allocation id is the pod's UID. With the pod's CPU
 * and memory requests, placement also keeps to what the node has left of those.
 */
export function allocationRequest(uid: string, s: ShareRequest, requests?: { cpu: number; memory: number }): AllocationRequest {
  return {
    id: uid,
    pool: s.pool,
    qos: s.qos,
    gpuCount: s.gpuCount,
    ...(requests ? { cpu: requests.cpu, memory: requests.memory } : {}),
    tflopsRequest: s.tflopsRequest,
    tflopsLimit: s.tflopsLimit,
    vramRequest: s.vramRequest,
    vramLimit: s.vramLimit,
    ...(s.gpuModel !== undefined ? { gpuModel: s.gpuModel } : {}),
    ...(s.gpuIndices !== undefined ? { gpuIndices: s.gpuIndices } : {}),
  };
}

/** The allocator request for a pod of our scheduler without a share: its CPU and memory in `pool`, no GPU. */
export function cpuOnlyRequest(uid: string, pool: string, requests: { cpu: number; memory: number }): AllocationRequest {
  return { id: uid, pool, qos: 'low', gpuCount: 0, tflopsRequest: 0, vramRequest: 0, cpu: requests.cpu, memory: requests.memory };
}

/**
 * How many parts the MPS limits of a share are cut into: one per inject-container, since each
 * container's processes are MPS clients with their own limits and together they must stay within the
 * share's. A share recorded before this field has one part.
 */
export function mpsParts(s: Pick<ShareRequest, 'containers'> | undefined): number {
  return s?.containers !== undefined && s.containers > 1 ? s.containers : 1;
}

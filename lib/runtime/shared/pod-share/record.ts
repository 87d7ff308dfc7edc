/**
 * The allocation as the pod records it: written at bind, in the Binding's annotations (so it reaches
 * the pod atomically with `spec.nodeName`), read back after a restart or failover. The record names
 * the pod UID: a pod created from a copy of another's YAML carries a record with a foreign id, which
 * holds nothing.
 */
import { ALLOCATION_ANNOTATION, GPU_IDS_ANNOTATION, PLACEMENT_ANNOTATIONS } from '../../../model/metadata-keys';
import type { Allocation } from '../../../allocator';
import type { K8sObject } from '../../kube/cluster';
import { isOptedIn } from '../share';
import { mpsMemoryLimit, mpsThreadPercentage } from './container-env';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The allocation a pod holds: its record, when it parses and names this pod's UID, on a pod that opted in. */
export function allocationOf(pod: K8sObject): Allocation | undefined {
  if (!isOptedIn(pod)) return undefined;
  const text = pod.metadata?.annotations?.[ALLOCATION_ANNOTATION];
  const uid = pod.metadata?.uid;
  if (typeof text !== 'string' || !uid) return undefined;
  try {
    const a = JSON.parse(text) as unknown;
    if (!isObject(a) || a.id !== uid || typeof a.pool !== 'string' || typeof a.node !== 'string' || !Array.isArray(a.gpuIds))
      return undefined;
    return a as unknown as Allocation;
  } catch {
    return undefined;
  }
}

/** What the devices are called inside the pod, and the smallest GPU's TFLOPS, per GPU object name. */
export interface DeviceInfo {
  device: string;
  tflops: number;
}

/**
 * The annotations a Binding carries: the record, the GPU object names, and the values the
 * containers' downward-API variables read (NVIDIA_VISIBLE_DEVICES, the MPS limits, the allocation id).
 * Every inject-container reads the same MPS values, so with `parts` containers each gets the share's
 * limits divided by `parts` (see mpsParts in lib/runtime/shared/share.ts).
 */
export function bindingAnnotations(a: Allocation, device: (gpu: string) => DeviceInfo | undefined, parts = 1): Record<string, string> {
  const infos = a.gpuIds.map(device);
  const smallest = Math.min(...infos.map((d) => d?.tflops ?? Infinity));
  return {
    [ALLOCATION_ANNOTATION]: JSON.stringify(a),
    [GPU_IDS_ANNOTATION]: a.gpuIds.join(','),
    [PLACEMENT_ANNOTATIONS.allocationId]: a.id,
    [PLACEMENT_ANNOTATIONS.visibleDevices]: a.gpuIds.map((id, i) => infos[i]?.device ?? id).join(','),
    [PLACEMENT_ANNOTATIONS.mpsMemoryLimit]: mpsMemoryLimit(a.gpuIds.length, a.vramLimit / parts),
    [PLACEMENT_ANNOTATIONS.mpsThreadPercentage]: mpsThreadPercentage(a.tflopsLimit / parts, Number.isFinite(smallest) ? smallest : 0),
  };
}

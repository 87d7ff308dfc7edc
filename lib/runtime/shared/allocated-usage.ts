/**
 * GPU usage as the controller's status reconcilers want it (`ControllerOptions.usage`), read from the
 * allocation records the scheduler extender writes onto pods at bind: the source of truth of what
 * runs on each GPU. Counted as the extender counts: a record names its pod's UID (a copy from another
 * pod holds nothing), and a terminating pod still holds its share until it is gone.
 */
import type { K8sObject } from '../kube/cluster';
import { allocationOf } from './pod-share/record';
import { isTerminal } from './pod-lifecycle';

export type AllocatedUsage = Map<string, { tflops: number; vram: number; pods: number }>;

/** Requested TFLOPS and VRAM and pod count per GPU object name. */
export function usageFromAllocations(pods: Iterable<K8sObject>): AllocatedUsage {
  const usage: AllocatedUsage = new Map();
  for (const pod of pods) {
    const a = allocationOf(pod);
    if (!a || isTerminal(pod)) continue;
    for (const gpu of a.gpuIds) {
      const u = usage.get(gpu) ?? { tflops: 0, vram: 0, pods: 0 };
      u.tflops += Number(a.tflopsRequest) || 0;
      u.vram += Number(a.vramRequest) || 0;
      u.pods++;
      usage.set(gpu, u);
    }
  }
  return usage;
}

/**
 * The device ids the device plugin advertises: neutral slots (`share-<n>`) that name no GPU, since the
 * kubelet hands any free id to any container whatever GPU its share is on. A node offers
 * `slotsPerGpu` per GPU whose isolation is ready; a not-ready GPU's slots are advertised unhealthy,
 * so the kubelet admits no more containers than the ready GPUs can hold.
 */
import { AGENT_DEFAULTS } from '../../../contract/agent';
import type { GpuReadiness } from '../mps/supervisor';
import type { SmiGpu } from '../nvidia-smi';
import { Device, HEALTHY, UNHEALTHY } from './api';

export function shareDevices(
  gpus: readonly SmiGpu[],
  ready: ReadonlyMap<string, GpuReadiness>,
  slotsPerGpu: number = AGENT_DEFAULTS.slotsPerGpu,
): Device[] {
  const healthy = gpus.filter((g) => ready.get(g.uuid)?.ready !== false).length * slotsPerGpu;
  return Array.from({ length: gpus.length * slotsPerGpu }, (_, n) => ({ ID: `share-${n}`, health: n < healthy ? HEALTHY : UNHEALTHY }));
}

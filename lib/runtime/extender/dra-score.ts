/**
 * What the allocator needs to score nodes for a pod of a DRA pool: the per-GPU request its claim
 * template asks for, and the devices kube-scheduler's allocator gave a claim (to count them). With
 * these, prioritize can rank nodes by fragmentation (lib/allocator) while kube-scheduler's DRA
 * allocator still picks the devices (first fit in the slice's order).
 */
import { DRA_CAPACITY, DRA_DRIVER, DRA_REQUEST } from '../../model/dra';
import { parseQuantity } from '../../k8s/quantity';
import type { ClaimDevices } from '../shared/dra/claim-template';

/** Per-GPU amounts of our request in a claim: TFLOPS and VRAM bytes (0 when not named). */
export interface ClaimShape {
  gpuCount: number;
  tflops: number;
  vram: number;
}

/** One allocated device of a claim and what the claim consumes of it. */
export interface ClaimResult {
  /** The slice pool (our agent names it after the node). */
  pool: string;
  device: string;
  tflops: number;
  vram: number;
}

/** A claim's status, as far as allocation goes. */
export interface ClaimStatus {
  allocation?: {
    devices?: {
      results?: Array<{ request: string; driver: string; pool: string; device: string; consumedCapacity?: Record<string, string> }>;
    };
  };
}

/** The shape of our request in a claim spec; undefined when the spec has none named {@link DRA_REQUEST}. */
export function claimShape(devices: ClaimDevices): ClaimShape | undefined {
  const r = devices.requests.find((q) => q.name === DRA_REQUEST)?.exactly;
  if (!r) return undefined;
  const amount = (key: string) => parseQuantity(r.capacity?.requests[key] ?? 0) ?? 0;
  return { gpuCount: r.count, tflops: amount(DRA_CAPACITY.tflops), vram: amount(DRA_CAPACITY.vram) };
}

/** The devices of our driver a claim was allocated, with the capacity each result consumes. */
export function claimResults(status: ClaimStatus | undefined): ClaimResult[] {
  return (status?.allocation?.devices?.results ?? [])
    .filter((r) => r.driver === DRA_DRIVER)
    .map((r) => ({
      pool: r.pool,
      device: r.device,
      tflops: parseQuantity(r.consumedCapacity?.[DRA_CAPACITY.tflops] ?? 0) ?? 0,
      vram: parseQuantity(r.consumedCapacity?.[DRA_CAPACITY.vram] ?? 0) ?? 0,
    }));
}

/**
 * What DRA claims hold of our GPUs, as allocations the extender's allocator counts: kube-scheduler's
 * allocator picks a DRA pod's GPUs and writes them in its claim's status (claim-results.ts reads
 * them), so the extender learns them from the claims cache, not from its own placements. One
 * allocation per allocated claim, held from allocation to deallocation or deletion, as kube-scheduler
 * counts it, with its pod's CPU and memory: one shape per pod, as the pool's learned workload mix
 * (MinFragmentation) must see it, not a GPU share of no CPU beside CPU of no GPU.
 */
import type { Allocation } from '../../allocator';
import { claimGpus, ResourceClaim } from '../shared/dra/claim-results';

/** The allocator id of a claim's allocation: apart from pod UIDs, which key every other allocation. */
export const claimAllocationId = (claimUid: string) => `claim/${claimUid}`;

/**
 * The allocation a claim holds on a node of a pool (`poolOf`: the pool of a node), with `requests`,
 * its pod's CPU and memory (none while the pod is not known, or finished); undefined before it is
 * allocated, for a claim of no GPU of ours, or on a node of no pool. Per-GPU amounts are what the
 * claim consumed of its first GPU: the one request of a claim consumes the same of each.
 */
export function claimAllocation(
  claim: ResourceClaim,
  poolOf: (node: string) => string | undefined,
  requests: { cpu: number; memory: number } = { cpu: 0, memory: 0 },
): Allocation | undefined {
  const uid = claim.metadata.uid;
  const gpus = claimGpus(claim).sort((a, b) => a.index - b.index);
  const node = gpus[0]?.node;
  const pool = node === undefined ? undefined : poolOf(node);
  if (!uid || pool === undefined) return undefined;
  const { tflops, vram } = gpus[0];
  return {
    id: claimAllocationId(uid),
    pool,
    node: node!,
    // A claim's devices come from one node's slice; a result naming another node is not counted here.
    gpuIds: gpus.filter((g) => g.node === node).map((g) => g.gpu),
    tflopsRequest: tflops,
    tflopsLimit: tflops,
    vramRequest: vram,
    vramLimit: vram,
    cpu: requests.cpu,
    memory: requests.memory,
    // Not read by placement.
    qos: 'medium',
  };
}

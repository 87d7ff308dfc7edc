/**
 * The GPU allocator: pure, deterministic, no I/O. The scheduler extender (lib/runtime/extender)
 * calls `allocate` and `release`, and `rebuild` from the pods' records after a pause; the status
 * reconcilers read `snapshot`, `nodeUsage`, `gpuUsage` and `poolUsage`.
 *
 * **What a GPU may hold.** For every GPU, at all times after `allocate`:
 * - the sum of TFLOPS *requests* never exceeds the GPU's physical TFLOPS;
 * - the sum of VRAM *requests* never exceeds the GPU's physical VRAM;
 * - the sum of TFLOPS *limits* never exceeds physical TFLOPS x `tflopsOversellRatio` / 100 of the
 *   node's pool (upstream default 500, i.e. limits may add up to 5x the GPU's compute). This is the
 *   only oversubscription: requests are guaranteed, limits are what a workload may burst to;
 * - VRAM limits are recorded (and shown in usage) but never block a placement, since the part above
 *   the request is not reserved on the device.
 * A multi-GPU request takes `gpuCount` distinct GPUs of one node, each with the same per-GPU
 * amounts; never GPUs of two nodes. Node CPU and memory, when declared, are hard limits.
 * `rebuild` restores allocations as they are, even beyond capacity (the pods already run).
 *
 * **How it chooses** (`PlacementMode` from lib/model/rules.ts, per pool or per request):
 * - `MinFragmentation` (default): FGD-style. The pool keeps a workload mix (configured, or learned
 *   from the requests it sees); a node's fragmentation is the free GPU share that typical requests
 *   of the mix could not use there: GPUs too small for them, or all of the node when it cannot host
 *   one, or (our addition) GPUs its remaining CPU or memory strands. A placement on a GPU model that
 *   model-restricted typical requests depend on also pays for that model's scarcity. The placement
 *   that lowers the sum most wins, on 100 levels (100 x sigmoid of the change in GPUs) as in FGD:
 *   finer scores chase noise and spread work.
 * - `CompactFirst`: binpack, the node with the least free GPU share after placement, fullest GPUs.
 * - `LowLoadFirst`: spread, the node with the largest free fraction after placement, emptiest GPUs.
 * - `NodeCompactGPULowLoad`: nodes as `CompactFirst`, GPUs within the node as `LowLoadFirst`.
 * Equal scores go to a rank derived from the seed and the node name (a fixed order, so ties pack
 * like first-fit): the same nodes, requests and seed always give the same placements.
 *
 * **Cost.** Each pool keeps one argmax tree per request shape (model filter, amounts, CPU, memory,
 * mode) over its nodes; a placement re-scores only the nodes changed since that shape was last
 * placed (O(changes x log n)), then reads the best node at the root. Failure reasons are counted
 * the same way: one pass the first time a shape fails, then only changed nodes. Up to 256 shapes per
 * pool keep their trees; the least recently used is rebuilt when it returns.
 */
export { Allocator } from './allocator';
export type { AllocatorOptions, Choice } from './allocator';
export { LearnedMixes } from './fragmentation';
export { DEFAULT_OVERSELL_RATIO, OVERSELL_MAX, OVERSELL_MIN } from '../model/limits';
export * from './types';

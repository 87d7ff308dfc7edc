/**
 * Per-node reasons in the words `kubectl describe pod` shows. kube-scheduler counts nodes per reason
 * string ("0/3 nodes are available: 3 not enough free VRAM on any GPU."), so a reason names no node.
 */
import type { PlacementReason } from '../../allocator';
import { BIND_UNCONFIRMED, noGpuOfModel, ROOM_REASONS } from '../shared/wait-reasons';

export { BIND_UNCONFIRMED };

function lacking(reasons: readonly PlacementReason[]): string[] {
  const out: string[] = [];
  for (const r of reasons) {
    if (r.kind === 'InsufficientVram') out.push('VRAM');
    else if (r.kind === 'InsufficientTflops') out.push('TFLOPS');
  }
  return out;
}

/** One line for one node that cannot take a share. */
export function nodeReason(reasons: readonly PlacementReason[], gpuCount: number): string {
  const first = reasons[0];
  if (!first) return 'no room for the GPU share';
  if (first.kind === 'NodeUnavailable') return `GPU node ${first.reason}`;
  if (first.kind === 'TflopsLimitAboveOversell') return first.message;
  if (first.kind === 'NoNodesInPool') return ROOM_REASONS.noGpusOfPool(first.pool);
  if (first.kind === 'NoGpuOfModel') return noGpuOfModel(first.models);
  const short = reasons.find((r) => r.kind === 'NotEnoughGpusOnOneNode');
  if (short && short.kind === 'NotEnoughGpusOnOneNode') return ROOM_REASONS.fewerGpus(gpuCount);
  const missing = lacking(reasons);
  if (missing.length > 0) return ROOM_REASONS.lacking(missing);
  if (reasons.some((r) => r.kind === 'TflopsOversellExceeded')) return ROOM_REASONS.oversold;
  if (reasons.some((r) => r.kind === 'InsufficientCpu' || r.kind === 'InsufficientMemory')) return ROOM_REASONS.cpuOrMemory;
  return first.message;
}

/** Kinds of a pod's wait that are not about a node, for `tf_pending_gpu_pods`. */
export const WAIT_KINDS = { bindUnconfirmed: 'BindUnconfirmed', overQuota: 'OverQuota', noRoom: 'NoRoom' } as const;

/**
 * The kind of the reason {@link nodeReason} words (InsufficientTflops, NoGpuOfModel, ...): a short label
 * value for metrics, where the words (with numbers and names) would make a series per pod.
 */
export function reasonKind(reasons: readonly PlacementReason[]): string {
  const first = reasons[0];
  if (!first) return WAIT_KINDS.noRoom;
  if (['NodeUnavailable', 'TflopsLimitAboveOversell', 'NoNodesInPool', 'NoGpuOfModel'].includes(first.kind)) return first.kind;
  const order = [
    'NotEnoughGpusOnOneNode',
    'InsufficientVram',
    'InsufficientTflops',
    'TflopsOversellExceeded',
    'InsufficientCpu',
    'InsufficientMemory',
  ];
  return order.find((k) => reasons.some((r) => r.kind === k)) ?? first.kind;
}

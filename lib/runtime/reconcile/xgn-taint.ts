/**
 * The xgn taint (T9k Scheduler's GPU modes): a node labelled `sched.tensorstack.dev/node-alloc-mode: xgn` carries
 * `sched.tensorstack.dev/xgn-mode=true:NoSchedule`; the taint goes when the label goes. `spec.taints`
 * is an atomic list under server-side apply, so we patch our one entry by index with a JSON patch whose
 * first op tests the resourceVersion: other owners' taints are never rewritten, and a concurrent change
 * makes the patch fail (then the node is re-read and the plan recomputed).
 */
import { T9K, XGN_TAINT } from '../../t9k/keys';
import type { JsonPatchOp } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';
import type { NodeLike } from '../shared/capacity';
import type { ReconcileContext } from './reconcile-context';

/** True when the node asks for exclusive-GPU mode. */
export function wantsXgnTaint(node: NodeLike): boolean {
  return node.metadata.labels?.[T9K.allocModeLabel] === 'xgn';
}

/**
 * The JSON patch that brings the node's taints in line with its label, or undefined when they already are.
 * Only taints with our key are added, fixed or removed.
 */
export function planXgnTaint(node: NodeLike): JsonPatchOp[] | undefined {
  const taints = node.spec?.taints ?? [];
  const want = wantsXgnTaint(node);
  const ours = taints.map((t, i) => ({ t, i })).filter(({ t }) => t.key === XGN_TAINT.key);
  const precondition: JsonPatchOp = { op: 'test', path: '/metadata/resourceVersion', value: node.metadata.resourceVersion };
  const desired = { key: XGN_TAINT.key, value: XGN_TAINT.value, effect: XGN_TAINT.effect };
  if (want) {
    const exact = ours.find(({ t }) => t.value === XGN_TAINT.value && t.effect === XGN_TAINT.effect);
    const extras = ours.filter((o) => o !== exact);
    if (exact && extras.length === 0) return undefined;
    const ops: JsonPatchOp[] = [precondition];
    // Remove from the highest index down so that earlier indices stay valid.
    for (const { i } of [...extras].reverse()) ops.push({ op: 'remove', path: `/spec/taints/${i}` });
    if (!exact) {
      if (node.spec === undefined) ops.push({ op: 'add', path: '/spec', value: { taints: [desired] } });
      else if (node.spec.taints === undefined) ops.push({ op: 'add', path: '/spec/taints', value: [desired] });
      else ops.push({ op: 'add', path: '/spec/taints/-', value: desired });
    }
    return ops;
  }
  if (ours.length === 0) return undefined;
  return [precondition, ...[...ours].reverse().map(({ i }): JsonPatchOp => ({ op: 'remove', path: `/spec/taints/${i}` }))];
}

/** The node reconciler's first step: patches the node's taints when {@link planXgnTaint} says so. */
export async function applyXgnTaint(ctx: ReconcileContext, node: NodeLike): Promise<void> {
  const ops = planXgnTaint(node);
  if (!ops) return;
  // A failed `test` (422) or a conflict is retried by the queue once the cache has the newer node.
  await ctx.writer.jsonPatch(RESOURCES.nodes, { name: node.metadata.name! }, ops);
}

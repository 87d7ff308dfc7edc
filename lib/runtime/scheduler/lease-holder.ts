/**
 * Whether this replica's kube-scheduler holds the scheduler Lease. kube-scheduler names the holder
 * `<hostname>_<uuid>`, and its container shares the pod's hostname with this process, so the replica
 * whose extender decides placements is known even while no pod is being scheduled (the extender's own
 * "called recently" says nothing in a quiet cluster). Replicas are told apart by hostname only: in
 * one pod per replica, as the component renders them, that is exact.
 */
import type { Lease } from '../kube/leader-election';

export function holdsSchedulerLease(lease: Lease | undefined, hostname: string, nowMs: number): boolean {
  const spec = lease?.spec;
  if (!hostname || !spec?.holderIdentity?.startsWith(`${hostname}_`)) return false;
  const renewed = Date.parse(spec.renewTime ?? '');
  return Number.isFinite(renewed) && renewed + (spec.leaseDurationSeconds ?? 0) * 1000 > nowMs;
}

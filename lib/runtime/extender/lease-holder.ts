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

/**
 * This replica's tenure of the scheduler Lease, while it holds it: the holder, the number of changes
 * of holder (client-go's leader election bumps `leaseTransitions` on each) and when it was acquired.
 * A tenure unchanged between two readings means no other scheduler held the Lease in between, so
 * every share placed since went through this replica's extender; undefined when this replica does not
 * hold it.
 * @example schedulerTenure(lease, 'ctl-0', Date.now()) // '["ctl-0_4b1c",3,"2026-11-23T11:58:02.000000Z"]'
 */
export function schedulerTenure(lease: Lease | undefined, hostname: string, nowMs: number): string | undefined {
  if (!holdsSchedulerLease(lease, hostname, nowMs)) return undefined;
  const { holderIdentity, leaseTransitions = 0, acquireTime = '' } = lease!.spec!;
  return JSON.stringify([holderIdentity, leaseTransitions, acquireTime]);
}

/** Which replica's kube-scheduler holds the scheduler Lease, from its holder identity and renewal. */
import { holdsSchedulerLease, schedulerTenure } from '../../../lib/runtime/extender/lease-holder';

const lease = (spec: Record<string, unknown>) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'tensor-fusion-scheduler' },
  spec,
});
const NOW = Date.parse('2026-11-23T12:00:00Z');

describe('holdsSchedulerLease', () => {
  it('is true for a live lease held by a scheduler on this host (kube-scheduler writes <hostname>_<uuid>)', () => {
    expect(
      holdsSchedulerLease(
        lease({ holderIdentity: 'ctl-0_4b1c', renewTime: '2026-11-23T11:59:55.000000Z', leaseDurationSeconds: 15 }),
        'ctl-0',
        NOW,
      ),
    ).toBe(true);
  });

  it('is false for another host, a host whose name only starts the same, an expired lease, no lease or no hostname', () => {
    const live = { renewTime: '2026-11-23T11:59:55.000000Z', leaseDurationSeconds: 15 };
    expect(holdsSchedulerLease(lease({ holderIdentity: 'ctl-1_4b1c', ...live }), 'ctl-0', NOW)).toBe(false);
    expect(holdsSchedulerLease(lease({ holderIdentity: 'ctl-01_4b1c', ...live }), 'ctl-0', NOW)).toBe(false);
    expect(
      holdsSchedulerLease(
        lease({ holderIdentity: 'ctl-0_4b1c', renewTime: '2026-11-23T11:59:40.000000Z', leaseDurationSeconds: 15 }),
        'ctl-0',
        NOW,
      ),
    ).toBe(false);
    expect(holdsSchedulerLease(lease({ holderIdentity: 'ctl-0_4b1c' }), 'ctl-0', NOW)).toBe(false);
    expect(holdsSchedulerLease(undefined, 'ctl-0', NOW)).toBe(false);
    expect(holdsSchedulerLease(lease({ holderIdentity: '_x', ...live }), '', NOW)).toBe(false);
  });
});

describe('schedulerTenure', () => {
  const held = {
    holderIdentity: 'ctl-0_4b1c',
    leaseTransitions: 3,
    acquireTime: '2026-11-23T11:50:00.000000Z',
    renewTime: '2026-11-23T11:59:55.000000Z',
    leaseDurationSeconds: 15,
  };

  it('stays the same across renewals of one holding, and changes with the holder, a change of holder or a new acquisition', () => {
    const tenure = schedulerTenure(lease(held), 'ctl-0', NOW);
    expect(tenure).toBe('["ctl-0_4b1c",3,"2026-11-23T11:50:00.000000Z"]');
    expect(schedulerTenure(lease({ ...held, renewTime: '2026-11-23T11:59:59.000000Z' }), 'ctl-0', NOW)).toBe(tenure);
    for (const change of [{ holderIdentity: 'ctl-0_77aa' }, { leaseTransitions: 5 }, { acquireTime: '2026-11-23T11:55:00.000000Z' }]) {
      const other = schedulerTenure(lease({ ...held, ...change }), 'ctl-0', NOW);
      expect(other).toBeDefined();
      expect(other).not.toBe(tenure);
    }
  });

  it('is undefined while this replica does not hold the Lease', () => {
    expect(schedulerTenure(lease(held), 'ctl-1', NOW)).toBeUndefined();
    expect(schedulerTenure(lease({ ...held, renewTime: '2026-11-23T11:59:40.000000Z' }), 'ctl-0', NOW)).toBeUndefined();
    expect(schedulerTenure(undefined, 'ctl-0', NOW)).toBeUndefined();
  });
});

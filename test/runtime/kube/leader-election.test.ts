/**
 * Leader failover between two replicas with a controllable clock (real 15s/10s/2s timings): at every
 * step at most one replica may write, the partitioned leader gives up at its renew deadline, and the
 * other takes over only after the lease duration.
 */
import { ManualClock } from '../../../lib/runtime/kube/clock';
import { Cluster } from '../../../lib/runtime/kube/cluster';
import { LeaderElector, NotLeaderError, fenceWrites } from '../../../lib/runtime/kube/leader-election';
import { RESOURCES } from '../../../lib/runtime/kube/resources';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { eventually, poolObj, silent } from '../fixtures';

/** Lets real HTTP round trips to the double finish between clock steps. */
const io = () => new Promise<void>((r) => setTimeout(r, 3));

interface Replica {
  name: string;
  elector: LeaderElector;
  fenced: Cluster;
  lost: boolean;
  done: Promise<'lost' | 'stopped'>;
  abort: AbortController;
}

function replica(api: ApiServerDouble, clock: ManualClock, name: string): Replica {
  const cluster = clusterFor(api, name);
  const abort = new AbortController();
  const r = { name, lost: false, abort } as Replica;
  r.elector = new LeaderElector({
    cluster,
    clock,
    namespace: 'default',
    name: 'tf-controller',
    identity: name,
    logger: silent,
    random: () => 0.5,
    onStoppedLeading: () => {
      r.lost = true;
    },
  });
  r.fenced = fenceWrites(cluster, () => r.elector.isLeader());
  r.done = r.elector.run(abort.signal);
  return r;
}

/** Tries one write per replica; returns whose write got past the fence (a partitioned one still fails at the server). */
async function writers(replicas: Replica[]): Promise<string[]> {
  const ok: string[] = [];
  for (const r of replicas) {
    try {
      await r.fenced.mergePatch(RESOURCES.gpupools, { name: 'probe' }, { metadata: { annotations: { writer: r.name } } });
      ok.push(r.name);
    } catch (err) {
      if (!(err instanceof NotLeaderError)) ok.push(r.name);
    }
  }
  return ok;
}

describe('leader election', () => {
  let api: ApiServerDouble;
  beforeEach(async () => {
    api = await startApiServer();
    api.put('gpupools', poolObj('probe', 'x'));
  });
  afterEach(() => api.stop());

  test('exactly one writer at a time through a partition and failover', async () => {
    const clock = new ManualClock();
    const a = replica(api, clock, 'replica-a');
    await clock.advance(10, io);
    const b = replica(api, clock, 'replica-b');
    const log: Array<{ t: number; writers: string[] }> = [];
    const step = async (ms: number) => {
      await clock.advance(ms, io);
      const w = await writers([a, b]);
      log.push({ t: clock.now(), writers: w });
      expect(w.length).toBeLessThanOrEqual(1);
    };
    for (let i = 0; i < 20; i++) await step(500);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);

    // Partition the leader: every request from replica-a now fails.
    api.injectFault({ userAgent: 'replica-a', status: 503, times: 1e9 });
    const partitionedAt = clock.now();
    for (let i = 0; i < 60; i++) await step(500);

    expect(a.lost).toBe(true);
    await expect(a.done).resolves.toBe('lost');
    expect(b.elector.isLeader()).toBe(true);
    const lastA = Math.max(...log.filter((l) => l.writers.includes('replica-a')).map((l) => l.t));
    const firstB = Math.min(...log.filter((l) => l.writers.includes('replica-b')).map((l) => l.t));
    // A stopped writing within its renew deadline; B started only after the lease duration.
    expect(lastA - partitionedAt).toBeLessThan(10_000);
    expect(firstB - partitionedAt).toBeGreaterThanOrEqual(15_000);
    expect(api.getObject('leases', 'tf-controller', 'default')?.spec).toMatchObject({ holderIdentity: 'replica-b', leaseTransitions: 1 });
    b.abort.abort();
    await clock.advance(2_000, io);
    await expect(b.done).resolves.toBe('stopped');
  });

  test('release hands over without waiting for the lease to expire', async () => {
    const clock = new ManualClock();
    const a = replica(api, clock, 'replica-a');
    await clock.advance(100, io);
    const b = replica(api, clock, 'replica-b');
    await clock.advance(100, io);
    // The acquisition is a real HTTP round trip to the double: on a loaded machine it may take more than `io`.
    await eventually(() => expect(a.elector.isLeader()).toBe(true));
    a.abort.abort();
    await a.done;
    await a.elector.release();
    expect(a.elector.isLeader()).toBe(false);
    for (let i = 0; i < 10 && !b.elector.isLeader(); i++) await clock.advance(1_000, io);
    // Taken over within the 1 s released lease plus a retry period, well before 15 s.
    expect(b.elector.isLeader()).toBe(true);
    expect(clock.now()).toBeLessThan(6_000);
    b.abort.abort();
    await clock.advance(2_000, io);
    await b.done;
  });

  test('rejects timings that break leaseDuration > renewDeadline > 1.2 x retryPeriod', () => {
    expect(
      () =>
        new LeaderElector({
          cluster: {} as Cluster,
          namespace: 'n',
          name: 'l',
          identity: 'i',
          leaseDurationMs: 10_000,
          renewDeadlineMs: 10_000,
        }),
    ).toThrow('leader election: need leaseDuration > renewDeadline > 1.2 x retryPeriod, got 10000/10000/2000 ms');
  });
});

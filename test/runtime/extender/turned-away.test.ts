/** The registry of pods the extender turned away, and its sweep (pure: the state and the pods are stubs). */
import type { AllocationRequest } from '../../../lib/allocator';
import { TurnedAway, TurnedAwayPod } from '../../../lib/runtime/extender/turned-away';

const pod = (name: string): TurnedAwayPod => ({ namespace: 'ns', name, uid: `uid-${name}` });
const request = (id: string, vramRequest = 1): AllocationRequest => ({
  id,
  pool: 'p',
  qos: 'low',
  gpuCount: 1,
  tflopsRequest: 1,
  vramRequest,
});

function sweeper(room: Record<string, number>) {
  const asked: Array<{ id: string; nodes: readonly string[] }> = [];
  return {
    asked,
    fits: (r: AllocationRequest, nodes: readonly string[]) => {
      asked.push({ id: r.id, nodes });
      return nodes.find((n) => (room[n] ?? 0) >= r.vramRequest);
    },
  };
}

test('pods asking the same on the same nodes are checked once a sweep; a different request or node list is checked on its own', () => {
  const t = new TurnedAway();
  for (const name of ['a', 'b', 'c']) t.record(pod(name), request(`uid-${name}`), ['n1', 'n2'], 0);
  t.record(pod('d'), request('uid-d', 2), ['n1', 'n2'], 0);
  t.record(pod('e'), request('uid-e'), ['n2'], 0);
  const s = sweeper({});
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 1 })).toBeUndefined();
  expect(s.asked.map((a) => a.id)).toEqual(['uid-a', 'uid-d', 'uid-e']);
  // The node lists are shared copies, not the arrays filter was given.
  expect(s.asked[0].nodes).toEqual(['n1', 'n2']);
});

test('a fit names its node once; pods turned away again after it, or the re-announce delay, make it count again', () => {
  const t = new TurnedAway(60_000);
  t.record(pod('a'), request('uid-a'), ['n1'], 0);
  const s = sweeper({ n1: 1 });
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 10 })).toBe('n1');
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 20 })).toBeUndefined();
  // Turned away again after the announcement (its retry lost a race): it counts again.
  t.record(pod('a'), request('uid-a'), ['n1'], 30);
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 40 })).toBe('n1');
  // Not retried at all (the announcement was lost): once more after the delay.
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 40 + 59_999 })).toBeUndefined();
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 40 + 60_000 })).toBe('n1');
});

test('pods that no longer wait (gone, bound, terminating) are forgotten at the sweep or by forget', () => {
  const t = new TurnedAway();
  t.record(pod('a'), request('uid-a'), ['n1'], 0);
  t.record(pod('b'), request('uid-b'), ['n1'], 0);
  t.record(pod('b'), request('uid-b'), ['n2'], 1);
  expect(t.size).toBe(2);
  const s = sweeper({ n1: 1, n2: 1 });
  expect(t.sweep({ fits: s.fits, waiting: (p) => p.name === 'b', now: 2 })).toBe('n2');
  expect(t.size).toBe(1);
  t.forget('uid-b');
  expect(t.size).toBe(0);
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 3 })).toBeUndefined();
  expect(s.asked).toHaveLength(1);
});

test('a stamp the retry signal sent counts as the announcement: only pods turned away after it are checked', () => {
  const t = new TurnedAway(60_000);
  const s = sweeper({ n1: 1 });
  t.record(pod('a'), request('uid-a'), ['n1'], 0);
  t.announced(5);
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 10 })).toBeUndefined();
  expect(s.asked).toEqual([]);
  t.record(pod('b'), request('uid-b'), ['n1'], 6);
  expect(t.sweep({ fits: s.fits, waiting: () => true, now: 11 })).toBe('n1');
  expect(s.asked.map((a) => a.id)).toEqual(['uid-b']);
});

test('a sweep makes at most its number of fit checks, and the next one goes on where it stopped', () => {
  const t = new TurnedAway(60_000, 2);
  for (const [i, name] of ['a', 'b', 'c', 'd', 'e'].entries()) t.record(pod(name), request(`uid-${name}`, i + 1), ['n1'], 0);
  const full = sweeper({});
  expect(t.sweep({ fits: full.fits, waiting: () => true, now: 1 })).toBeUndefined();
  expect(t.sweep({ fits: full.fits, waiting: () => true, now: 2 })).toBeUndefined();
  expect(full.asked.map((a) => a.id)).toEqual(['uid-a', 'uid-b', 'uid-c', 'uid-d']);
  // Room for all of them: the third sweep starts at e.
  const roomy = sweeper({ n1: 5 });
  expect(t.sweep({ fits: roomy.fits, waiting: () => true, now: 3 })).toBe('n1');
  expect(roomy.asked.map((a) => a.id)).toEqual(['uid-e']);
});

test('waiting pods are counted by pool and reason; pods no longer waiting are not, and a pod turned away again counts once', () => {
  const t = new TurnedAway();
  t.record(pod('a'), request('uid-a'), ['n1'], 0, 'InsufficientTflops');
  t.record(pod('b'), request('uid-b'), ['n1'], 0, 'InsufficientTflops');
  t.record(pod('c'), { ...request('uid-c'), pool: 'q' }, ['n1'], 0, 'OverQuota');
  t.record(pod('d'), request('uid-d'), ['n1'], 0, 'OverQuota');
  // Turned away again for another reason: counted once, under the new one.
  t.record(pod('a'), request('uid-a'), ['n1'], 1, 'InsufficientVram');
  const waiting = (p: TurnedAwayPod) => p.name !== 'd';
  expect(t.waitingCounts(waiting)).toEqual([
    { pool: 'p', reason: 'InsufficientTflops', pods: 1 },
    { pool: 'q', reason: 'OverQuota', pods: 1 },
    { pool: 'p', reason: 'InsufficientVram', pods: 1 },
  ]);
});

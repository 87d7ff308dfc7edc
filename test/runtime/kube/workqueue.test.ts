/** The controller's work queue and its workers. */
import { ManualClock } from '../../../lib/runtime/kube/clock';
import { WorkQueue, runWorkers } from '../../../lib/runtime/kube/workqueue';

describe('WorkQueue', () => {
  test('deduplicates waiting keys and never hands out a key in progress', async () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe('a');
    q.add('a'); // re-added while processing: held back until done
    expect(await q.get()).toBe('b');
    expect(q.len()).toBe(0);
    q.done('a');
    expect(await q.get()).toBe('a');
  });

  test('backs off per key exponentially and forget resets it', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 10, maxDelayMs: 1000 });
    q.addRateLimited('k');
    q.addRateLimited('k');
    q.addRateLimited('k'); // delays 10, 20, 40: the earliest pending wins
    expect(q.numRequeues('k')).toBe(3);
    await clock.advance(9);
    expect(q.len()).toBe(0);
    await clock.advance(1);
    expect(q.len()).toBe(1);
    q.forget('k');
    expect(q.numRequeues('k')).toBe(0);
  });

  test('the global token bucket delays rate-limited adds beyond the burst', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 1, qps: 10, burst: 2 });
    for (const k of ['a', 'b', 'c']) q.addRateLimited(k);
    await clock.advance(1);
    expect(q.len()).toBe(2);
    await clock.advance(99);
    expect(q.len()).toBe(3);
  });

  test('runWorkers retries failures, honours requeueAfter and stops on shutdown', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, baseDelayMs: 5 });
    const seen: string[] = [];
    let fail = true;
    const done = runWorkers(q, 2, async (key) => {
      seen.push(key);
      if (key === 'x' && fail) {
        fail = false;
        throw new Error('boom');
      }
      return key === 'y' && seen.filter((s) => s === 'y').length === 1 ? { requeueAfterMs: 100 } : undefined;
    });
    q.add('x');
    q.add('y');
    await clock.advance(5);
    await clock.advance(100);
    expect(seen.sort()).toEqual(['x', 'x', 'y', 'y']);
    q.shutDown();
    await done;
  });
});

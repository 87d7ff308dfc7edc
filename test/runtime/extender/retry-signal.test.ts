/** The node annotation that makes kube-scheduler retry pods our extender turned away, once room exists. */
import { ApiError } from '../../../lib/runtime/kube/cluster';
import { SHARE_RELEASED_ANNOTATION } from '../../../lib/model/metadata-keys';
import { RetrySignal } from '../../../lib/runtime/extender/retry-signal';

/** A cluster whose merge patches fail with the queued errors first, then succeed; it records the nodes it patched. */
function fakeCluster(failures: Record<string, Error[]> = {}) {
  const patched: string[] = [];
  const mergePatch = jest.fn(
    async (_resource: unknown, ref: { name: string }, patch: { metadata: { annotations: Record<string, string> } }) => {
      const err = failures[ref.name]?.shift();
      if (err) throw err;
      expect(Object.keys(patch.metadata.annotations)).toEqual([SHARE_RELEASED_ANNOTATION]);
      patched.push(ref.name);
      return {} as never;
    },
  );
  return { cluster: { mergePatch } as never, mergePatch, patched };
}

describe('RetrySignal', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('sends one node update per node for the releases of one window', async () => {
    const { cluster, patched } = fakeCluster();
    const signal = new RetrySignal({ cluster, active: () => true, coalesceMs: 200 });
    signal.roomAt('a');
    signal.roomAt('b');
    signal.roomAt('a');
    expect(patched).toEqual([]);
    await jest.advanceTimersByTimeAsync(200);
    expect(patched.sort()).toEqual(['a', 'b']);
    signal.stop();
  });

  it('sends nothing while its allocator is not the one in use, asked when the window ends', async () => {
    const { cluster, mergePatch, patched } = fakeCluster();
    let inUse = false;
    const signal = new RetrySignal({ cluster, active: async () => inUse });
    signal.roomAt('a');
    await jest.advanceTimersByTimeAsync(10_000);
    expect(mergePatch).not.toHaveBeenCalled();
    signal.roomAt('b');
    inUse = true;
    await jest.advanceTimersByTimeAsync(200);
    expect(patched).toEqual(['b']);
    signal.stop();
  });

  it('sends a failed update again later, and drops one for a node that is gone', async () => {
    const { cluster, patched, mergePatch } = fakeCluster({
      a: [new ApiError(429, 'TooManyRequests', 'slow down')],
      gone: [new ApiError(404, 'NotFound', 'nodes "gone" not found')],
    });
    const signal = new RetrySignal({ cluster, active: () => true, coalesceMs: 200, retryMs: 2_000 });
    signal.roomAt('a');
    signal.roomAt('gone');
    await jest.advanceTimersByTimeAsync(200);
    expect(patched).toEqual([]);
    await jest.advanceTimersByTimeAsync(1_999);
    expect(patched).toEqual([]);
    await jest.advanceTimersByTimeAsync(201);
    expect(patched).toEqual(['a']);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(mergePatch).toHaveBeenCalledTimes(3);
    signal.stop();
  });

  it('reports each update made with the time it was sent, and none for an update that failed', async () => {
    const { cluster } = fakeCluster({ a: [new ApiError(429, 'TooManyRequests', 'slow down')] });
    const sent: number[] = [];
    const signal = new RetrySignal({ cluster, active: () => true, coalesceMs: 200, retryMs: 2_000, sent: (at) => sent.push(at) });
    const start = Date.now();
    signal.roomAt('a');
    signal.roomAt('b');
    await jest.advanceTimersByTimeAsync(200);
    expect(sent).toEqual([start + 200]);
    await jest.advanceTimersByTimeAsync(2_200);
    expect(sent).toEqual([start + 200, start + 2_400]);
    signal.stop();
  });

  it('is busy from the first room of a window until its updates are made, and while a failed one waits to be sent again', async () => {
    const { cluster } = fakeCluster({ a: [new ApiError(429, 'TooManyRequests', 'slow down')] });
    let answer!: (v: boolean) => void;
    const signal = new RetrySignal({
      cluster,
      active: () =>
        new Promise<boolean>((r) => {
          answer = r;
        }),
      coalesceMs: 200,
      retryMs: 2_000,
    });
    expect(signal.busy()).toBe(false);
    signal.roomAt('a');
    expect(signal.busy()).toBe(true);
    await jest.advanceTimersByTimeAsync(200);
    // Asking whether it is the allocator in use: still busy.
    expect(signal.busy()).toBe(true);
    answer(true);
    await jest.advanceTimersByTimeAsync(0);
    // The update failed and waits to be sent again.
    expect(signal.busy()).toBe(true);
    await jest.advanceTimersByTimeAsync(2_200);
    answer(true);
    await jest.advanceTimersByTimeAsync(0);
    expect(signal.busy()).toBe(false);
    signal.stop();
  });

  it('sends nothing after stop, not even a retry of an update that failed before', async () => {
    const { cluster, mergePatch } = fakeCluster({ a: [new Error('connect ECONNREFUSED 127.0.0.1:6443')] });
    const signal = new RetrySignal({ cluster, active: () => true, coalesceMs: 200, retryMs: 2_000 });
    signal.roomAt('a');
    await jest.advanceTimersByTimeAsync(200);
    signal.stop();
    signal.roomAt('b');
    await jest.advanceTimersByTimeAsync(60_000);
    expect(mergePatch).toHaveBeenCalledTimes(1);
  });
});

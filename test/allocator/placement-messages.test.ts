/** Allocator reasons for unavailable nodes and for a TFLOPS limit no GPU may be oversold to (issue 14.8). */
import { Allocator } from '../../lib/allocator';
import { node, req } from './fixtures';

const reasons = (a: Allocator, r: ReturnType<typeof req>) => {
  const out = a.allocate(r);
  return out.ok ? [] : out.reasons.map((x) => x.message);
};

describe('unavailable nodes', () => {
  it('a pool whose only node is NotReady says so instead of "has no nodes"', () => {
    const a = new Allocator();
    a.setUnavailable('n1', 'p', 'NotReady');
    expect(reasons(a, req('x', 0.1))).toEqual(['pool "p" has no usable node: "n1" is NotReady']);
    expect(
      a
        .choose(req('y', 0.1), ['n1'])
        .unfit.get('n1')
        ?.map((x) => x.message),
    ).toEqual(['node "n1" of pool "p" is NotReady']);
  });

  it('a node added again is usable and the reason forgotten', () => {
    const a = new Allocator();
    a.setUnavailable('n1', 'p', 'NotReady');
    a.addNode(node('n1', 1));
    expect(reasons(a, req('x', 0.1))).toEqual([]);
  });
});

describe('TFLOPS limit above the oversell bound', () => {
  it('names the limit, the bound and how it is reached, first', () => {
    const a = new Allocator({ pools: { p: { tflopsOversellRatio: 500 } } });
    a.addNode(node('n1', 2, { tflops: 312 }));
    expect(reasons(a, req('x', 0.01, { tflopsLimit: 2000 }))[0]).toBe(
      'tflops-limit 2000 is above 1560 TFLOPS, the most one GPU may be oversold to (312 TFLOPS x 500%)',
    );
  });

  it('is not said when a larger GPU of the pool could take the limit', () => {
    const a = new Allocator({ pools: { p: { tflopsOversellRatio: 100 } } });
    a.addNode(node('n1', 1, { tflops: 100 }));
    a.addNode(node('n2', 1, { tflops: 300 }));
    a.allocate(req('big', 0.1, { tflopsLimit: 300, tflopsRequest: 10 }));
    expect(reasons(a, req('x', 0.01, { tflopsLimit: 200 })).some((m) => m.startsWith('tflops-limit'))).toBe(false);
  });
});

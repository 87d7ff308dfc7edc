import fc from 'fast-check';
import { binsBound, BoundNode, BoundRequest, packingBound } from '../../lib/allocator/packing-bound';

/** The most share any placement gives: every request tried unplaced or on every node and choice of GPUs. */
function optimum(nodes: readonly BoundNode[], requests: readonly BoundRequest[]): number {
  const free = nodes.map((n) => new Array<number>(n.gpus).fill(1000));
  const cpu = nodes.map((n) => n.cpu);
  const mem = nodes.map((n) => n.memory);
  const subsets = (n: number, k: number, from = 0): number[][] =>
    k === 0 ? [[]] : from >= n ? [] : [...subsets(n, k - 1, from + 1).map((s) => [from, ...s]), ...subsets(n, k, from + 1)];
  const go = (i: number): number => {
    if (i === requests.length) return 0;
    const r = requests[i];
    let best = go(i + 1);
    if (r.gpuCount === 0) return best;
    nodes.forEach((n, j) => {
      if (cpu[j] < r.cpu || mem[j] < r.memory || (r.models && r.models.length > 0 && !r.models.includes(n.model))) return;
      for (const pick of subsets(n.gpus, r.gpuCount)) {
        if (pick.some((g) => free[j][g] < r.share)) continue;
        pick.forEach((g) => (free[j][g] -= r.share));
        cpu[j] -= r.cpu;
        mem[j] -= r.memory;
        best = Math.max(best, r.gpuCount * r.share + go(i + 1));
        pick.forEach((g) => (free[j][g] += r.share));
        cpu[j] += r.cpu;
        mem[j] += r.memory;
      }
    });
    return best;
  };
  return go(0);
}

const node = (gpus: number, cpu = 100, memory = 100, model = 'A'): BoundNode => ({ gpus, cpu, memory, model });
const req = (gpuCount: number, share: number, cpu = 0, memory = 0, models?: string[]): BoundRequest => ({
  gpuCount,
  share,
  cpu,
  memory,
  models,
});

describe('packingBound', () => {
  test('is never below what the best placement gives (exhaustive search on small clusters)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            gpus: fc.integer({ min: 1, max: 3 }),
            cpu: fc.integer({ min: 1, max: 10 }),
            memory: fc.integer({ min: 1, max: 10 }),
            model: fc.constantFrom('A', 'B'),
          }),
          { minLength: 1, maxLength: 2 },
        ),
        fc.array(
          fc.record({
            gpuCount: fc.integer({ min: 0, max: 3 }),
            share: fc.constantFrom(100, 250, 300, 400, 500, 600, 700, 1000),
            cpu: fc.integer({ min: 0, max: 8 }),
            memory: fc.integer({ min: 0, max: 8 }),
            models: fc.option(fc.subarray(['A', 'B'], { minLength: 1 }), { nil: undefined }),
          }),
          { maxLength: 5 },
        ),
        (nodes, requests) => {
          expect(packingBound(nodes, requests)).toBeGreaterThanOrEqual(optimum(nodes, requests) - 1e-6);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('two shares of 600 on one GPU: the bound is one of them, not the GPU', () => {
    const bound = packingBound([node(1)], [req(1, 600), req(1, 600)]);
    expect(bound).toBeGreaterThanOrEqual(600);
    expect(bound).toBeLessThan(601);
  });

  test('shares of 700 leave 300 of each GPU to smaller ones only', () => {
    // Two GPUs, three shares of 700 and two of 200: at most 2 x 700 + 2 x 200 = 1800, not 2000.
    const bound = packingBound([node(2)], [req(1, 700), req(1, 700), req(1, 700), req(1, 200), req(1, 200)]);
    expect(bound).toBeGreaterThanOrEqual(1800);
    expect(bound).toBeLessThan(1801);
  });

  test("a node's CPU limits how many requests it takes, whatever GPU share is left", () => {
    const bound = packingBound([node(4, 10)], [req(1, 100, 6), req(1, 100, 6), req(1, 100, 6)]);
    expect(bound).toBeGreaterThanOrEqual(100);
    expect(bound).toBeLessThan(100.5);
  });

  test('a request of 3 GPUs takes a 4-GPU node alone', () => {
    const bound = packingBound([node(4), node(4)], [req(3, 1000), req(3, 1000), req(3, 1000)]);
    expect(bound).toBeGreaterThanOrEqual(6000);
    expect(bound).toBeLessThan(6001);
  });

  test('requests for a model no node has, and requests of no GPU, add nothing', () => {
    expect(packingBound([node(2, 100, 100, 'B')], [req(1, 500, 0, 0, ['A']), req(0, 0, 5)])).toBe(0);
  });
});

describe('binsBound', () => {
  it('counts the bins that items too big to pair need', () => {
    expect(binsBound(new Map([[600, 3]]))).toBe(3);
    expect(binsBound(new Map([[340, 3]]))).toBe(2);
    expect(binsBound(new Map([[500, 4]]))).toBe(2);
    // 810-milli shares with 190-milli ones: each 810 needs its own GPU.
    expect(
      binsBound(
        new Map([
          [810, 5],
          [190, 5],
        ]),
      ),
    ).toBe(5);
    expect(
      binsBound(
        new Map([
          [810, 5],
          [200, 5],
        ]),
      ),
    ).toBe(6);
  });

  it('never exceeds the bins a first-fit decreasing packing uses', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 999 }), { minLength: 1, maxLength: 12 }), (items) => {
        const sizes = new Map<number, number>();
        for (const x of items) sizes.set(x, (sizes.get(x) ?? 0) + 1);
        const rooms: number[] = [];
        for (const x of [...items].sort((a, b) => b - a)) {
          const i = rooms.findIndex((r) => r >= x);
          if (i < 0) rooms.push(1000 - x);
          else rooms[i] -= x;
        }
        const bound = binsBound(sizes);
        return bound <= rooms.length && bound >= Math.ceil(items.reduce((a, b) => a + b, 0) / 1000);
      }),
      { numRuns: 15 },
    );
  }, 30_000);
});

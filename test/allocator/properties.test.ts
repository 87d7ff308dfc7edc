import fc from 'fast-check';
import { AllocateResult, AllocationRequest, Allocator, NodeSpec } from '../../lib/allocator';
import { PLACEMENT_MODES, PlacementMode } from '../../lib/model/rules';

const MODELS = ['A', 'B'];

const nodeArb = fc.record({
  gpus: fc.array(
    fc.record({ model: fc.constantFrom(...MODELS), tflops: fc.integer({ min: 1, max: 20 }), vram: fc.integer({ min: 1, max: 16 }) }),
    {
      minLength: 0,
      maxLength: 4,
    },
  ),
  cpu: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
});

const requestArb = fc.record({
  tflops: fc.integer({ min: 0, max: 12 }),
  extraLimit: fc.integer({ min: 0, max: 30 }),
  vram: fc.integer({ min: 0, max: 12 }),
  gpuCount: fc.integer({ min: 0, max: 3 }),
  model: fc.option(fc.subarray(MODELS, { minLength: 1 }), { nil: undefined }),
  cpu: fc.integer({ min: 0, max: 3 }),
  mode: fc.option(fc.constantFrom(...PLACEMENT_MODES), { nil: undefined }),
});

/**
 * Operations: place a request of a few recurring shapes (so shapes fail, the cluster changes and
 * they are tried again), or release the i-th live allocation.
 */
const scenarioArb = fc.array(requestArb, { minLength: 1, maxLength: 4 }).chain((shapes) =>
  fc.record({
    nodes: fc.array(nodeArb, { minLength: 1, maxLength: 5 }),
    ratio: fc.integer({ min: 100, max: 400 }),
    mode: fc.constantFrom(...PLACEMENT_MODES),
    seed: fc.integer(),
    ops: fc.array(
      fc.oneof(
        { arbitrary: fc.constantFrom(...shapes).map((r) => ({ kind: 'allocate' as const, r })), weight: 4 },
        { arbitrary: fc.nat().map((i) => ({ kind: 'release' as const, i })), weight: 1 },
      ),
      { maxLength: 40 },
    ),
  }),
);

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

function specs(s: Scenario): NodeSpec[] {
  return s.nodes.map((n, i) => ({
    name: `n${i}`,
    pool: 'p',
    cpu: n.cpu,
    gpus: n.gpus.map((g, j) => ({ id: `n${i}g${j}`, index: j, ...g })),
  }));
}

function build(s: Scenario, indexed = true): Allocator {
  const a = new Allocator({ seed: s.seed, indexed, pools: { p: { tflopsOversellRatio: s.ratio, placementMode: s.mode } } });
  for (const n of specs(s)) a.addNode(n);
  return a;
}

function toRequest(id: string, r: Scenario['ops'][number] & { kind: 'allocate' }): AllocationRequest {
  const q = r.r;
  return {
    id,
    pool: 'p',
    tflopsRequest: q.tflops,
    tflopsLimit: q.tflops + q.extraLimit,
    vramRequest: q.vram,
    gpuCount: q.gpuCount,
    gpuModel: q.model,
    cpu: q.cpu,
    qos: 'low',
    placementMode: q.mode as PlacementMode | undefined,
  };
}

/** Runs the operations; returns every result in order. */
function run(a: Allocator, s: Scenario, check?: (a: Allocator, r: AllocationRequest, res: AllocateResult) => void): unknown[] {
  const out: unknown[] = [];
  s.ops.forEach((op, k) => {
    if (op.kind === 'release') {
      const live = a.allocations();
      if (live.length > 0) out.push(a.release(live[op.i % live.length].id));
      return;
    }
    const r = toRequest(`r${k}`, op);
    const res = a.allocate(r);
    check?.(a, r, res);
    out.push(res);
  });
  return out;
}

/** Whether any node could take `r`, by brute force over the snapshot. */
function feasible(a: Allocator, r: AllocationRequest, ratio: number): boolean {
  return a.snapshot().nodes.some((n) => {
    if (n.cpu && n.cpu.requested + (r.cpu ?? 0) > n.cpu.capacity) return false;
    const fitting = n.gpus.filter(
      (g) =>
        (r.gpuModel === undefined || (r.gpuModel as string[]).includes(g.model)) &&
        g.tflops.requested + r.tflopsRequest <= g.tflops.capacity &&
        g.vram.requested + r.vramRequest <= g.vram.capacity &&
        (g.tflops.limits + (r.tflopsLimit ?? 0)) * 100 <= g.tflops.capacity * ratio,
    );
    return fitting.length >= r.gpuCount;
  });
}

describe('allocator invariants (fast-check)', () => {
  it('never exceeds capacity or the oversell ratio, keeps multi-GPU requests on one node, respects models, and fails only when nothing fits', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const a = build(s);
        run(a, s, (al, r, res) => {
          if (res.ok) {
            const alloc = res.allocation;
            const node = al.nodeUsage(alloc.node);
            expect(node).toBeDefined();
            expect(new Set(alloc.gpuIds).size).toBe(r.gpuCount);
            for (const id of alloc.gpuIds) {
              const g = node?.gpus.find((x) => x.id === id);
              expect(g).toBeDefined();
              if (r.gpuModel) expect(r.gpuModel).toContain(g?.model);
            }
          } else {
            expect(feasible(al, r, s.ratio)).toBe(false);
            expect(res.reasons.length).toBeGreaterThan(0);
          }
          for (const n of al.snapshot().nodes) {
            if (n.cpu) expect(n.cpu.requested).toBeLessThanOrEqual(n.cpu.capacity);
            for (const g of n.gpus) {
              expect(g.vram.requested).toBeLessThanOrEqual(g.vram.capacity);
              expect(g.tflops.requested).toBeLessThanOrEqual(g.tflops.capacity);
              expect(g.tflops.limits * 100).toBeLessThanOrEqual(g.tflops.capacity * s.ratio + 1e-9);
            }
          }
        });
      }),
      { numRuns: 150 },
    );
  });

  it('release of everything then rebuild gives the same state, in place and on a fresh allocator', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const a = build(s);
        run(a, s);
        const before = a.snapshot();
        const allocations = a.allocations();
        for (const x of allocations) a.release(x.id);
        expect(a.snapshot().nodes.every((n) => n.gpus.every((g) => g.vram.requested === 0 && g.tflops.limits === 0))).toBe(true);
        expect(a.rebuild([...allocations].reverse())).toEqual({ restored: allocations.length, skipped: [] });
        expect(a.snapshot()).toEqual(before);
        const fresh = build(s);
        fresh.rebuild(allocations);
        expect(fresh.snapshot()).toEqual(before);
      }),
      { numRuns: 100 },
    );
  });

  it('the same nodes, requests and seed give the same placements', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        expect(run(build(s), s)).toEqual(run(build(s), s));
      }),
      { numRuns: 100 },
    );
  });

  it('the index places exactly as scoring every node would, in every mode', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        expect(run(build(s), s)).toEqual(run(build(s, false), s));
      }),
      { numRuns: 150 },
    );
  });

  it("choose and best over a scheduler's feasible nodes (all of them, or any subset) judge them as scoring each one would", () => {
    fc.assert(
      fc.property(scenarioArb, fc.integer({ min: 0, max: 2 ** 31 - 1 }), (s, pick) => {
        const indexed = build(s);
        const reference = build(s, false);
        const names = specs(s).map((n) => n.name);
        s.ops.forEach((op, k) => {
          if (op.kind === 'release') {
            const live = indexed.allocations();
            if (live.length > 0) for (const a of [indexed, reference]) a.release(live[op.i % live.length].id);
            return;
          }
          const r = toRequest(`r${k}`, op);
          // Every node, and a subset that changes with each request (often leaving out the pool's best).
          for (const candidates of [names, names.filter((_n, i) => ((pick >>> ((i + k) % 31)) & 1) === 1)]) {
            const judged = reference.choose(r, candidates);
            expect(indexed.choose(r, candidates)).toEqual(judged);
            expect(indexed.best(r, candidates)).toBe(judged.best);
            expect(reference.best(r, candidates)).toBe(judged.best);
          }
          expect(indexed.allocate(r)).toEqual(reference.allocate(r));
        });
      }),
      { numRuns: 150 },
    );
  });

  it('CompactFirst picks a node with the least free GPU share after placement', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const a = build({ ...s, mode: 'CompactFirst' });
        run(
          a,
          { ...s, ops: s.ops.map((o) => (o.kind === 'allocate' ? { ...o, r: { ...o.r, mode: 'CompactFirst' } } : o)) },
          (al, r, res) => {
            if (!res.ok || r.gpuCount === 0) return;
            // After placement the chosen node's free share is at most that of any node that could still take r.
            const share = (n: {
              gpus: readonly { tflops: { capacity: number; available: number }; vram: { capacity: number; available: number } }[];
            }) => n.gpus.reduce((t, g) => t + 0.5 * (g.tflops.available / g.tflops.capacity + g.vram.available / g.vram.capacity), 0);
            const chosen = share(al.nodeUsage(res.allocation.node) as Parameters<typeof share>[0]);
            const better = specs(s)
              .filter((spec) => spec.name !== res.allocation.node)
              .filter((spec) => {
                // The same request alone on that node, with that node's current allocations.
                const single = new Allocator({ pools: { p: { tflopsOversellRatio: s.ratio } } });
                single.addNode(spec);
                single.rebuild(al.allocations().filter((x) => x.node === spec.name));
                const got = single.allocate(r);
                return got.ok && share(single.nodeUsage(spec.name) as Parameters<typeof share>[0]) < chosen - 1e-9;
              });
            expect(better.map((n) => n.name)).toEqual([]);
          },
        );
      }),
      { numRuns: 60 },
    );
  });
});

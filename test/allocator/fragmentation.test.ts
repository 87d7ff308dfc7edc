import fc from 'fast-check';
import {
  expectedLeftover,
  fragAfter,
  keptFree,
  LEFTOVER_STEPS,
  MixLearner,
  normaliseMix,
  profileOf,
  strandedWeight,
} from '../../lib/allocator/fragmentation';
import { GpuState, NodeState } from '../../lib/allocator/state';

function gpu(i: number, usedT: number, usedV: number): GpuState {
  return {
    id: `g${i}`,
    index: i,
    model: i % 2 === 0 ? 'A' : 'B',
    capT: 1000,
    capV: 1000,
    usedT,
    limT: usedT,
    usedV,
    limV: usedV,
    allocs: new Set(),
  };
}

function nodeOf(used: [number, number][], cpuUsed: number): NodeState {
  return {
    name: 'n',
    pool: 'p',
    slot: 0,
    rank: 0,
    cpuCap: 100,
    memCap: Infinity,
    cpuUsed,
    memUsed: 0,
    gpus: used.map(([t, v], i) => gpu(i, t, v)),
    version: 0,
  };
}

const mix = normaliseMix([
  { gpuCount: 1, tflops: 0.5, vram: 500, cpu: 10, weight: 3 },
  { gpuCount: 1, tflops: 0.2, vram: 300, weight: 2 },
  { gpuCount: 2, tflops: 1, vram: 1000, cpu: 40, weight: 1 },
  { gpuCount: 1, tflops: 0.3, vram: 300, models: ['A'], weight: 1 },
  { gpuCount: 0, tflops: 0, vram: 0, cpu: 30, weight: 2 },
]);

describe('fragmentation', () => {
  it('an empty node is fragmented only for work it cannot host', () => {
    // 2 free GPUs, 100 CPU: every GPU task fits. The CPU-only task (weight 2/9) counts all free share
    // (2 GPUs); the A-only task (1/9) counts GPU 1, a B.
    expect(
      profileOf(
        nodeOf(
          [
            [0, 0],
            [0, 0],
          ],
          0,
        ),
        mix,
        1,
      ).frag,
    ).toBeCloseTo((2 / 9) * 2 + 1 / 9);
    // CPU exhausted: only the two tasks that need no CPU are hostable; the rest count both GPUs.
    expect(
      profileOf(
        nodeOf(
          [
            [0, 0],
            [0, 0],
          ],
          100,
        ),
        mix,
        1,
      ).frag,
    ).toBeCloseTo((3 / 9) * 2 + (1 / 9) * 2 + (2 / 9) * 2 + 1 / 9);
  });

  it('counts GPUs stranded by CPU before the node runs out', () => {
    // Typical request: 1 GPU and 30 CPU. Nodes have 100 CPU.
    const cpu30 = normaliseMix([{ gpuCount: 1, tflops: 1, vram: 1000, cpu: 30, weight: 1 }]);
    expect(
      profileOf(
        nodeOf(
          [
            [0, 0],
            [0, 0],
            [0, 0],
          ],
          0,
        ),
        cpu30,
        1,
      ).frag,
    ).toBeCloseTo(0);
    // 50 CPU used: one instance fits, two free GPUs are stranded.
    expect(
      profileOf(
        nodeOf(
          [
            [0, 0],
            [0, 0],
            [0, 0],
          ],
          50,
        ),
        cpu30,
        1,
      ).frag,
    ).toBeCloseTo(2);
    // Half a GPU is too small for it (0.5), and with 50 CPU one of the two free GPUs is stranded.
    expect(
      profileOf(
        nodeOf(
          [
            [500, 500],
            [0, 0],
            [0, 0],
          ],
          50,
        ),
        cpu30,
        1,
      ).frag,
    ).toBeCloseTo(1.5);
  });

  it("weighs the stranded GPUs by the mix's strandedWeight", () => {
    const cpu30 = normaliseMix([{ gpuCount: 1, tflops: 1, vram: 1000, cpu: 30, weight: 1 }]);
    const node = nodeOf(
      [
        [500, 500],
        [0, 0],
        [0, 0],
      ],
      50,
    );
    // Half a GPU too small (0.5) plus, at weight 1, half the fitting GPUs' free share (one of two stranded).
    expect(profileOf(node, cpu30, 2, 1).frag).toBeCloseTo(0.5 + 1);
    expect(profileOf(node, cpu30, 3, 0.5).frag).toBeCloseTo(0.5 + 0.5 * 1);
    expect(profileOf(node, cpu30, 4, 0).frag).toBeCloseTo(0.5);
    // A node that cannot host one instance still counts everything, whatever the weight.
    expect(profileOf(nodeOf([[0, 0]], 80), cpu30, 5, 0).frag).toBeCloseTo(1);
  });

  it('strandedWeight fades from 1 to 0 as multi-GPU typicals ask for 10% to 30% of the GPUs', () => {
    const withMulti = (share1: number, multi: number) =>
      strandedWeight(
        normaliseMix([
          // A half-GPU share counts as one GPU asked for.
          { gpuCount: 1, tflops: 0.5, vram: 500, weight: share1 },
          { gpuCount: 4, tflops: 1, vram: 1000, weight: multi / 4 },
          { gpuCount: 0, tflops: 0, vram: 0, cpu: 8, weight: 5 },
        ]),
      );
    expect(strandedWeight([])).toBe(1);
    expect(withMulti(1, 0)).toBe(1);
    expect(withMulti(9, 1)).toBeCloseTo(1);
    expect(withMulti(8, 2)).toBeCloseTo(0.5);
    expect(withMulti(7, 3)).toBeCloseTo(0);
    expect(withMulti(1, 1)).toBe(0);
  });

  it('does not count GPUs an empty node of that shape would leave idle anyway', () => {
    // 1 GPU and 60 CPU: an empty 2-GPU, 100-CPU node hosts one, which is not fragmentation.
    const cpu60 = normaliseMix([{ gpuCount: 1, tflops: 1, vram: 1000, cpu: 60, weight: 1 }]);
    expect(
      profileOf(
        nodeOf(
          [
            [0, 0],
            [0, 0],
          ],
          0,
        ),
        cpu60,
        1,
      ).frag,
    ).toBeCloseTo(0);
    expect(
      profileOf(
        nodeOf(
          [
            [0, 0],
            [0, 0],
          ],
          50,
        ),
        cpu60,
        1,
      ).frag,
    ).toBeCloseTo(2);
  });

  it('the incremental score equals recomputing the node after the placement', () => {
    const used = fc.tuple(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 1000 }));
    fc.assert(
      fc.property(
        fc.array(used, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 0, max: 500 }),
        fc.integer({ min: 0, max: 500 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 1, max: 4 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (gpus, cpuUsed, t, v, cpu, k, stranded) => {
          const node = nodeOf(gpus, cpuUsed);
          const chosen = node.gpus.map((_, i) => i).slice(0, k);
          const tot = new Float64Array(1);
          const predicted = fragAfter(node, profileOf(node, mix, 1, stranded), mix, chosen, chosen.length, t, v, cpu, 0, tot, stranded);
          const after = nodeOf(
            gpus.map(([ut, uv], i) => (i < k ? [ut + t, uv + v] : [ut, uv])),
            cpuUsed + cpu,
          );
          const actual = profileOf(after, mix, 1, stranded);
          expect(predicted).toBeCloseTo(actual.frag, 9);
          expect(tot[0]).toBeCloseTo(actual.tot, 9);
        },
      ),
    );
  });

  it('learns the shapes covering 95% of requests, refreshing as the count doubles', () => {
    const learner = new MixLearner();
    const shape = (t: number) => ({ k: 1, t, v: t, cpu: 0, mem: 0, models: null });
    const refreshed = Array.from({ length: 40 }, (_, i) => learner.observe(shape(i < 38 ? 500 : 100 + i)));
    expect(refreshed.flatMap((r, i) => (r ? [i + 1] : []))).toEqual([1, 2, 4, 8, 16, 32]);
    expect(learner.mix()).toEqual([{ ...shape(500), p: 1 }]);
  });

  it('tells shapes apart by GPUs, share, CPU and models, not memory', () => {
    const learner = new MixLearner();
    const shape = (cpu: number, mem: number) => ({ k: 1, t: 500, v: 500, cpu, mem, models: null });
    for (const mem of [1_000, 2_000, 3_000, 4_000]) learner.observe(shape(100, mem));
    learner.observe(shape(200, 1_000));
    expect(learner.mix()).toEqual([
      { ...shape(100, 0), p: 0.8 },
      { ...shape(200, 0), p: 0.2 },
    ]);
  });
});

describe('expectedLeftover', () => {
  const shares = normaliseMix([
    { gpuCount: 1, tflops: 0.5, vram: 500, weight: 1 },
    { gpuCount: 1, tflops: 0.3, vram: 300, weight: 1 },
    { gpuCount: 1, tflops: 0.2, vram: 200, models: ['B'], weight: 5 },
    { gpuCount: 2, tflops: 0.1, vram: 100, weight: 5 },
    { gpuCount: 1, tflops: 1, vram: 1000, weight: 5 },
  ]);
  const { table } = expectedLeftover(shares, 'A', 1000, 1000);

  it('keeps what no single-GPU share of the mix fits, and fills the rest in proportion to weights', () => {
    // On model A only the 0.5 and 0.3 shares count (0.2 is for B, 0.1 spans two GPUs, 1 takes a whole GPU).
    expect(table[LEFTOVER_STEPS]).toBe(0);
    expect(table[250]).toBeCloseTo(0.25);
    expect(table[350]).toBeCloseTo(0.05); // 0.3 fits: 0.05 left
    expect(table[500]).toBeCloseTo((0 + 0.2) / 2); // 0.5 leaves 0, 0.3 leaves 0.2
    expect(table[800]).toBeCloseTo((table[300] + table[500]) / 2);
  });

  it('counts the shares of the GPU model it is for', () => {
    // On B the 0.2 share fits 0.25 and leaves 0.05.
    expect(expectedLeftover(shares, 'B', 1000, 1000).table[250]).toBeCloseTo(0.05);
  });

  it('keeps all of a remainder whose node has no CPU or memory for a share that fits it', () => {
    const cpuMix = normaliseMix([
      { gpuCount: 1, tflops: 0.5, vram: 500, cpu: 8, weight: 1 },
      { gpuCount: 1, tflops: 0.3, vram: 300, cpu: 2, memory: 100, weight: 1 },
    ]);
    const l = expectedLeftover(cpuMix, 'A', 1000, 1000);
    expect(keptFree(l, 600, 8, 100)).toBe(l.table[600]);
    expect(keptFree(l, 600, 2, 100)).toBe(l.table[600]); // the 0.3 share still fits
    expect(keptFree(l, 600, 2, 50)).toBeCloseTo(0.6); // neither: 2 cores, 50 bytes
    expect(keptFree(l, 400, 8, 0)).toBeCloseTo(0.4); // only the 0.3 fits 0.4, and it needs memory
  });
});

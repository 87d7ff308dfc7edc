import { Allocation, Allocator, LearnedMixes, PlacementReason } from '../../lib/allocator';
import { PlacementMode } from '../../lib/model/rules';
import { GiB, node, req } from './fixtures';

function placed(a: Allocator, r: Parameters<Allocator['allocate']>[0], on?: string): Allocation {
  const result = a.allocate(r, on === undefined ? undefined : { node: on });
  if (!result.ok) throw new Error(`not placed: ${JSON.stringify(result.reasons)}`);
  return result.allocation;
}

function reasons(a: Allocator, r: Parameters<Allocator['allocate']>[0]): readonly PlacementReason[] {
  const result = a.allocate(r);
  if (result.ok) throw new Error(`unexpectedly placed on ${result.allocation.node}`);
  return result.reasons;
}

describe('placement modes', () => {
  // Node a: gpu0 half used, gpu1 free. Node b: both free. A quarter-GPU request then goes:
  function cluster(mode: PlacementMode): Allocator {
    const a = new Allocator({
      pools: { p: { placementMode: mode, workloadMix: [{ gpuCount: 1, tflops: 100, vram: 40 * GiB, weight: 1 }] } },
    });
    a.addNode(node('a', 2));
    a.addNode(node('b', 2));
    expect(a.allocate(req('seed', 0.5, { placementMode: 'CompactFirst' })).ok).toBe(true);
    expect(a.allocation('seed')?.gpuIds[0]).toMatch(/-gpu0$/);
    return a;
  }

  function where(mode: PlacementMode): [string, readonly string[]] {
    const a = cluster(mode);
    const seedNode = (a.allocation('seed') as Allocation).node;
    const x = placed(a, req('x', 0.25));
    // Express the answer relative to the node holding the seed allocation.
    return [x.node === seedNode ? 'used' : 'empty', x.gpuIds.map((id) => (id.endsWith('gpu0') ? 'gpu0' : 'gpu1'))];
  }

  it('CompactFirst fills the used node and its fullest GPU', () => {
    expect(where('CompactFirst')).toEqual(['used', ['gpu0']]);
  });

  it('LowLoadFirst spreads to the empty node', () => {
    expect(where('LowLoadFirst')).toEqual(['empty', ['gpu0']]);
  });

  it('NodeCompactGPULowLoad packs the node but takes its emptiest GPU', () => {
    expect(where('NodeCompactGPULowLoad')).toEqual(['used', ['gpu1']]);
  });

  it('MinFragmentation keeps whole GPUs free when whole-GPU requests are typical', () => {
    expect(where('MinFragmentation')).toEqual(['used', ['gpu0']]);
  });

  it('MinFragmentation keeps room for typical requests where binpack would not', () => {
    // Single-GPU nodes: a has 0.5 free, b has 0.4 free. Typical requests want 0.4 of a GPU.
    const build = (mode: PlacementMode) => {
      const a = new Allocator({
        pools: { p: { placementMode: mode, workloadMix: [{ gpuCount: 1, tflops: 40, vram: 16 * GiB, weight: 1 }] } },
      });
      a.addNode(node('a', 1));
      a.addNode(node('b', 1));
      a.rebuild([
        {
          ...baseAlloc,
          id: 'ua',
          node: 'a',
          gpuIds: ['a-gpu0'],
          tflopsRequest: 50,
          tflopsLimit: 50,
          vramRequest: 20 * GiB,
          vramLimit: 20 * GiB,
        },
        {
          ...baseAlloc,
          id: 'ub',
          node: 'b',
          gpuIds: ['b-gpu0'],
          tflopsRequest: 60,
          tflopsLimit: 60,
          vramRequest: 24 * GiB,
          vramLimit: 24 * GiB,
        },
      ]);
      return placed(a, req('x', 0.1)).node;
    };
    // Binpack takes b (0.4 -> 0.3, now too small for a typical request); a keeps 0.4 after the request.
    expect(build('CompactFirst')).toBe('b');
    expect(build('MinFragmentation')).toBe('a');
  });

  it('MinFragmentation leaves a remainder that the mix can still fill', () => {
    // Single-GPU nodes: a holds 0.23 (0.77 free), b holds 0.32 (0.68 free). A 0.47 share on b leaves
    // 0.21, which no share of the mix fits; on a it leaves 0.3, which a 0.23 share takes to 0.07. FGD's
    // measure alone picks b: 0.3 is too small for more of the mix than 0.21 is.
    const mix = [
      [0.47, 5],
      [0.23, 2],
      [0.32, 3],
      [0.65, 2],
      [0.81, 3],
      [1, 3],
    ].map(([s, weight]) => ({ gpuCount: 1, tflops: 100 * s, vram: Math.round(40 * GiB * s), weight }));
    const a = new Allocator({ seed: 1, pools: { p: { placementMode: 'MinFragmentation', workloadMix: mix } } });
    a.addNode(node('a', 1));
    a.addNode(node('b', 1));
    placed(a, req('x', 0.23), 'a');
    placed(a, req('y', 0.32), 'b');
    expect(placed(a, req('z', 0.47)).node).toBe('a');
  });

  it('MinFragmentation counts a remainder whose node has no CPU left for the mix as kept for good', () => {
    // 16-core single-GPU nodes: a holds 0.65 with 12 cores, b 0.47 with 12 cores. A 0.23 share with 4
    // cores takes the last cores either way, so what its GPU has left stays free: 0.12 on a, 0.3 on b.
    const mix = [
      [0.47, 5, 8],
      [0.23, 2, 8],
      [0.32, 3, 4],
      [0.65, 2, 4],
      [1, 3, 8],
    ].map(([s, weight, cores]) => ({ gpuCount: 1, tflops: 100 * s, vram: Math.round(40 * GiB * s), cpu: cores * 1000, weight }));
    const a = new Allocator({ seed: 1, pools: { p: { placementMode: 'MinFragmentation', workloadMix: mix } } });
    a.addNode(node('a', 1, { cpu: 16000 }));
    a.addNode(node('b', 1, { cpu: 16000 }));
    placed(a, req('x', 0.65, { cpu: 12000 }), 'a');
    placed(a, req('y', 0.47, { cpu: 12000 }), 'b');
    expect(placed(a, req('z', 0.23, { cpu: 4000 })).node).toBe('a');
  });

  it("MinFragmentation keeps a node's last multi-GPU slot where multi-GPU work is much of the mix", () => {
    // Typical work: 1 GPU with 30 CPU (weight 6) and 4 GPUs with 40 CPU (weight 1): 4 of every 10 GPUs
    // asked for go to 4-GPU requests, so the stranded-GPU term is off (strandedWeight 0). Node a has 7
    // free GPUs and 80 CPU: room for one 4-GPU request. With the term, 3 of those GPUs already counted
    // as stranded and losing the slot looked cheap: a 1-GPU request with 50 CPU went to a, and the next
    // 4-GPU request fit nowhere. Without it, the request takes the small node b.
    const a = new Allocator({
      seed: 1,
      pools: {
        p: {
          placementMode: 'MinFragmentation',
          workloadMix: [
            { gpuCount: 1, tflops: 100, vram: 40 * GiB, cpu: 30, weight: 6 },
            { gpuCount: 4, tflops: 100, vram: 40 * GiB, cpu: 40, weight: 1 },
          ],
        },
      },
    });
    a.addNode(node('a', 8, { cpu: 120 }));
    a.addNode(node('b', 2, { cpu: 60 }));
    placed(a, req('x', 1, { cpu: 40 }), 'a');
    expect(placed(a, req('y', 1, { cpu: 50 })).node).toBe('b');
    expect(placed(a, req('z', 1, { gpuCount: 4, cpu: 40 })).node).toBe('a');
  });

  describe('a learned mix kept by the caller (LearnedMixes)', () => {
    // Single-GPU nodes: a holds 0.6, b 0.3; a 0.3 share then goes to a when typical work is 0.3 and
    // 0.6 shares (a's 0.4 is lost to the 0.6 ones anyway), to b when it is 0.4 shares (both keep one).
    // With no mix at all, seed 0 breaks the tie towards a.
    function cluster(learned?: LearnedMixes): Allocator {
      const a = new Allocator({ seed: 0, ...(learned ? { learned } : {}), pools: { p: { placementMode: 'MinFragmentation' } } });
      a.addNode(node('a', 1));
      a.addNode(node('b', 1));
      return a;
    }

    it('counts only what the caller observes, and carries it to the next allocator', () => {
      const learned = new LearnedMixes();
      const first = cluster(learned);
      first.observe(req('m', 0.4));
      const x = placed(first, req('x', 0.6), 'a');
      const y = placed(first, req('y', 0.3), 'b');
      expect(first.best(req('z', 0.3), ['a', 'b'])).toBe('b');
      // A rebuild: the restored shares do not count, the mix learned so far does.
      const second = cluster(learned);
      second.restore([x, y]);
      expect(second.best(req('z', 0.3), ['a', 'b'])).toBe('b');
    });

    it('without one, each allocator learns from what it places', () => {
      const a = cluster();
      a.observe(req('m', 0.4));
      placed(a, req('x', 0.6), 'a');
      placed(a, req('y', 0.3), 'b');
      expect(placed(a, req('z', 0.3)).node).toBe('a');
    });
  });

  it('MinFragmentation keeps scarce models for the requests that can only run there', () => {
    // Typical work: whole GPUs with 40 CPU (weight 0.6), and whole T4s (0.4). The request takes a
    // whole GPU and 70 CPU: on the CPU-poor A100 node it strands the other GPU for the first kind,
    // which alone would send it to the T4 node; the T4s' pressure (0.4 x 4 GPUs / 2 T4s) outweighs that.
    const a = new Allocator({
      pools: {
        p: {
          workloadMix: [
            { gpuCount: 1, tflops: 100, vram: 40 * GiB, cpu: 40, weight: 0.6 },
            { gpuCount: 1, tflops: 100, vram: 40 * GiB, models: ['T4'], weight: 0.4 },
          ],
        },
      },
    });
    a.addNode(node('t4', 2, { model: 'T4', cpu: 1000 }));
    a.addNode(node('a100', 2, { cpu: 100 }));
    expect(placed(a, req('x', 1, { cpu: 70 })).node).toBe('a100');
  });

  it('multi-GPU requests take distinct GPUs of one node, listed by index', () => {
    const a = new Allocator();
    a.addNode(node('a', 2));
    a.addNode(node('b', 4));
    const x = placed(a, req('x', 1, { gpuCount: 3 }));
    expect(x.node).toBe('b');
    expect(x.gpuIds).toEqual(['b-gpu0', 'b-gpu1', 'b-gpu2']);
    expect(a.nodeUsage('b')?.gpus.map((g) => g.tflops.available)).toEqual([0, 0, 0, 100]);
  });

  it('honours the GPU model filter', () => {
    const a = new Allocator();
    a.addNode(node('a', 1, { model: 'T4' }));
    a.addNode(node('b', 1, { model: 'A100' }));
    expect(placed(a, req('x', 0.1, { gpuModel: 'T4' })).node).toBe('a');
    expect(placed(a, req('y', 0.1, { gpuModel: ['L4', 'A100'] })).node).toBe('b');
  });

  it('CPU-only requests take CPU and memory only', () => {
    const a = new Allocator();
    a.addNode(node('a', 1, { cpu: 4000, memory: 8 * GiB }));
    const x = placed(a, req('x', 0, { gpuCount: 0, cpu: 1000, memory: GiB }));
    expect(x.gpuIds).toEqual([]);
    expect(a.nodeUsage('a')?.cpu).toEqual({ capacity: 4000, requested: 1000 });
    expect(a.nodeUsage('a')?.gpus[0].tflops.requested).toBe(0);
  });
});

const baseAlloc: Allocation = {
  id: '',
  pool: 'p',
  node: '',
  gpuIds: [],
  tflopsRequest: 0,
  tflopsLimit: 0,
  vramRequest: 0,
  vramLimit: 0,
  cpu: 0,
  memory: 0,
  qos: 'medium',
};

describe('reasons', () => {
  it('NoNodesInPool', () => {
    const a = new Allocator();
    expect(reasons(a, req('x', 0.1, { pool: 'missing' }))).toEqual([
      { kind: 'NoNodesInPool', pool: 'missing', message: 'pool "missing" has no nodes' },
    ]);
  });

  it('NoGpuOfModel', () => {
    const a = new Allocator();
    a.addNode(node('a', 2));
    expect(reasons(a, req('x', 0.1, { gpuModel: ['H100', 'B200'] }))).toEqual([
      { kind: 'NoGpuOfModel', models: ['B200', 'H100'], gpus: 2, message: "none of the pool's 2 GPUs is a B200 or H100" },
    ]);
  });

  it('InsufficientVram and InsufficientTflops count GPUs', () => {
    const a = new Allocator();
    a.addNode(node('a', 2));
    a.addNode(node('b', 1));
    placed(a, req('v', 0, { vramRequest: 30 * GiB, tflopsRequest: 10, placementMode: 'LowLoadFirst' }));
    placed(a, req('w', 0, { vramRequest: 30 * GiB, tflopsRequest: 10, placementMode: 'LowLoadFirst' }));
    placed(a, req('t', 0, { vramRequest: GiB, tflopsRequest: 90, placementMode: 'LowLoadFirst' }));
    expect(reasons(a, req('x', 0, { vramRequest: 20 * GiB, tflopsRequest: 20 }))).toEqual([
      { kind: 'InsufficientVram', gpus: 2, message: '2 GPUs: not enough free VRAM' },
      { kind: 'InsufficientTflops', gpus: 1, message: '1 GPU: not enough free TFLOPS' },
    ]);
  });

  it('TflopsOversellExceeded: limits stop at capacity x ratio / 100', () => {
    const a = new Allocator({ pools: { p: { tflopsOversellRatio: 200 } } });
    a.addNode(node('a', 1));
    placed(a, req('x', 0.1, { tflopsLimit: 150 }));
    expect(placed(a, req('y', 0.1, { tflopsLimit: 50 })).node).toBe('a');
    expect(reasons(a, req('z', 0.1, { tflopsLimit: 10 }))).toEqual([
      { kind: 'TflopsOversellExceeded', gpus: 1, ratio: 200, message: '1 GPU: TFLOPS limits would exceed 200% of capacity' },
    ]);
    expect(a.gpuUsage('a-gpu0')?.tflops).toEqual({ capacity: 100, requested: 20, limits: 200, available: 80 });
  });

  it('the default oversell ratio is 500%', () => {
    const a = new Allocator();
    a.addNode(node('a', 1));
    expect(a.allocate(req('x', 0.1, { tflopsLimit: 500 })).ok).toBe(true);
    expect(reasons(a, req('y', 0.01, { tflopsLimit: 1 }))[0].kind).toBe('TflopsOversellExceeded');
  });

  it('NotEnoughGpusOnOneNode, even when the pool has enough GPUs in total', () => {
    const a = new Allocator();
    a.addNode(node('a', 2));
    a.addNode(node('b', 4));
    placed(a, req('x', 0.5, { gpuModel: 'A100', gpuCount: 2, placementMode: 'LowLoadFirst' }));
    expect(reasons(a, req('y', 0.6, { gpuCount: 3 }))).toEqual([
      { kind: 'InsufficientVram', gpus: 2, message: '2 GPUs: not enough free VRAM' },
      {
        kind: 'NotEnoughGpusOnOneNode',
        nodes: 2,
        needed: 3,
        mostOnOneNode: 2,
        message: '2 nodes: fewer than 3 fitting GPUs (at most 2 on one node)',
      },
    ]);
  });

  it('InsufficientCpu and InsufficientMemory count nodes', () => {
    const a = new Allocator();
    a.addNode(node('a', 1, { cpu: 1000, memory: 8 * GiB }));
    a.addNode(node('b', 1, { cpu: 8000, memory: GiB }));
    expect(reasons(a, req('x', 0.1, { cpu: 2000, memory: 2 * GiB }))).toEqual([
      { kind: 'InsufficientCpu', nodes: 1, message: '1 node: not enough CPU' },
      { kind: 'InsufficientMemory', nodes: 1, message: '1 node: not enough memory' },
    ]);
  });

  it('a failed request changes nothing', () => {
    const a = new Allocator();
    a.addNode(node('a', 1));
    placed(a, req('x', 0.7));
    const before = a.snapshot();
    expect(a.allocate(req('y', 0.5)).ok).toBe(false);
    expect(a.snapshot()).toEqual(before);
  });
});

describe('release, rebuild and nodes', () => {
  it('release frees the shares and is idempotent', () => {
    const a = new Allocator();
    a.addNode(node('a', 1));
    placed(a, req('x', 0.7));
    expect(a.release('x')).toBe(true);
    expect(a.release('x')).toBe(false);
    expect(a.gpuUsage('a-gpu0')?.vram.requested).toBe(0);
    expect(a.allocate(req('y', 1)).ok).toBe(true);
  });

  it('rebuild restores allocations and lists the ones it cannot', () => {
    const a = new Allocator();
    a.addNode(node('a', 2));
    a.addNode({ ...node('q', 1), pool: 'other' });
    const good = {
      ...baseAlloc,
      id: 'g',
      node: 'a',
      gpuIds: ['a-gpu1'],
      tflopsRequest: 10,
      tflopsLimit: 20,
      vramRequest: GiB,
      vramLimit: GiB,
    };
    const result = a.rebuild([
      good,
      { ...good },
      { ...good, id: 'n', node: 'zz' },
      { ...good, id: 'w', gpuIds: ['q-gpu0'] },
      { ...good, id: 'o', node: 'q', gpuIds: ['q-gpu0'] },
      { ...good, id: 'd', gpuIds: ['a-gpu0', 'a-gpu0'] },
    ]);
    expect(result).toEqual({
      restored: 1,
      skipped: [
        { id: 'g', reason: 'id already allocated' },
        { id: 'n', reason: 'unknown node "zz"' },
        { id: 'w', reason: 'GPU "q-gpu0" is not on node "a"' },
        { id: 'o', reason: 'node "q" is in pool "other"' },
        { id: 'd', reason: 'a GPU is listed twice' },
      ],
    });
    expect(a.gpuUsage('a-gpu1')?.tflops).toEqual({ capacity: 100, requested: 10, limits: 20, available: 90 });
    expect(a.poolUsage('p')).toEqual({
      name: 'p',
      nodes: 1,
      gpus: 2,
      tflops: { capacity: 200, requested: 10, available: 190 },
      vram: { capacity: 80 * GiB, requested: GiB, available: 79 * GiB },
      allocations: 1,
    });
  });

  it('removeNode releases its allocations; updateNode keeps those whose GPUs remain', () => {
    const a = new Allocator({ pools: { p: { placementMode: 'LowLoadFirst' } } });
    a.addNode(node('a', 2));
    placed(a, req('x', 0.5));
    placed(a, req('y', 0.5));
    expect(a.allocation('x')?.gpuIds).toEqual(['a-gpu0']);
    expect(a.updateNode({ ...node('a', 2), gpus: node('a', 2).gpus.slice(1) })).toEqual(['x']);
    expect(a.allocations().map((x) => x.id)).toEqual(['y']);
    expect(a.removeNode('a')).toEqual(['y']);
    expect(a.snapshot()).toEqual({ pools: [expect.objectContaining({ name: 'p', nodes: 0, gpus: 0 })], nodes: [] });
  });
});

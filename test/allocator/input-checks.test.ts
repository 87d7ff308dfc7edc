import { AllocationRequest, Allocator, NodeSpec, PoolConfig } from '../../lib/allocator';
import { GiB, node, req } from './fixtures';
import { issueMessages } from '../support/validation';

function withNode(): Allocator {
  const a = new Allocator();
  a.addNode(node('a', 1));
  return a;
}

describe('request validation', () => {
  const cases: [string, Partial<AllocationRequest> | Record<string, unknown>, string][] = [
    ['id', { id: '' }, 'request.id: got "", expected a non-empty string'],
    ['pool', { pool: 7 }, 'request.pool: got 7, expected a non-empty string'],
    ['tflopsRequest', { tflopsRequest: -1 }, 'request.tflopsRequest: got -1, expected a finite number >= 0'],
    ['tflopsLimit', { tflopsLimit: Infinity }, 'request.tflopsLimit: got null, expected a finite number >= 0'],
    [
      'tflopsLimit below request',
      { tflopsRequest: 10, tflopsLimit: 5 },
      'request.tflopsLimit: got 5, expected at least request.tflopsRequest (10)',
    ],
    ['vramRequest', { vramRequest: 1.5 }, 'request.vramRequest: got 1.5, expected a non-negative integer'],
    ['vramLimit', { vramLimit: -1 }, 'request.vramLimit: got -1, expected a non-negative integer'],
    [
      'vramLimit below request',
      { vramRequest: GiB, vramLimit: 1 },
      `request.vramLimit: got 1, expected at least request.vramRequest (${GiB})`,
    ],
    ['gpuCount', { gpuCount: 129 }, 'request.gpuCount: got 129, expected an integer from 0 to 128'],
    ['gpuModel', { gpuModel: [] }, 'request.gpuModel: got [], expected a GPU model name or a non-empty list of them'],
    ['qos', { qos: 'urgent' }, 'request.qos: got "urgent", expected one of low, medium, high, critical'],
    ['cpu', { cpu: -5 }, 'request.cpu: got -5, expected a non-negative integer'],
    ['memory', { memory: 'lots' }, 'request.memory: got "lots", expected a non-negative integer'],
    [
      'placementMode',
      { placementMode: 'Best' },
      'request.placementMode: got "Best", expected one of MinFragmentation, CompactFirst, LowLoadFirst, NodeCompactGPULowLoad',
    ],
  ];
  it.each(cases)('%s', (_name, patch, message) => {
    const a = withNode();
    const before = a.snapshot();
    expect(issueMessages(() => a.allocate({ ...req('x', 0.1), ...patch } as AllocationRequest))).toEqual([message]);
    expect(a.snapshot()).toEqual(before);
  });

  it('observe checks the request as allocate does', () => {
    const a = withNode();
    expect(issueMessages(() => a.observe({ ...req('x', 0.1), gpuCount: 0.5 }))).toEqual([
      'request.gpuCount: got 0.5, expected an integer from 0 to 128',
    ]);
  });

  it('an id already allocated', () => {
    const a = withNode();
    a.allocate(req('x', 0.1));
    expect(issueMessages(() => a.allocate(req('x', 0.1)))).toEqual(['request.id: got "x", expected an id not already allocated']);
  });
});

describe('node validation', () => {
  const gpu = node('n', 1).gpus[0];
  const cases: [string, Record<string, unknown>, string][] = [
    ['name', { name: '' }, 'node.name: got "", expected a non-empty string'],
    ['pool', { pool: undefined }, 'node.pool: got nothing, expected a non-empty string'],
    ['cpu', { cpu: 1.5 }, 'node.cpu: got 1.5, expected a non-negative integer'],
    ['memory', { memory: -1 }, 'node.memory: got -1, expected a non-negative integer'],
    ['gpus', { gpus: 'x' }, 'node.gpus: got "x", expected a list of GPUs'],
    ['gpu id', { gpus: [{ ...gpu, id: '' }] }, 'node.gpus[0].id: got "", expected a non-empty string'],
    [
      'repeated gpu id',
      { gpus: [gpu, { ...gpu, index: 1 }] },
      'node.gpus[1].id: got "n-gpu0", expected an id not used by another GPU of the node',
    ],
    ['gpu index', { gpus: [{ ...gpu, index: -1 }] }, 'node.gpus[0].index: got -1, expected a non-negative integer'],
    [
      'repeated gpu index',
      { gpus: [gpu, { ...gpu, id: 'other' }] },
      'node.gpus[1].index: got 0, expected an index not used by another GPU of the node',
    ],
    ['gpu model', { gpus: [{ ...gpu, model: '' }] }, 'node.gpus[0].model: got "", expected a non-empty string'],
    ['gpu tflops', { gpus: [{ ...gpu, tflops: 0 }] }, 'node.gpus[0].tflops: got 0, expected a finite number > 0'],
    ['gpu vram', { gpus: [{ ...gpu, vram: 0 }] }, 'node.gpus[0].vram: got 0, expected a positive integer'],
  ];
  it.each(cases)('%s', (_name, patch, message) => {
    const a = new Allocator();
    expect(issueMessages(() => a.addNode({ ...node('n', 1), ...patch } as NodeSpec))).toEqual([message]);
    expect(a.snapshot()).toEqual({ pools: [], nodes: [] });
  });

  it('a name already added, a GPU id used elsewhere, an update of an unknown node', () => {
    const a = withNode();
    expect(issueMessages(() => a.addNode(node('a', 1)))).toEqual(['node.name: got "a", expected a node name not added yet']);
    expect(issueMessages(() => a.addNode({ ...node('b', 1), gpus: node('a', 1).gpus }))).toEqual([
      'node.gpus[0].id: got "a-gpu0", expected a GPU id not used on another node',
    ]);
    expect(issueMessages(() => a.updateNode(node('zz', 1)))).toEqual(['node.name: got "zz", expected the name of a node already added']);
  });

  it('a failed update leaves the node and its allocations as they were', () => {
    const a = withNode();
    a.addNode(node('b', 1));
    a.allocate(req('x', 0.5, { gpuModel: 'A100' }));
    const before = a.snapshot();
    expect(issueMessages(() => a.updateNode({ ...node('a', 1), gpus: node('b', 1).gpus }))).toEqual([
      'node.gpus[0].id: got "b-gpu0", expected a GPU id not used on another node',
    ]);
    expect(a.snapshot()).toEqual(before);
  });
});

describe('pool validation', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'oversell below 100',
      { tflopsOversellRatio: 99 },
      'pools.p.tflopsOversellRatio: got 99, expected an integer percent from 100 to 100000',
    ],
    [
      'oversell not an integer',
      { tflopsOversellRatio: 150.5 },
      'pools.p.tflopsOversellRatio: got 150.5, expected an integer percent from 100 to 100000',
    ],
    [
      'placementMode',
      { placementMode: 'Random' },
      'pools.p.placementMode: got "Random", expected one of MinFragmentation, CompactFirst, LowLoadFirst, NodeCompactGPULowLoad',
    ],
    [
      'mix gpuCount',
      { workloadMix: [{ gpuCount: -1, tflops: 1, vram: 1, weight: 1 }] },
      'pools.p.workloadMix[0].gpuCount: got -1, expected an integer from 0 to 128',
    ],
    [
      'mix tflops',
      { workloadMix: [{ gpuCount: 1, tflops: NaN, vram: 1, weight: 1 }] },
      'pools.p.workloadMix[0].tflops: got null, expected a finite number >= 0',
    ],
    [
      'mix vram',
      { workloadMix: [{ gpuCount: 1, tflops: 1, vram: 0.5, weight: 1 }] },
      'pools.p.workloadMix[0].vram: got 0.5, expected a non-negative integer',
    ],
    [
      'mix cpu',
      { workloadMix: [{ gpuCount: 1, tflops: 1, vram: 1, cpu: -1, weight: 1 }] },
      'pools.p.workloadMix[0].cpu: got -1, expected a non-negative integer',
    ],
    [
      'mix memory',
      { workloadMix: [{ gpuCount: 1, tflops: 1, vram: 1, memory: 0.1, weight: 1 }] },
      'pools.p.workloadMix[0].memory: got 0.1, expected a non-negative integer',
    ],
    [
      'mix weight',
      { workloadMix: [{ gpuCount: 1, tflops: 1, vram: 1, weight: 0 }] },
      'pools.p.workloadMix[0].weight: got 0, expected a finite number > 0',
    ],
  ];
  it.each(cases)('%s', (_name, config, message) => {
    expect(issueMessages(() => new Allocator({ pools: { p: config as PoolConfig } }))).toEqual([message]);
    const a = withNode();
    expect(issueMessages(() => a.configurePool('p', config as PoolConfig))).toEqual([message]);
  });
});

/** Telling a share that waits for GPU room from one no new node helps, from kube-scheduler's words (lib/runtime/shared/wait-reasons.ts). */
import { nodeReason } from '../../../lib/runtime/extender/node-reasons';
import { BIND_UNCONFIRMED, waitsForRoom } from '../../../lib/runtime/shared/wait-reasons';
import { excessMessage } from '../../../lib/runtime/shared/quota';
import type { PlacementReason } from '../../../lib/allocator';

const scheduler = (...reasons: string[]) =>
  `0/${reasons.length} nodes are available: ${reasons.map((r) => `1 ${r}`).join(', ')}. preemption: not eligible.`;
const says = (reason: PlacementReason, gpuCount = 1) => nodeReason([reason], gpuCount);

describe('waitsForRoom', () => {
  it.each([
    ['VRAM', says({ kind: 'InsufficientVram', message: '' } as PlacementReason)],
    ['TFLOPS', says({ kind: 'InsufficientTflops', message: '' } as PlacementReason)],
    ['GPUs on one node', says({ kind: 'NotEnoughGpusOnOneNode', message: '' } as PlacementReason, 2)],
    ['oversell', says({ kind: 'TflopsOversellExceeded', message: '' } as PlacementReason)],
    ['CPU for the share', says({ kind: 'InsufficientCpu', message: '' } as PlacementReason)],
    ['an empty pool', says({ kind: 'NoNodesInPool', pool: 'p', message: '' } as PlacementReason)],
    ["kube-scheduler's CPU", 'Insufficient cpu'],
  ])('room: %s', (_what, words) => {
    expect(waitsForRoom(scheduler(words, "node(s) didn't match Pod's node affinity/selector"))).toBe(true);
  });

  it.each([
    ['a quota', excessMessage('ml', { resource: 'tflopsRequest', would: 420_000, of: 400_000, quota: 'team' } as never)],
    ['a bind not confirmed', BIND_UNCONFIRMED],
    ['a model the pool lacks', says({ kind: 'NoGpuOfModel', models: ['H100'], gpus: 4, message: '' } as PlacementReason)],
    [
      'a limit above oversell',
      says({
        kind: 'TflopsLimitAboveOversell',
        message: 'tflops-limit 2000 is above 1560 TFLOPS, the most one GPU may be oversold to (312 TFLOPS x 500%)',
      } as PlacementReason),
    ],
  ])('no node helps: %s, even beside nodes without room', (_what, words) => {
    const vram = says({ kind: 'InsufficientVram', message: '' } as PlacementReason);
    expect(waitsForRoom(scheduler(words))).toBe(false);
    expect(waitsForRoom(scheduler(vram, words))).toBe(false);
  });

  it('is false for a pod with no message or only constraints of other nodes', () => {
    expect(waitsForRoom(undefined)).toBe(false);
    expect(waitsForRoom(scheduler('node(s) had untolerated taint {a: b}'))).toBe(false);
  });
});

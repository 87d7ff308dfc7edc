/** Pool capacity from node inventories and pod usage, and the pool's node selector. */
import { gpuPoolStatus, nodeInventory, usageFromPods } from '../../../lib/runtime/shared/capacity';
import { matchesNodeSelector } from '../../../lib/runtime/reconcile/node-selector';
import { gpuNodeObj, podObj, poolObj } from '../fixtures';

describe('capacity', () => {
  test('pool status sums nodes with the oversell ratio and subtracts pod allocations', () => {
    const n = gpuNodeObj('n1', { count: 2 });
    const inv = nodeInventory(n.metadata.labels)!;
    expect(inv).toMatchObject({ model: 'A100', count: 2, tflopsPerGpu: 312, vramPerGpu: 80 * 2 ** 30 });
    const usage = usageFromPods([
      podObj('a', 'n1', { gpus: 'n1-gpu-0,n1-gpu-1', tflops: '10', vram: '1Gi' }) as never,
      podObj('b', 'n1', { gpus: 'n1-gpu-0', tflops: '5', phase: 'Succeeded' }) as never,
    ]);
    expect(usage.get('n1-gpu-0')).toEqual({ tflops: 10, vram: 2 ** 30, pods: 1 });
    const pool = poolObj('p', 'a') as never;
    const s = gpuPoolStatus(
      pool,
      [
        {
          phase: 'Running',
          totalGPUs: 2,
          managedGPUs: 2,
          totalTFlops: '624',
          totalVRAM: '160Gi',
          availableTFlops: '604',
          availableVRAM: '158Gi',
        },
      ],
      ['Running', 'Running'],
      undefined,
      '2026-01-01T00:00:00Z',
    );
    expect(s).toMatchObject({
      totalTFlops: '624',
      availableTFlops: '604',
      virtualTFlops: '1248',
      virtualAvailableTFlops: '1228',
      availableVRAM: '158Gi',
      readyGPUs: 2,
      phase: 'Running',
    });
  });

  test('node selectors: terms are ORed, requirements ANDed, no selector matches nothing', () => {
    const sel = {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: 'a', operator: 'In' as const, values: ['1'] },
            { key: 'b', operator: 'DoesNotExist' as const },
          ],
        },
        { matchFields: [{ key: 'metadata.name', operator: 'In' as const, values: ['special'] }] },
      ],
    };
    expect(matchesNodeSelector({ name: 'x', labels: { a: '1' } }, sel)).toBe(true);
    expect(matchesNodeSelector({ name: 'x', labels: { a: '1', b: '' } }, sel)).toBe(false);
    expect(matchesNodeSelector({ name: 'special' }, sel)).toBe(true);
    expect(matchesNodeSelector({ name: 'x', labels: { a: '1' } }, undefined)).toBe(false);
  });
});

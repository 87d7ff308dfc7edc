/** The ResourceSlice a node agent publishes for a node of a DRA pool. */
import { sortedKeys } from '../../support/sorted-keys';
import { resourceSlice, sameDevices, SliceGpu } from '../../../lib/runtime/shared/dra/resource-slice';
import { poolObj } from '../fixtures';

const GI = 2 ** 30;
const gpu = (index: number, extra: Partial<SliceGpu> = {}): SliceGpu => ({
  uuid: `GPU-${index}`,
  model: 'H100',
  index,
  minor: index + 4,
  tflops: 989,
  vram: 80 * GI,
  ...extra,
});
const pool = poolObj('p', 'a') as never; // oversell ratio 200

describe('resourceSlice', () => {
  test('one shareable device per GPU with its attributes, TFLOPS after the oversell ratio and VRAM, each rounded by the request policy', () => {
    const s = resourceSlice({ nodeName: 'n1', pool, gpus: [gpu(1), gpu(0)], generation: 3 });
    expect(s).toEqual({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name: 'n1-gpu.tensor-fusion.ai' },
      spec: {
        driver: 'gpu.tensor-fusion.ai',
        nodeName: 'n1',
        pool: { name: 'n1', generation: 3, resourceSliceCount: 1 },
        devices: [0, 1].map((i) => ({
          name: `gpu-${i}`,
          allowMultipleAllocations: true,
          attributes: {
            uuid: { string: `GPU-${i}` },
            model: { string: 'H100' },
            index: { int: i },
            minor: { int: i + 4 },
            pool: { string: 'p' },
          },
          capacity: {
            tflops: { value: '1978', requestPolicy: { default: '1978', validRange: { min: '1', step: '1' } } },
            memory: { value: '80Gi', requestPolicy: { default: '80Gi', validRange: { min: '1Mi', step: '1Mi' } } },
          },
        })),
      },
    });
  });

  test('the default oversell ratio (5x) applies to a pool that sets none; generation 1 by default; an unknown minor is left out', () => {
    const bare = { metadata: { name: 'q' }, spec: { nodeManagerConfig: {} } };
    const s = resourceSlice({ nodeName: 'n1', pool: bare, gpus: [gpu(0, { minor: undefined, tflops: 0.5 })] });
    expect(s.spec.pool.generation).toBe(1);
    expect(s.spec.devices[0].capacity.tflops.value).toBe('2.5');
    expect(s.spec.devices[0].attributes).not.toHaveProperty('minor');
  });

  test('the order lists devices first in the given order, the rest by index', () => {
    const s = resourceSlice({ nodeName: 'n1', pool, gpus: [0, 1, 2, 3].map((i) => gpu(i)), order: [2, 0] });
    expect(s.spec.devices.map((d) => d.name)).toEqual(['gpu-2', 'gpu-0', 'gpu-1', 'gpu-3']);
  });

  test('an order naming no GPU of the node is refused with the indices it has', () => {
    expect(() => resourceSlice({ nodeName: 'n1', pool, gpus: [gpu(0), gpu(1)], order: [1, 7] })).toThrow(
      'order[1]: 7 is not a GPU index of node n1 (it has 0, 1)',
    );
  });

  test('a GPU that is not ready stays listed with a NoSchedule taint naming why', () => {
    const s = resourceSlice({ nodeName: 'n1', pool, gpus: [gpu(0, { notReady: 'MPSDaemonFailed' }), gpu(1)] });
    expect(s.spec.devices[0].taints).toEqual([{ key: 'gpu.tensor-fusion.ai/not-ready', value: 'MPSDaemonFailed', effect: 'NoSchedule' }]);
    expect(s.spec.devices[1]).not.toHaveProperty('taints');
  });

  test("sameDevices: the API server's echo (keys sorted, quantities canonical, taints stamped) is the same; another value, order or taint is not", () => {
    const bare = { metadata: { name: 'q' }, spec: { nodeManagerConfig: {} } };
    const ours = resourceSlice({ nodeName: 'n1', pool: bare, gpus: [gpu(0, { tflops: 0.5, notReady: 'NotChecked' }), gpu(1)] }).spec
      .devices;
    const echo = sortedKeys(structuredClone(ours)) as any[];
    echo[0].capacity.tflops.value = '2500m';
    echo[0].taints[0].timeAdded = '2026-11-28T21:00:00Z';
    expect(JSON.stringify(echo)).not.toBe(JSON.stringify(ours));
    expect(sameDevices(ours, echo)).toBe(true);
    expect(sameDevices(ours, [echo[1], echo[0]])).toBe(false);
    expect(sameDevices(ours, [echo[0]])).toBe(false);
    expect(sameDevices(ours, [{ ...echo[0], taints: undefined }, echo[1]])).toBe(false);
    const more = structuredClone(echo);
    more[1].capacity.memory.value = '81Gi';
    expect(sameDevices(ours, more)).toBe(false);
  });
});

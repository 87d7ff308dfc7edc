/**
 * The controller's status writes while a node keeps taking pods: paced (status-pacer.ts), so a burst
 * costs a GPU a few status writes, not one per delay window, and the last one shows every pod.
 */
import { Controller } from '../../../lib/runtime/controller/controller';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { eventually, gpuNodeObj, podObj, poolObj, testController } from '../fixtures';

const DELAY_MS = 100;
const INTERVAL_MS = 1_000;
const PODS = 25;
const EVERY_MS = 100;
const GPU_STATUS = '/apis/tensor-fusion.ai/v1/gpus/n1-gpu-0/status';

describe('status writes during a burst of pods', () => {
  let api: ApiServerDouble;
  let ctl: Controller | undefined;

  beforeEach(async () => {
    api = await startApiServer({ bookmarkIntervalMs: 200 });
    api.put('gpupools', poolObj('pool-a', 'a'));
    api.put('nodes', gpuNodeObj('n1'));
  });

  afterEach(async () => {
    await ctl?.stop();
    await api.stop();
  });

  /** Starts a controller, places PODS pods on n1-gpu-0 one every EVERY_MS, and counts the GPU's status writes until it shows them all (and how long the burst took). */
  async function burst(intervalMs: number): Promise<{ writes: number; burstMs: number }> {
    ctl = testController(api, 'ctl', { podStatusDelayMs: DELAY_MS, podStatusIntervalMs: intervalMs });
    ctl.startInformers();
    await ctl.startReconciling(clusterFor(api, 'ctl'));
    await eventually(() => expect(api.getObject('gpus', 'n1-gpu-0')?.status?.available).toEqual({ tflops: '312', vram: '80Gi' }));
    const before = api.requests.length;
    const started = Date.now();
    for (let i = 0; i < PODS; i++) {
      api.put('pods', podObj(`p${i}`, 'n1', { gpus: 'n1-gpu-0', tflops: '1', vram: '1Gi' }));
      await new Promise((r) => setTimeout(r, EVERY_MS));
    }
    const burstMs = Date.now() - started;
    await eventually(() => expect(api.getObject('gpus', 'n1-gpu-0')?.status?.available).toEqual({ tflops: '287', vram: '55Gi' }));
    return { writes: api.requests.slice(before).filter((r) => r.method === 'PUT' && r.path === GPU_STATUS).length, burstMs };
  }

  test(`${PODS} pods over ${(PODS * EVERY_MS) / 1000} s: the GPU's status is written at most once per interval, and ends showing every pod`, async () => {
    // Writes at ~0.1 s, then one per interval while pods come (4 when the burst takes its 2.5 s), and
    // the last after it.
    const { writes, burstMs } = await burst(INTERVAL_MS);
    expect(writes).toBeLessThanOrEqual(Math.ceil(burstMs / INTERVAL_MS) + 2);
  });

  test('without an interval, the same burst writes it once per delay window', async () => {
    expect((await burst(0)).writes).toBeGreaterThanOrEqual(10);
  });
});

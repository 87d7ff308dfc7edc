/**
 * The controller against the API-server double under faults: after each fault the cluster converges to
 * the same state, with no lost or duplicated objects in the caches or in what the controller wrote.
 */
import { XGN_TAINT } from '../../../lib/t9k/keys';
import { Controller } from '../../../lib/runtime/reconcile/controller';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { eventually, gpuNodeObj, podObj, poolObj, testController, workloadObj } from '../fixtures';

const OTHER_TAINT = { key: 'example.com/dedicated', value: 'ml', effect: 'NoExecute' };

/** Initial cluster: pool-a takes n1 (2×A100, xgn) and n2 (1×T4); n3 belongs to no pool. */
function seed(api: ApiServerDouble): void {
  api.put('gpupools', poolObj('pool-a', 'a'));
  api.put('nodes', gpuNodeObj('n1', { xgn: true, taints: [OTHER_TAINT] }));
  api.put('nodes', gpuNodeObj('n2', { product: 'Tesla-T4', count: 1, memMiB: 15360 }));
  api.put('nodes', gpuNodeObj('n3', { pool: 'b' }));
  api.put('pods', podObj('p1', 'n1', { gpus: 'n1-gpu-0', tflops: '10', vram: '4Gi', workload: 'w1' }));
  api.put('pods', podObj('p2', 'n1', { workload: 'w1', ready: false }));
  api.put('tensorfusionworkloads', workloadObj('w1', 2));
}

/** Changes made while a fault is active. */
function churn(api: ApiServerDouble): void {
  api.put('nodes', gpuNodeObj('n4', { product: 'NVIDIA-L4', count: 1, memMiB: 23034 }));
  api.remove('nodes', 'n2');
  api.put('pods', podObj('p3', 'n1', { gpus: 'n1-gpu-1', tflops: '20', vram: '8Gi', workload: 'w1' }));
  api.put('pods', podObj('p2', 'n1', { workload: 'w1', ready: true }));
  api.put('nodes', gpuNodeObj('n1', { xgn: false, taints: [OTHER_TAINT, { ...XGN_TAINT }] }));
}

function names(api: ApiServerDouble, plural: string): string[] {
  return api
    .listObjects(plural)
    .map((o) => o.metadata.name)
    .sort();
}

function expectInitial(api: ApiServerDouble): void {
  expect(names(api, 'gpunodes')).toEqual(['n1', 'n2']);
  expect(names(api, 'gpus')).toEqual(['n1-gpu-0', 'n1-gpu-1', 'n2-gpu-0']);
  expect(api.getObject('gpus', 'n1-gpu-0')?.status?.available).toEqual({ tflops: '302', vram: '76Gi' });
  expect(api.getObject('nodes', 'n1')?.spec.taints).toEqual([OTHER_TAINT, { ...XGN_TAINT }]);
  const pool = api.getObject('gpupools', 'pool-a')?.status;
  expect(pool).toMatchObject({
    totalNodes: 2,
    readyNodes: 2,
    totalGPUs: 3,
    totalTFlops: '689',
    availableTFlops: '679',
    virtualTFlops: '1378',
    phase: 'Running',
  });
  expect(api.getObject('tensorfusionworkloads', 'w1', 'default')?.status).toMatchObject({
    workerCount: 2,
    readyWorkers: 1,
    phase: 'Pending',
  });
}

function expectAfterChurn(api: ApiServerDouble, ctl: Controller): void {
  expect(names(api, 'gpunodes')).toEqual(['n1', 'n4']);
  expect(names(api, 'gpus')).toEqual(['n1-gpu-0', 'n1-gpu-1', 'n4-gpu-0']);
  expect(api.getObject('gpus', 'n1-gpu-1')?.status?.available).toEqual({ tflops: '292', vram: '72Gi' });
  expect(api.getObject('nodes', 'n1')?.spec.taints).toEqual([OTHER_TAINT]);
  expect(api.getObject('gpupools', 'pool-a')?.status).toMatchObject({
    totalNodes: 2,
    totalGPUs: 3,
    totalTFlops: '745',
    availableTFlops: '715',
  });
  expect(api.getObject('tensorfusionworkloads', 'w1', 'default')?.status).toMatchObject({
    workerCount: 3,
    readyWorkers: 3,
    phase: 'Running',
  });
  // The caches hold exactly what the server holds: nothing lost, nothing duplicated.
  expect(
    ctl.nodes
      .list()
      .map((n) => n.metadata.name)
      .sort(),
  ).toEqual(names(api, 'nodes'));
  expect(
    ctl.pods
      .list()
      .map((p) => p.metadata.name)
      .sort(),
  ).toEqual(names(api, 'pods'));
  expect(
    ctl.gpus
      .list()
      .map((g) => g.metadata.name)
      .sort(),
  ).toEqual(names(api, 'gpus'));
}

describe('controller convergence under API faults', () => {
  let api: ApiServerDouble;
  let ctl: Controller;

  beforeEach(async () => {
    api = await startApiServer({ bookmarkIntervalMs: 200 });
    seed(api);
    ctl = testController(api);
    ctl.startInformers();
    await ctl.startReconciling(clusterFor(api, 'ctl'));
    await eventually(() => expectInitial(api));
  });

  afterEach(async () => {
    await ctl.stop();
    await api.stop();
  });

  test('converges with no faults and leaves the ready probe green', async () => {
    churn(api);
    await eventually(() => expectAfterChurn(api, ctl));
    expect(ctl.isReady()).toBe(true);
  });

  test('dropped watches (socket reset) resume from the last resourceVersion', async () => {
    expect(api.dropWatches(undefined, 'reset')).toBeGreaterThan(0);
    churn(api);
    api.dropWatches(undefined, 'end');
    await eventually(() => expectAfterChurn(api, ctl));
    const rewatches = api.requests.filter((r) => r.watch && r.query.resourceVersion && r.query.resourceVersion !== '0');
    expect(rewatches.length).toBeGreaterThan(0);
  });

  test('stalled watches are detected by the idle watchdog', async () => {
    expect(api.stallWatches()).toBeGreaterThan(0);
    churn(api);
    await eventually(() => expectAfterChurn(api, ctl));
  });

  test('410 Gone in-stream forces a relist that also catches deletions', async () => {
    api.setGoneMode('stream');
    api.stallWatches();
    churn(api);
    api.expireWatches();
    await eventually(() => expectAfterChurn(api, ctl));
  });

  test('429 with Retry-After and 500s on lists, watches and writes are retried', async () => {
    api.injectFault({ watch: true, status: 429, retryAfterSeconds: 1, times: 3 });
    api.injectFault({ method: 'GET', watch: false, path: '/api/v1/nodes', status: 500, times: 2 });
    api.injectFault({ method: 'PUT', path: '/status', status: 500, times: 3 });
    api.injectFault({ method: 'PATCH', status: 503, times: 2 });
    api.dropWatches();
    churn(api);
    await eventually(() => expectAfterChurn(api, ctl), 20_000);
    expect(api.requests.some((r) => r.status === 429)).toBe(true);
  });

  test('an API restart with history compaction (410 as status) relists and converges', async () => {
    await api.stop();
    churn(api); // changes while the server is down, including a deletion
    api.store.compact();
    await api.start();
    await eventually(() => expectAfterChurn(api, ctl), 20_000);
    expect(api.requests.some((r) => r.status === 410)).toBe(true);
  });

  test('a pool losing its selector match removes the GPUNode and GPU objects it made', async () => {
    api.put('gpupools', poolObj('pool-a', 'nothing'));
    await eventually(() => {
      expect(names(api, 'gpunodes')).toEqual([]);
      expect(names(api, 'gpus')).toEqual([]);
      expect(api.getObject('gpupools', 'pool-a')?.status).toMatchObject({ totalNodes: 0, phase: 'Pending' });
    });
  });
});

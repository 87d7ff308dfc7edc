/** The controller's series the dashboard reads: set from what the reconcilers know, removed when it is gone. */
import { CONTROLLER_METRICS as M } from '../../../lib/contract/metrics';
import { Registry } from 'prom-client';
import { callMetrics, RuntimeMetrics } from '../../../lib/runtime/shared/metrics';

const lines = async (m: RuntimeMetrics, name: string) =>
  (await m.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`))
    .sort();

test("a node's GPU shares replace its previous series: a GPU gone or moved to another pool leaves none behind", async () => {
  const m = new RuntimeMetrics();
  m.observeGpuShares('n1', [
    { gpu: 'n1-gpu-0', pool: 'a', shares: 2 },
    { gpu: 'n1-gpu-1', pool: 'a', shares: 0 },
  ]);
  m.observeGpuShares('n2', [{ gpu: 'n2-gpu-0', pool: 'a', shares: 1 }]);
  m.observeGpuShares('n1', [{ gpu: 'n1-gpu-0', pool: 'b', shares: 3 }]);
  expect(await lines(m, M.gpuShares)).toEqual([
    `${M.gpuShares}{gpu="n1-gpu-0",node="n1",pool="b"} 3`,
    `${M.gpuShares}{gpu="n2-gpu-0",node="n2",pool="a"} 1`,
  ]);
  m.observeGpuShares('n2', []);
  expect(await lines(m, M.gpuShares)).toEqual([`${M.gpuShares}{gpu="n1-gpu-0",node="n1",pool="b"} 3`]);
});

test("a pool's capacity and requests, and a workload's recommendation against its request, are removed with them", async () => {
  const m = new RuntimeMetrics();
  m.observePool('a', { tflops: 624, virtualTflops: 3120, requestedTflops: 200, vram: 160, requestedVram: 2 });
  m.observeAutoscale('ml', 'infer', { recommended: { tflops: 60, vram: 6 }, requested: { tflops: 100, vram: 8 } });
  expect(await lines(m, M.poolVirtualTflops)).toEqual([`${M.poolVirtualTflops}{pool="a"} 3120`]);
  expect(await lines(m, M.poolRequestedVram)).toEqual([`${M.poolRequestedVram}{pool="a"} 2`]);
  expect(await lines(m, M.autoscaleRecommendedTflops)).toEqual([`${M.autoscaleRecommendedTflops}{namespace="ml",workload="infer"} 60`]);
  expect(await lines(m, M.autoscaleRequestedVram)).toEqual([`${M.autoscaleRequestedVram}{namespace="ml",workload="infer"} 8`]);
  m.observePool('a');
  m.observeAutoscale('ml', 'infer');
  const text = await m.registry.metrics();
  expect(text).not.toMatch(/^tf_pool_\w+\{/m);
  expect(text).not.toMatch(/^tf_autoscale_\w+\{/m);
});

test("a server's calls: a counter, and a histogram of their seconds from 0.5 ms to 1 s, on the registry given", async () => {
  const registry = new Registry();
  const m = callMetrics(
    registry,
    { name: 'tf_test_calls_total', help: 'Calls.', labelNames: ['verb', 'outcome'] },
    { name: 'tf_test_seconds', help: 'Seconds.', labelNames: ['verb'] },
  );
  m.calls.inc({ verb: 'bind', outcome: 'ok' });
  m.seconds.observe({ verb: 'bind' }, 0.003);
  const text = await registry.metrics();
  expect(text).toContain('tf_test_calls_total{verb="bind",outcome="ok"} 1');
  expect([...text.matchAll(/^tf_test_seconds_bucket\{le="([^"]+)",verb="bind"\} (\d+)$/gm)].map((r) => `${r[1]}:${r[2]}`)).toEqual([
    '0.0005:0',
    '0.001:0',
    '0.0025:0',
    '0.005:1',
    '0.01:1',
    '0.05:1',
    '0.25:1',
    '1:1',
    '+Inf:1',
  ]);
});

/**
 * Controller benchmark against the API-server double. The double runs here; the controller runs in a
 * child process from an esbuild bundle of this file (plain node, no ts-node compiler in memory), so the
 * measured RSS is the controller's alone: memory with 10,000 pods and 1,000 nodes in the caches, and reconcile
 * throughput (first pass, which writes every GPUNode/GPU/status, then a no-op pass over warm caches).
 * Ends with one JSON line.
 */
import { fork } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import pino from 'pino';
import { Controller } from '../lib/runtime/reconcile/controller';
import { RuntimeMetrics } from '../lib/runtime/shared/metrics';
import { encodeKey, nodeKey } from '../lib/runtime/reconcile/queue-keys';
import { ApiServerDouble, clusterFor, startApiServer } from '../test/support/api-server';
import { gpuNodeObj, podObj, poolObj, workloadObj } from '../test/runtime/fixtures';
import { runMeasuredOrMain } from './measured-child';

const NODES = Number(process.env.BENCH_NODES ?? 1000);
const PODS = Number(process.env.BENCH_PODS ?? 10_000);

async function populate(): Promise<ApiServerDouble> {
  const api = await startApiServer({ historyLimit: 200_000 });
  api.put('gpupools', poolObj('pool-a', 'a'));
  for (let n = 0; n < NODES; n++) api.put('nodes', gpuNodeObj(`node-${n}`, { count: 8 }));
  for (let w = 0; w < PODS / 10; w++) api.put('tensorfusionworkloads', workloadObj(`w-${w}`, 10));
  for (let p = 0; p < PODS; p++) {
    const node = `node-${p % NODES}`;
    api.put('pods', podObj(`pod-${p}`, node, { gpus: `${node}-gpu-${p % 8}`, workload: `w-${Math.floor(p / 10)}` }));
  }
  return api;
}

const mb = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;

function settle(): number {
  global.gc?.();
  return process.memoryUsage().rss;
}

async function waitIdle(ctl: Controller, metrics: RuntimeMetrics): Promise<number> {
  let last = -1;
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const total = (await metrics.reconciles.get()).values.reduce((a, v) => a + v.value, 0);
    const s = ctl.queue.stats();
    // Delayed keys too: a pod event asks for its status reconcile after podStatusDelayMs.
    if (total === last && s.depth === 0 && s.processing === 0 && s.delayed === 0) return total;
    last = total;
  }
}

async function measure(url: string): Promise<Record<string, number>> {
  const baselineRss = settle();
  const metrics = new RuntimeMetrics();
  const cluster = clusterFor({ url } as ApiServerDouble, 'bench', 60_000);
  const ctl = new Controller({ cluster, metrics, logger: pino({ level: 'silent' }), workers: 4, queue: { qps: 1e6, burst: 1e6 } });
  const t0 = performance.now();
  ctl.startInformers();
  await ctl.waitForSync();
  const syncMs = performance.now() - t0;
  const cachedRss = settle();
  const t1 = performance.now();
  await ctl.startReconciling(cluster);
  const firstPass = await waitIdle(ctl, metrics);
  const firstMs = performance.now() - t1 - 200; // minus the final idle probe
  for (const n of ctl.nodes.list()) ctl.queue.add(encodeKey(nodeKey(n.metadata.name!)));
  const t2 = performance.now();
  const secondTotal = await waitIdle(ctl, metrics);
  const secondMs = performance.now() - t2 - 200;
  const peakRss = settle();
  await ctl.stop();
  const noop = secondTotal - firstPass;
  const out = {
    nodes: ctl.nodes.size(),
    pods: ctl.pods.size(),
    gpus: ctl.gpus.size(),
    baselineRssMB: mb(baselineRss),
    cachedRssMB: mb(cachedRss),
    rssMB: mb(peakRss),
    rssOverBaseline: Math.round((peakRss / baselineRss) * 100) / 100,
    initialSyncMs: Math.round(syncMs),
    firstPassReconciles: firstPass,
    firstPassPerSec: Math.round(firstPass / (firstMs / 1000)),
    reconcilesPerSec: Math.round(noop / (secondMs / 1000)),
  };
  return out;
}

async function main(): Promise<void> {
  const api = await populate();
  const bundle = path.join(os.tmpdir(), `tf-bench-controller-${process.pid}.js`);
  buildSync({ entryPoints: [__filename], outfile: bundle, bundle: true, platform: 'node', target: 'node20', logLevel: 'error' });
  const child = fork(bundle, ['--measure', api.url], { execArgv: ['--expose-gc'] });
  const out = await new Promise<Record<string, number>>((resolve, reject) => {
    child.once('message', resolve as never);
    child.once('exit', (code) => reject(new Error(`measuring process exited with ${code}`)));
  });
  child.kill();
  await api.stop();
  console.log(`caches: ${out.nodes} nodes, ${out.pods} pods, ${out.gpus} GPUs; initial sync ${out.initialSyncMs} ms`);
  console.log(
    `RSS: baseline ${out.baselineRssMB} MB, with caches ${out.cachedRssMB} MB, after reconciling ${out.rssMB} MB (${out.rssOverBaseline}x baseline)`,
  );
  console.log(`first pass (writes every GPUNode, GPU and status): ${out.firstPassReconciles} reconciles at ${out.firstPassPerSec}/s`);
  console.log(`warm pass (no-op reconciles of ${NODES} nodes): ${out.reconcilesPerSec}/s`);
  console.log(JSON.stringify(out));
}

runMeasuredOrMain(main, measure);

/**
 * Memory of one controller replica at scale: 100,000 pods (20,000 opted in, holding GPU shares) on
 * 1,000 nodes, served by the API-server double in this process. The replica (informers, reconcilers,
 * webhook and scheduler extender, as main.ts starts them) runs in a child process from an esbuild
 * bundle, so its figures are its own. Measured: RSS after the initial list, and peak RSS (VmHWM) after
 * every watch expired with 410 Gone, forcing a full relist of everything while the caches are full,
 * which is when a replica would be OOM-killed. Compared with the default memory limit of the
 * container. Sizes: BENCH_PODS, BENCH_OPTED_IN, BENCH_NODES. Ends with one JSON line.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import { ENABLED_LABEL } from '../lib/model/metadata-keys';
import { parseQuantity } from '../lib/k8s/quantity';
import { CONTROLLER_DEFAULTS } from '../lib/render/controller/props';
import { keepAliveAgent } from '../lib/runtime/kube/http-cluster';
import { startRuntime } from '../lib/runtime/runtime';
import { readEnv } from '../lib/runtime/shared/runtime-context';
import { createCa, issueServingCert } from '../lib/runtime/serving/certificates';
import { ApiServerDouble, startApiServer } from '../test/support/api-server';
import { gpuNodeObj, podObj, poolObj, silent } from '../test/runtime/fixtures';
import { extenderComponent } from '../lib/runtime/extender/component';
import { webhookComponent } from '../lib/runtime/webhook/component';
import { runMeasuredOrMain } from './measured-child';

const PODS = Number(process.env.BENCH_PODS ?? 100_000);
const OPTED_IN = Number(process.env.BENCH_OPTED_IN ?? 20_000);
const NODES = Number(process.env.BENCH_NODES ?? 1_000);
const GPUS_PER_NODE = 8;

async function populate(): Promise<ApiServerDouble> {
  const api = await startApiServer({ historyLimit: PODS + 50_000 });
  api.put('gpupools', poolObj('pool-a', 'a'));
  for (let n = 0; n < NODES; n++) api.put('nodes', gpuNodeObj(`node-${n}`, { count: GPUS_PER_NODE }));
  for (let p = 0; p < PODS; p++) {
    const node = `node-${p % NODES}`;
    const pod = p < OPTED_IN ? podObj(`gpu-${p}`, node, { gpus: `${node}-gpu-${p % GPUS_PER_NODE}` }) : podObj(`app-${p}`, node);
    if (p < OPTED_IN) pod.metadata.labels = { ...pod.metadata.labels, [ENABLED_LABEL]: 'true' };
    api.put('pods', pod);
  }
  return api;
}

const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;

/** Peak and current resident set size of this process (Linux /proc). */
function rss(): { peak: number; now: number } {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { peak: kb('VmHWM'), now: kb('VmRSS') };
}

/** In the child: one replica with the components main.ts starts, against the double at `url`. */
async function measure(url: string, tlsDir: string): Promise<Record<string, number>> {
  const runtime = await startRuntime({
    env: readEnv({
      POD_NAME: 'bench-0',
      POD_NAMESPACE: 'tf',
      METRICS_PORT: '0',
      WEBHOOK_PORT: '0',
      EXTENDER_PORT: '0',
      LOG_LEVEL: 'silent',
      CERT_MODE: 'cert-manager',
      TLS_DIR: tlsDir,
    }),
    connection: { server: url, agent: keepAliveAgent(url), requestTimeoutMs: 120_000 },
    logger: silent,
    components: [webhookComponent, extenderComponent],
  });
  const t0 = performance.now();
  await runtime.controller.waitForSync();
  const syncMs = performance.now() - t0;
  const synced = rss();
  process.send?.({ synced: true });
  // The parent expires every watch (410): wait for the relist to finish.
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  const pods = runtime.controller.pods;
  const before = pods.lastSyncResourceVersion();
  while (pods.lastSyncResourceVersion() === before || !runtime.controller.hasSynced()) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 2_000));
  const after = rss();
  const out = {
    pods: pods.size(),
    nodes: runtime.controller.nodes.size(),
    initialSyncMs: Math.round(syncMs),
    syncedRssMiB: mib(synced.now),
    relistRssMiB: mib(after.now),
    peakRssMiB: mib(after.peak),
  };
  void runtime.stop();
  return out;
}

async function main(): Promise<void> {
  const api = await populate();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tf-bench-memory-'));
  const pair = issueServingCert(createCa(), ['127.0.0.1']);
  writeFileSync(path.join(dir, 'tls.crt'), pair.cert);
  writeFileSync(path.join(dir, 'tls.key'), pair.key);
  const bundle = path.join(dir, 'measure.js');
  buildSync({ entryPoints: [__filename], outfile: bundle, bundle: true, platform: 'node', target: 'node20', logLevel: 'error' });
  const limit = parseQuantity(CONTROLLER_DEFAULTS.resources.limits.memory)!;
  // The container's limit as the heap's bound, as Node sizes its heap from a cgroup limit.
  const child = fork(bundle, ['--measure', api.url, dir], { execArgv: [`--max-old-space-size=${Math.floor(mib(limit) * 0.75)}`] });
  const out = await new Promise<Record<string, number>>((resolve, reject) => {
    child.on('message', (m: Record<string, unknown>) => {
      if (m.synced) {
        api.expireWatches();
        child.send('relisting');
      } else resolve(m as Record<string, number>);
    });
    child.once('exit', (code) => reject(new Error(`measuring process exited with ${code} (out of memory?)`)));
  });
  child.kill();
  await api.stop();
  const result = { ...out, optedIn: OPTED_IN, limitMiB: mib(limit), withinLimit: out.peakRssMiB < mib(limit) };
  console.log(`caches: ${out.pods} pods (${OPTED_IN} opted in), ${out.nodes} nodes; initial sync ${out.initialSyncMs} ms`);
  console.log(
    `RSS: ${out.syncedRssMiB} MiB synced, ${out.relistRssMiB} MiB after a full relist (410), peak ${out.peakRssMiB} MiB; limit ${mib(limit)} MiB`,
  );
  console.log(JSON.stringify(result));
}

runMeasuredOrMain(main, measure);

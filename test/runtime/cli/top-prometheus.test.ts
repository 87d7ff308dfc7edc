/**
 * `kubectl tf top --prometheus`: what the pods use, read from a real Prometheus that scrapes the node
 * agent's per-pod series (served here as the agent exposes them) and shown beside their requests.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AGENT_METRICS } from '../../../lib/contract/agent';
import { topRows } from '../../../lib/runtime/cli/top';
import { readPodUsage } from '../../../lib/runtime/shared/pod-usage';
import { PrometheusClient } from '../../../lib/runtime/shared/prometheus';
import { prometheusAvailable, RunningPrometheus, startPrometheus } from '../../support/prometheus';
import { waitFor } from '../../support/control-plane';
import { cluster, GI, heldPod } from './fixtures';

const enabled = prometheusAvailable('test/runtime/cli/top-prometheus.test.ts');

/** Two containers of pod ml/a on its two GPUs, as the agent labels them; one pod not in the cluster. */
const EXPOSITION = [
  `${AGENT_METRICS.computeUsed}{namespace="ml",pod="a",container="m",gpu="0",node="n-0"} 30`,
  `${AGENT_METRICS.computeUsed}{namespace="ml",pod="a",container="m",gpu="1",node="n-0"} 12`,
  `${AGENT_METRICS.vramUsed}{namespace="ml",pod="a",container="m",gpu="0",node="n-0"} ${4 * GI}`,
  `${AGENT_METRICS.vramUsed}{namespace="ml",pod="gone",container="m",gpu="0",node="n-1"} ${GI}`,
  '',
].join('\n');

(enabled ? describe : describe.skip)('kubectl tf top --prometheus', () => {
  let server: http.Server;
  let prom: RunningPrometheus;

  beforeAll(async () => {
    server = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' }).end(EXPOSITION));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    prom = await startPrometheus([`127.0.0.1:${(server.address() as AddressInfo).port}`]);
  }, 60_000);

  afterAll(async () => {
    await prom?.stop();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  test('used TFLOPS and VRAM per pod, summed over its containers and GPUs, beside its requests', async () => {
    const client = new PrometheusClient(prom.url);
    await waitFor('the agent series scraped', async () => (await readPodUsage(client, Date.now() / 1000)).size === 2, 30_000, 250);
    const usage = await readPodUsage(client, Date.now() / 1000);
    const objects = cluster([heldPod('a', 'n-0', ['n-0-gpu-0', 'n-0-gpu-1'], 100, 10 * GI)]);
    const pods = topRows('pods', objects, usage);
    expect(pods.rows).toEqual([['ml', 'a', 'n-0', 'n-0-gpu-0,n-0-gpu-1', '100', '100', '21', '10Gi', '10Gi', '2Gi']]);
    const pools = topRows('pools', objects, usage);
    // 42 TFLOPS and 4Gi used of the pool: the pod not in the cluster counts for nothing.
    expect(pools.rows[0]).toEqual(['pool-a', '2', '4', '1248', '200 (16%)', '200', '42', '320Gi', '20Gi (6%)', '4Gi']);
  });
});

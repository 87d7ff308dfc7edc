/**
 * OOM kills reach the recommender in production: the controller's slim pod cache keeps the containers'
 * last OOM kills, and the loop feeds each one once, with the VRAM peak Prometheus saw before it.
 */
import { parseQuantity } from '../../../lib/k8s/quantity';
import { slimPod } from '../../../lib/runtime/shared/caches';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { AutoscaleLoop, Workload } from '../../../lib/runtime/autoscale/loop';
import { oomKillsOf } from '../../../lib/runtime/shared/oom';
import type { PrometheusClient } from '../../../lib/runtime/shared/prometheus';
import { fakeCluster } from './fake-cluster';

const GiB = 2 ** 30;
const NOW = 1_800_000_000;
const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

const killed = (finishedAtS: number): K8sObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'ml', uid: 'u1' },
  spec: { containers: [{ name: 'c', image: 'x' }] },
  status: {
    phase: 'Running',
    containerStatuses: [
      {
        name: 'c',
        restartCount: 1,
        state: { running: {} },
        lastState: { terminated: { reason: 'OOMKilled', exitCode: 137, finishedAt: iso(finishedAtS) } },
      },
      { name: 'side', restartCount: 1, lastState: { terminated: { reason: 'Error', exitCode: 1, finishedAt: iso(finishedAtS) } } },
    ],
  },
});

test('oomKillsOf reads OOMKilled last states only, and the slim pod cache keeps exactly those', () => {
  const pod = killed(NOW - 600);
  expect(oomKillsOf(pod)).toEqual([{ container: 'c', atS: NOW - 600 }]);
  const slim = slimPod(pod as never);
  expect(slim.status).toEqual({
    phase: 'Running',
    conditions: undefined,
    containerStatuses: [{ name: 'c', lastState: { terminated: { reason: 'OOMKilled', finishedAt: iso(NOW - 600) } } }],
  });
  expect(oomKillsOf(slim)).toEqual(oomKillsOf(pod));
  expect(slimPod({ ...pod, status: { phase: 'Running' } } as never).status).toEqual({ phase: 'Running', conditions: undefined });
});

describe('the loop feeds OOM kills to the recommender', () => {
  const config = { autoSetRequests: { enable: true, aggregationPeriod: '1h', evaluationPeriod: '1h' }, autoSetLimits: { enable: true } };
  const workload: Workload = {
    apiVersion: 'tensor-fusion.ai/v1',
    kind: 'TensorFusionWorkload',
    metadata: { name: 'w', namespace: 'ml', resourceVersion: '1' },
    spec: {
      resources: { requests: { tflops: '10', vram: '1Gi' }, limits: { tflops: '20', vram: '1Gi' } },
      autoScalingConfig: config,
    } as Workload['spec'],
    status: { workerCount: 1 },
  };

  /** 1 GiB and 5 TFLOPS every minute of the last hour; the instant query answers a 3 GiB peak. */
  function prometheus() {
    const instant: Array<{ q: string; t: number }> = [];
    const values = (v: number) => Array.from({ length: 60 }, (_, i) => [NOW - 3600 + 60 * (i + 1), v] as const);
    const labels = { namespace: 'ml', pod: 'p', container: 'c', gpu_uuid: 'GPU-0' };
    const client = {
      async queryRange(q: string) {
        return [{ metric: labels, values: values(q.startsWith('tf_agent_pod_gpu_vram') ? GiB : 5) }];
      },
      async query(q: string, t: number) {
        instant.push({ q, t });
        return [{ metric: {}, value: 3 * GiB }];
      },
    } as unknown as PrometheusClient;
    return { client, instant };
  }

  async function run(pods: K8sObject[]) {
    const f = fakeCluster([workload]);
    const prom = prometheus();
    const loop = new AutoscaleLoop({
      cluster: f.cluster,
      scale: f.scale,
      prometheus: prom.client,
      workloads: () => [f.workload('w')],
      podNames: () => ['p'],
      pods: () => pods,
      maxReplicas: () => 1,
      nowS: () => NOW,
    });
    await loop.tick();
    return { f, prom, loop };
  }

  test('a kill raises the VRAM recommendation above 1.2 x the peak before it, once; the condition says so', async () => {
    const { f, prom, loop } = await run([killed(NOW - 600)]);
    expect(prom.instant).toEqual([
      { q: 'max(max_over_time(tf_agent_pod_gpu_vram_used_bytes{namespace="ml",pod="p",container="c"}[300s]))', t: NOW - 600 },
    ]);
    const rec = f.workload('w').status!.autoscaling!.recommendation!;
    // VPA's bump: max(1.2 x 3 GiB, 3 GiB + 100 MiB) = 3.6 GiB at least, for the request and the limit.
    expect(parseQuantity(String(rec.requests.vram))!).toBeGreaterThanOrEqual(3.6 * GiB);
    expect(parseQuantity(String(rec.limits.vram))!).toBeGreaterThanOrEqual(3.6 * GiB);
    expect(f.workload('w').status!.conditions![0].message).toMatch(/, VRAM raised after an OOM kill$/);
    await loop.tick();
    expect(prom.instant).toHaveLength(1);
  });

  test('without a kill (or with one older than the history read) the recommendation follows the 1 GiB usage', async () => {
    for (const pods of [[], [killed(NOW - 7200)]]) {
      const { f, prom } = await run(pods);
      expect(prom.instant).toEqual([]);
      expect(parseQuantity(String(f.workload('w').status!.autoscaling!.recommendation!.requests.vram))!).toBeLessThan(2 * GiB);
    }
  });
});

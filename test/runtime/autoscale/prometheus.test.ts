/**
 * End to end through a real Prometheus: the node agent runs against the fake nvidia-smi, Prometheus
 * scrapes it on 127.0.0.1, and the recommender loop reads Prometheus' HTTP API and writes the
 * recommendation, the Event and the replica change (or its refusal when an HPA owns the Deployment).
 */
import { AutoscaleLoop, Workload } from '../../../lib/runtime/autoscale/loop';
import { PrometheusClient } from '../../../lib/runtime/shared/prometheus';
import { AGENT_METRICS } from '../../../lib/contract/agent';
import { Agent, startAgent } from '../../../lib/runtime/agent/agent-server';
import { parseQuantity } from '../../../lib/k8s/quantity';
import { fakeNode, FakeNode, TRACE } from '../agent/fixtures';
import { waitFor } from '../../support/control-plane/process';
import { prometheusAvailable, RunningPrometheus, startPrometheus } from '../../support/prometheus';
import { fakeCluster } from './fake-cluster';

const MIB = 2 ** 20;
const enabled = prometheusAvailable('test/runtime/autoscale/prometheus.test.ts');

/**
 * Step 0 of the agent trace for 15 s (long enough for Prometheus to start and scrape it), then step 1,
 * which repeats, so the data stays put once reached.
 */
const STEADY_TRACE = { ...TRACE, steps: [...Array(15).fill(TRACE.steps[0]), TRACE.steps[1]] };

const CONFIG = {
  autoSetRequests: { enable: true, aggregationPeriod: '1h', evaluationPeriod: '1h' },
  // Limits equal to requests and a low target make the replica decision clear-cut whatever the timing.
  autoSetLimits: { enable: true, maxRatioToRequests: '1.0' },
  autoSetReplicas: { enable: true, evaluationPeriod: '30s', targetTFlopsOfLimits: '0.2', scaleUpCoolDownTime: '0s' },
};

const workload = (name: string, owner: string): Workload => ({
  apiVersion: 'tensor-fusion.ai/v1',
  kind: 'TensorFusionWorkload',
  metadata: {
    name,
    namespace: 'ml',
    resourceVersion: '1',
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: owner, uid: `uid-${owner}`, controller: true }],
  },
  spec: {
    resources: { requests: { tflops: '100', vram: '8Gi' }, limits: { tflops: '150', vram: '8Gi' } },
    autoScalingConfig: CONFIG,
  } as Workload['spec'],
  status: { workerCount: 2 },
});

(enabled ? describe : describe.skip)('autoscaling through a real Prometheus', () => {
  let node: FakeNode;
  let agent: Agent;
  let prom: RunningPrometheus;

  beforeAll(async () => {
    node = fakeNode(1000, STEADY_TRACE);
    agent = await startAgent(
      { nodeName: 'gpu-1', port: 0, nvidiaSmi: node.nvidiaSmi, procRoot: node.procRoot, logLevel: 'silent' },
      node.resolver,
      '127.0.0.1',
    );
    prom = await startPrometheus([`127.0.0.1:${agent.server.port}`]);
    const client = new PrometheusClient(prom.url);
    // Both steps of the trace scraped: pod B's step-0 compute (156) and pod A's step-1 VRAM (2048 MiB).
    const seen = async (q: string, want: number) => (await client.query(q, Date.now() / 1000))[0]?.value === want;
    await waitFor(
      'both trace steps in prometheus',
      async () =>
        (await seen(`max_over_time(${AGENT_METRICS.computeUsed}{pod="infer-0"}[1m])`, 156)) &&
        (await seen(`max_over_time(${AGENT_METRICS.vramUsed}{pod="train-0"}[1m])`, 2048 * MIB)),
      90_000,
      500,
      prom.process,
    );
  }, 120_000);

  afterAll(async () => {
    await prom?.stop();
    await agent?.stop();
    node?.cleanup();
  });

  it('recommends from the scraped usage, records an Event, and scales the owner through /scale', async () => {
    const wl = workload('train', 'train');
    const f = fakeCluster([wl]);
    const loop = new AutoscaleLoop({
      cluster: f.cluster,
      prometheus: new PrometheusClient(prom.url),
      scale: f.scale,
      stepS: 1,
      workloads: () => [f.workload('train')],
      podNames: () => ['train-0', 'infer-0'],
      maxReplicas: () => 4,
      nowS: () => Math.floor(Date.now() / 1000),
    });
    await loop.tick();
    const status = f.workload('train').status!;
    expect(status.conditions!.find((c) => c.type === 'AutoscalingActive')).toMatchObject({ status: 'True', reason: 'Recommending' });
    const rec = status.autoscaling!.recommendation!;
    // VRAM is incompressible: the limit covers the largest container (pod B, 4096 MiB) with the margin.
    expect(parseQuantity(rec.limits.vram)!).toBeGreaterThanOrEqual(4096 * MIB * 1.15);
    // TFLOPS: pod B used 0.5 x 312 = 156 at its peak; the limit covers it, and here equals the request.
    expect(parseQuantity(rec.limits.tflops)!).toBeGreaterThanOrEqual(156);
    expect(rec.requests.tflops).toBe(rec.limits.tflops);
    expect(f.events.map((e) => e.reason)).toContain('AutoscaleRecommendation');
    // Usage (at least 125 TFLOPS) against 0.2 of one replica's limit wants 4 or more: one step (+100 %) is taken.
    expect(f.scaled).toEqual([{ name: 'train', replicas: 2 }]);
    expect(status.autoscaling!.desiredReplicas).toBe(2);
    expect(status.conditions!.find((c) => c.type === 'ReplicaScaling')).toMatchObject({ status: 'True', reason: 'Scaling' });
  });

  it('refuses to scale an owner that a HorizontalPodAutoscaler already targets', async () => {
    const wl = workload('infer', 'infer');
    const hpa = {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'infer', namespace: 'ml' },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'infer' } },
    };
    const f = fakeCluster([wl], [hpa]);
    const loop = new AutoscaleLoop({
      cluster: f.cluster,
      prometheus: new PrometheusClient(prom.url),
      scale: f.scale,
      stepS: 1,
      workloads: () => [f.workload('infer')],
      podNames: () => ['train-0', 'infer-0'],
      maxReplicas: () => 4,
      nowS: () => Math.floor(Date.now() / 1000),
    });
    await loop.tick();
    expect(f.scaled).toEqual([]);
    expect(f.workload('infer').status!.conditions!.find((c) => c.type === 'ReplicaScaling')).toMatchObject({
      status: 'False',
      reason: 'HorizontalPodAutoscalerPresent',
      message: 'HorizontalPodAutoscaler infer already scales Deployment infer; autoSetReplicas does not act',
    });
  });
});

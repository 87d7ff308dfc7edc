/**
 * The Grafana dashboard and the alert rules against what the controller and the node agent really
 * export: the controller bundle runs on the real control plane with kube-scheduler and KWOK GPU nodes,
 * the agent on the fake nvidia-smi, and a real Prometheus scrapes both and loads the rendered rule file.
 * State makes every series exist (a pool with GPUs, GPU pods placed, one waiting over its quota, a
 * quota, a workload with a recommendation); then every panel query and every rule's signal runs
 * through Prometheus' HTTP API and must return data, so a misspelled metric or label fails here.
 */
import { parse } from 'yaml';
import { API_VERSION } from '../../lib/model/group';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { ALERT_RULES, DASHBOARD_KEY, DASHBOARD_VARIABLES, renderController, RULE_FILE_KEY } from '../../lib/render/controller';
import { CONTROLLER_METRICS } from '../../lib/contract/metrics';
import { PrometheusClient } from '../../lib/runtime/shared/prometheus';
import { Agent, startAgent } from '../../lib/runtime/agent/agent-server';
import { describeControlPlane, waitFor } from '../support/control-plane';
import { httpGet } from '../support/control-plane/process';
import type { Obj } from '../support/e2e';
import { a100Labels, controllerSuite, installController, kwokNode, localGpuPod, RunningController, writeYaml } from '../support/e2e';
import { prometheusAvailable, RunningPrometheus, startPrometheus } from '../support/prometheus';
import { fakeNode, FakeNode } from '../runtime/agent/fixtures';
import { eventually } from '../runtime/fixtures';

const { synth, user } = controllerSuite(120_000);
const enabled = prometheusAvailable('test/e2e/observability.test.ts');

const POOL = 'obs-pool';
const NODE = 'obs-0';
const NS = 'team-obs';

const rendered = renderController({ grafanaDashboard: true, alertRules: 'ConfigMap', image: 'example.io/tf:1' }) as Obj[];
const dashboard = JSON.parse(rendered.find((o) => o.metadata.name === 'tensor-fusion-dashboard')!.data[DASHBOARD_KEY]);
const ruleFile: string = rendered.find((o) => o.metadata.name === 'tensor-fusion-alerts')!.data[RULE_FILE_KEY];
/** Every panel query, with the pool variable as Grafana's "All" (`.*`). */
const PANEL_QUERIES: { name: string; expr: string }[] = (dashboard.panels as Obj[]).flatMap((p) =>
  (p.targets ?? []).map((t: Obj) => ({ name: `${p.title} [${t.refId}]`, expr: t.expr.replaceAll(DASHBOARD_VARIABLES.pool, '.*') })),
);

function gpuPod(name: string): Obj {
  return localGpuPod({ name, namespace: NS, pool: POOL, tflops: '100', vram: '1Gi', cpu: '10m' });
}

const workload: Obj = {
  apiVersion: API_VERSION,
  kind: 'TensorFusionWorkload',
  metadata: { name: 'infer', namespace: NS },
  spec: {
    poolName: POOL,
    resources: { requests: { tflops: '100', vram: '8Gi' }, limits: { tflops: '150', vram: '8Gi' } },
    autoScalingConfig: { autoSetRequests: { enable: true } },
  },
};
const RECOMMENDATION = { requests: { tflops: '60', vram: '6Gi' }, limits: { tflops: '90', vram: '6Gi' } };

/** Skipped with the one line prometheusAvailable printed when Prometheus is missing. */
const describeWithPrometheus: typeof describeControlPlane = enabled
  ? describeControlPlane
  : (name) => describe.skip(name, () => test.todo('needs prometheus'));

describeWithPrometheus('the Grafana dashboard and alert rules on a real Prometheus', { kwok: true, users: [user] }, (cp) => {
  let ctl: RunningController;
  let node: FakeNode;
  let agent: Agent;
  let prom: RunningPrometheus;
  let client: PrometheusClient;
  const kubectl = (args: string[], input?: Obj) => cp().kubectlOk(args, input ? { input: JSON.stringify(input) } : undefined);
  const hasData = async (expr: string) => (await client.query(expr, Date.now() / 1000)).length > 0;
  /** Waits until every query has data (scraped, and rates with two samples); the deadline names the empty ones. */
  const allHaveData = async (what: string, queries: readonly { name: string; expr: string }[]) => {
    let empty: string[] = [];
    await waitFor(
      what,
      async () => {
        empty = [];
        for (const q of queries) if (!(await hasData(q.expr))) empty.push(`${q.name}: ${q.expr}`);
        return empty.length === 0;
      },
      60_000,
      1_000,
      prom.process,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}; empty:\n${empty.join('\n')}`);
    });
  };

  beforeAll(async () => {
    ctl = await installController(cp(), synth.controller, synth.dir, { replicas: 1, schedulers: true });
    node = fakeNode();
    agent = await startAgent(
      { nodeName: NODE, port: 0, nvidiaSmi: node.nvidiaSmi, procRoot: node.procRoot, logLevel: 'silent' },
      node.resolver,
      '127.0.0.1',
    );
    prom = await startPrometheus([`127.0.0.1:${ctl.replicas[0].metricsPort}`, `127.0.0.1:${agent.server.port}`], {
      'tensor-fusion.rules.yaml': ruleFile,
    });
    client = new PrometheusClient(prom.url);
    await kubectl([
      'apply',
      '--server-side',
      '-f',
      writeYaml(synth.dir, 'obs.yaml', [
        renderGpuPool(POOL, { tflopsOversellRatio: 100 }),
        kwokNode({ name: NODE, labels: a100Labels(POOL, 2) }),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
        // Room for two pods of 100 TFLOPS: the third waits over the quota.
        {
          apiVersion: API_VERSION,
          kind: 'GPUResourceQuota',
          metadata: { name: 'obs-quota', namespace: NS },
          spec: { total: { requests: { tflops: '250' } } },
        },
        workload,
      ]),
    ]);
    await waitFor('controller ready', () => ctl.replicas[0].ready(), 60_000, 200);
    await eventually(
      async () => expect(await kubectl(['get', 'gpupool', POOL, '-o', 'jsonpath={.status.totalGPUs}'])).toBe('2'),
      60_000,
      200,
    );
    for (const name of ['p-0', 'p-1']) await kubectl(['create', '-f', '-'], gpuPod(name));
    await eventually(
      async () => {
        const pods = JSON.parse(await kubectl(['get', 'pods', '-n', NS, '-o', 'json'])).items as Obj[];
        expect(pods.filter((p) => p.spec.nodeName).length).toBe(2);
      },
      60_000,
      200,
    );
    await kubectl(['create', '-f', '-'], gpuPod('waits'));
    // What the recommender writes (its loop needs an hour of samples): the status the metric is read from.
    await eventually(
      async () => {
        await kubectl([
          'patch',
          'tensorfusionworkload',
          '-n',
          NS,
          'infer',
          '--subresource=status',
          '--type=merge',
          '-p',
          JSON.stringify({ status: { autoscaling: { recommendation: RECOMMENDATION } } }),
        ]);
      },
      30_000,
      200,
    );
  }, 180_000);

  afterAll(async () => {
    await prom?.stop();
    await agent?.stop();
    node?.cleanup();
    await ctl?.stop();
  });

  test('every panel query returns data', async () => {
    expect(PANEL_QUERIES.length).toBeGreaterThanOrEqual(20);
    await allHaveData('every panel query has data', PANEL_QUERIES);
    // The pool variable's query (label_values, Grafana's) lists the pool.
    const pools = await client.query(`count by (pool) (${CONTROLLER_METRICS.poolCapacityTflops})`, Date.now() / 1000);
    expect(pools.map((s) => s.metric.pool)).toEqual([POOL]);
    // The values are the state made above: 2 × 312 TFLOPS, 200 reserved, 2 shares, one pod over its quota.
    const value = async (expr: string) => (await client.query(expr, Date.now() / 1000)).map((s) => [s.metric, s.value]);
    expect(await value(`max by (pool) (${CONTROLLER_METRICS.poolRequestedTflops})`)).toEqual([[{ pool: POOL }, 200]]);
    expect(await value(`max by (pool) (${CONTROLLER_METRICS.poolCapacityTflops})`)).toEqual([[{ pool: POOL }, 624]]);
    expect(await value(`sum (${CONTROLLER_METRICS.gpuShares})`)).toEqual([[{}, 2]]);
    expect(await value(`max by (pool, reason) (${CONTROLLER_METRICS.pendingGpuPods})`)).toEqual([[{ pool: POOL, reason: 'OverQuota' }, 1]]);
    expect(await value(`max by (workload) (${CONTROLLER_METRICS.autoscaleRecommendedTflops})`)).toEqual([[{ workload: 'infer' }, 60]]);
    // "Used" joins the agent's node to the pool: the fake trace's two pods use 20 % + 10 % and 50 % of an A100 (312 TFLOPS).
    const used = PANEL_QUERIES.find((q) => q.name === 'Pool TFLOPS: capacity, reserved, used [D]')!;
    const [[labels, tflops]] = await value(used.expr);
    expect(labels).toEqual({ pool: POOL });
    expect(tflops).toBeCloseTo(0.8 * 312, 6);
  });

  test('the rule file loads with every rule healthy, and every rule signal returns data', async () => {
    const groups = parse(ruleFile).groups as Obj[];
    const want = ALERT_RULES.map((r) => r.alert);
    expect(groups[0].rules.map((r: Obj) => r.alert)).toEqual(want);
    await eventually(
      async () => {
        const body = JSON.parse((await httpGet(`${prom.url}/api/v1/rules`)).body);
        const rules = body.data.groups.flatMap((g: Obj) => g.rules) as Obj[];
        expect(rules.map((r) => [r.name, r.health, r.lastError ?? ''])).toEqual(want.map((a) => [a, 'ok', '']));
        // Evaluated at least once.
        for (const r of rules) expect(r.lastEvaluation).not.toMatch(/^0001-/);
      },
      30_000,
      500,
    );
    await allHaveData(
      'every rule signal has data',
      ALERT_RULES.map((r) => ({ name: r.alert, expr: r.signal })),
    );
    // One alert fires for real: the pod over its quota keeps tf_pending_gpu_pods above 0 (pending, as `for` has not passed).
    await eventually(
      async () => {
        const alerts = JSON.parse((await httpGet(`${prom.url}/api/v1/alerts`)).body).data.alerts as Obj[];
        expect(alerts.filter((a) => a.labels.alertname === 'TensorFusionGpuPodsPending').map((a) => [a.labels.reason, a.state])).toEqual([
          ['OverQuota', 'pending'],
        ]);
      },
      30_000,
      500,
    );
  });
});

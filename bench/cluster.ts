/**
 * Benchmark through a real kube-apiserver (test/support/control-plane: etcd, kube-apiserver and KWOK
 * on 127.0.0.1; no scheduler or controller manager, since no pod has to run) with the shipped
 * controller bundle installed as test/e2e/install.test.ts installs it: two replica processes as the
 * rendered ServiceAccount, the webhook reached through the loopback balancer.
 *
 * 1. Pod creates/s and create latency at a fixed client concurrency, three sides: opted-in pods (the
 *    webhook resolves each one's GPU share and patches the pod); the same pods labelled
 *    `tensor-fusion.ai/enabled: "false"`, which the webhook's objectSelector does not match (no
 *    webhook); and those in a namespace of their own where a do-nothing mutating webhook
 *    (trivial-webhook.ts: one annotation by JSON patch, TLS, its own process behind its own loopback
 *    balancer) is registered with our webhook's failure policy, timeout and reinvocation policy and
 *    selectors of the same form, matching only that side. Same annotations, same size, same
 *    ValidatingAdmissionPolicies: only the webhook call differs. Blocks run A B C C B A (none, ours,
 *    trivial, trivial, ours, none) so drift from other load on the machine falls on every side alike.
 *    With `--trivial-patch=ours` the do-nothing webhook also sends the operations ours applies to the
 *    pod (read from a dry-run create), so that side pays for our patch and our pod size without our
 *    webhook's work. Per side: each process's CPU time per pod, and the API server's requests.
 * 2. Reconcile throughput: N KWOK nodes labelled like NVIDIA GFD (8 GPUs each) in a pool, created at
 *    once; time until N GPUNodes and 8N GPUs exist and the GPUPool status counts them.
 * 3. Control-plane start time.
 *
 * `npx ts-node --transpile-only bench/cluster.ts [--pods=2000] [--nodes=1000] [--warmup=500] [--trivial-patch=ours]`. Rebuilds the
 * controller bundle first (`npm run -s bundle`). Needs the envtest binaries (`npm run envtest:setup`).
 * Prints figures and ends with one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, SHARE_ANNOTATION } from '../lib/model/metadata-keys';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import { RESOURCES, ResourceType, resourcePath } from '../lib/runtime/kube/resources';
import { renderGpuPool } from '../lib/render/gpu-pool';
import { CONTROLLER_NAMES } from '../lib/contract/object-names';
import { NAMESPACE_NAME_LABEL } from '../lib/k8s/labels';
import { createCa, issueServingCert } from '../lib/runtime/serving/certificates';
import { missingBinaries } from '../test/envtest/assets';
import { ControlPlane, ControlPlaneOptions, KWOK_NODE_ANNOTATION, binariesFor } from '../test/support/control-plane/control-plane';
import { BUNDLE } from '../test/support/control-plane/controller-process';
import { ManagedProcess, freePort, startProcess, waitFor } from '../test/support/control-plane/process';
import { Balancer, startBalancer } from '../test/support/control-plane/controller-process';
import {
  a100Labels,
  controllerIdentity,
  installController,
  kwokNode,
  RunningController,
  synthToTemp,
  writeYaml,
} from '../test/support/control-plane/install';
import { intFlag as flag, stringFlag } from './flags';
import { BENCH_SHARE } from './webhook-review';
import { apiRequestCounts, cpuSecondsByProcess, percentile } from './stats';
import { TRIVIAL_ANNOTATION } from './trivial-webhook';

const PODS = flag('pods', 2000);
/** `ours`: the do-nothing webhook also sends what ours adds to a pod (see oursOps); `annotation` (default): one annotation. */
const TRIVIAL_PATCH = stringFlag('trivial-patch') ?? 'annotation';
if (TRIVIAL_PATCH !== 'annotation' && TRIVIAL_PATCH !== 'ours')
  throw new Error(`--trivial-patch: got "${TRIVIAL_PATCH}", expected "annotation" or "ours"`);
const NODES = flag('nodes', 1000);
/** Requests in flight at once from the bench client (one keep-alive agent, 64 sockets). */
const CONCURRENCY = 32;
const GPUS_PER_NODE = 8;
/** Pods of part 1 go to 4 nodes × 8 A100s: 1 TFLOPS / 256 MiB shares fit some 10,000 times. */
const POD_NODES = 4;
/**
 * Unmeasured creates first, per side: TLS connections to the API server and to the webhooks, first
 * writes, and V8 compiling the admission code, which a running webhook has long done (with 64, each
 * replica decided its measured pods mostly in unoptimized code: admitPod took 0.18 ms there against
 * some 0.03 ms once optimized). At least 2 × CONCURRENCY.
 */
const WARMUP = flag('warmup', 500, 2 * CONCURRENCY);
const NS = 'bench';
/** The trivial webhook's side: its configuration matches this namespace only. */
const TRIVIAL_NS = 'bench-trivial';
/** The pods' sides: ours (opted in), none (not opted in), trivial (not opted in, in TRIVIAL_NS). */
type Side = 'ours' | 'none' | 'trivial';

type Obj = Record<string, any>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A GPU node that KWOK does not run: Ready is set at create and stays (the API server keeps a
 * created Node's status and no node lifecycle controller runs), which is all allocation needs.
 */
function staticGpuNode(name: string, pool: string): K8sObject {
  const node = kwokNode({ name, labels: a100Labels(pool, GPUS_PER_NODE) });
  delete node.metadata.annotations[KWOK_NODE_ANNOTATION.key];
  const now = new Date().toISOString();
  node.status.conditions = [
    { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'bench', lastHeartbeatTime: now, lastTransitionTime: now },
  ];
  return node as K8sObject;
}

/** An opted-in pod asking for a small local share, or (other sides) the same pod not opted in. */
function pod(name: string, side: Side): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: side === 'trivial' ? TRIVIAL_NS : NS,
      labels: { app: 'bench', [ENABLED_LABEL]: side === 'ours' ? 'true' : 'false' },
      annotations: {
        'tensor-fusion.ai/gpupool': 'bench',
        ...BENCH_SHARE,
        // One workload for all, as the pods of one Deployment: generated once, then cached.
        'tensor-fusion.ai/workload': 'bench',
      },
    },
    spec: { containers: [{ name: 'main', image: 'example.io/app:1', resources: { requests: { cpu: '100m', memory: '128Mi' } } }] },
  };
}

interface CreateRun {
  ms: number;
  /** Latency of each successful create, ms. */
  latencies: number[];
  /** Created pods a webhook marked: an allocation (ours allocates), a share for the extender, or the trivial annotation. */
  marked: number;
  /** Failures by status and reason. */
  errors: Map<string, number>;
}

/** Creates `objs` with `concurrency` requests in flight, timing each. */
async function createAll(cluster: HttpCluster, rt: ResourceType, objs: K8sObject[], concurrency = CONCURRENCY): Promise<CreateRun> {
  const run: CreateRun = { ms: 0, latencies: [], marked: 0, errors: new Map() };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objs.length) {
      const obj = objs[next++];
      const t = performance.now();
      try {
        const created = await cluster.create(rt, obj);
        run.latencies.push(performance.now() - t);
        const a = created.metadata.annotations ?? {};
        if (a[ALLOCATION_ANNOTATION] || a[SHARE_ANNOTATION] || a[TRIVIAL_ANNOTATION]) run.marked++;
      } catch (err) {
        const key = (err as Error).message.slice(0, 160);
        run.errors.set(key, (run.errors.get(key) ?? 0) + 1);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, objs.length) }, worker));
  run.ms = performance.now() - t0;
  return run;
}

function merge(a: CreateRun, b: CreateRun): CreateRun {
  const errors = new Map(a.errors);
  for (const [k, v] of b.errors) errors.set(k, (errors.get(k) ?? 0) + v);
  return { ms: a.ms + b.ms, latencies: [...a.latencies, ...b.latencies], marked: a.marked + b.marked, errors };
}

/** Of unsorted `values`, rounded to 2 decimals; 0 when nothing was measured. */
function pct(values: number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted.length ? round(percentile(sorted, p), 2) : 0;
}

const round = (n: number, digits = 1) => Number(n.toFixed(digits));
const rps = (r: CreateRun) => round(r.latencies.length / (r.ms / 1000));

/** Objects of a cluster-scoped kind, from one `limit=1` list (remainingItemCount), not a full list. */
async function count(cluster: HttpCluster, rt: ResourceType): Promise<number> {
  const res = await cluster.request('GET', resourcePath(rt), { limit: 1 });
  if (res.status !== 200) throw new Error(`list ${rt.plural}: ${res.status} ${res.body.slice(0, 200)}`);
  const list = JSON.parse(res.body) as { items: unknown[]; metadata: { remainingItemCount?: number } };
  return list.items.length + (list.metadata.remainingItemCount ?? 0);
}

async function poolStatus(cluster: HttpCluster, name: string): Promise<Obj> {
  return ((await cluster.get(RESOURCES.gpupools, { name })) as Obj | undefined)?.status ?? {};
}

/** Sum of a Prometheus sample over every replica and every label set. */
async function metricSum(ctl: RunningController, name: string): Promise<number> {
  let sum = 0;
  for (const r of ctl.replicas) {
    for (const line of (await r.metrics()).split('\n')) {
      if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return sum;
}

function describeErrors(r: CreateRun): string {
  return r.errors.size ? [...r.errors].map(([k, v]) => `${v}× ${k}`).join(', ') : 'none';
}

interface TrivialWebhook {
  process: ManagedProcess;
  balancer: Balancer;
  stop(): Promise<void>;
}

/**
 * Starts trivial-webhook.ts in its own process behind its own loopback balancer (as our replicas are
 * reached) and registers it in a MutatingWebhookConfiguration of its own: a copy of ours (failure
 * policy, timeout, match and reinvocation policy, rules) whose selectors match only TRIVIAL_NS.
 */
async function startTrivialWebhook(cp: ControlPlane, docs: Obj[], dir: string, extraOps: object[] = []): Promise<TrivialWebhook> {
  const ca = createCa('bench-trivial-webhook-ca');
  const tls = issueServingCert(ca, ['127.0.0.1']);
  writeFileSync(path.join(dir, 'trivial.crt'), tls.cert);
  writeFileSync(path.join(dir, 'trivial.key'), tls.key);
  const port = await freePort();
  const proc = startProcess(
    'trivial webhook',
    process.execPath,
    ['-r', require.resolve('ts-node/register/transpile-only'), path.resolve(__dirname, 'trivial-webhook.ts')],
    path.join(cp.dir, 'trivial-webhook.log'),
    {
      PATH: process.env.PATH,
      TRIVIAL_WEBHOOK_PORT: String(port),
      TRIVIAL_WEBHOOK_CERT: path.join(dir, 'trivial.crt'),
      TRIVIAL_WEBHOOK_KEY: path.join(dir, 'trivial.key'),
      ...(extraOps.length ? { TRIVIAL_WEBHOOK_EXTRA_OPS: writeJson(dir, 'trivial-extra-ops.json', extraOps) } : {}),
    },
  );
  const balancer = await startBalancer([port]);
  const stop = async () => {
    await balancer.close();
    await proc.stop(5_000);
  };
  try {
    await waitFor(
      'trivial webhook listening',
      () =>
        new Promise<boolean>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () => resolve(true)).on('error', () => resolve(false));
          s.on('connect', () => s.destroy());
        }),
      30_000,
      100,
      proc,
    );
    const ours = docs.find((d) => d.kind === 'MutatingWebhookConfiguration');
    if (!ours) throw new Error('no MutatingWebhookConfiguration in the synthesized YAML');
    const config = {
      apiVersion: ours.apiVersion,
      kind: ours.kind,
      metadata: { name: 'bench-trivial-webhook' },
      webhooks: [
        {
          ...ours.webhooks[0],
          name: 'trivial.bench.tensor-fusion.ai',
          clientConfig: { url: `https://127.0.0.1:${balancer.port}/mutate`, caBundle: Buffer.from(ca.cert).toString('base64') },
          objectSelector: { matchExpressions: [{ key: ENABLED_LABEL, operator: 'In', values: ['false'] }] },
          namespaceSelector: { matchExpressions: [{ key: NAMESPACE_NAME_LABEL, operator: 'In', values: [TRIVIAL_NS] }] },
        },
      ],
    };
    await cp.kubectlOk(['apply', '-f', writeYaml(dir, 'trivial-webhook.yaml', [config])]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { process: proc, balancer, stop };
}

function writeJson(dir: string, name: string, value: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}

/**
 * What our webhook adds to the bench's pod, as JSON patch operations that set the same fields to the
 * same values: read from a dry-run create of an opted-in pod, which the API server passes through our
 * webhook and does not store. For a do-nothing webhook to send a patch of ours' size and make a pod
 * of ours' size, which tells the price of the patch and the pod from the price of our webhook.
 */
async function oursOps(cluster: HttpCluster): Promise<object[]> {
  const before = pod('ours-dry-run', 'ours') as Obj;
  // Retried as the warm-up is: until both replicas' views have the pool.
  let res = { status: 0, body: '' };
  for (let attempt = 0; res.status !== 201 && attempt <= 30; attempt++) {
    if (attempt > 0) await sleep(1_000);
    res = await cluster.request('POST', resourcePath(RESOURCES.pods, NS), { dryRun: 'All' }, before);
  }
  if (res.status !== 201) throw new Error(`dry-run create: ${res.status} ${res.body.slice(0, 300)}`);
  const out = JSON.parse(res.body) as Obj;
  const escape = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');
  const ops: object[] = [];
  for (const map of ['annotations', 'labels'] as const)
    for (const [k, v] of Object.entries((out.metadata[map] ?? {}) as Record<string, string>))
      if (before.metadata[map]?.[k] === undefined) ops.push({ op: 'add', path: `/metadata/${map}/${escape(k)}`, value: v });
  for (const field of ['schedulerName', 'priorityClassName', 'priority', 'preemptionPolicy', 'affinity'])
    if (out.spec[field] !== undefined && JSON.stringify(out.spec[field]) !== JSON.stringify(before.spec[field]))
      ops.push({ op: 'add', path: `/spec/${field}`, value: out.spec[field] });
  const [c] = out.spec.containers as Obj[];
  if (c.env) ops.push({ op: 'add', path: '/spec/containers/0/env', value: c.env });
  if (c.resources?.limits) ops.push({ op: 'add', path: '/spec/containers/0/resources/limits', value: c.resources.limits });
  return ops;
}

/** Part 1's pool, its GPU nodes and the sides' namespaces. */
async function podSetup(cp: ControlPlane, cluster: HttpCluster): Promise<void> {
  await cluster.create(RESOURCES.gpupools, renderGpuPool('bench', {}) as K8sObject);
  for (let i = 0; i < POD_NODES; i++) await cluster.create(RESOURCES.nodes, staticGpuNode(`bench-gpu-${i}`, 'bench'));
  await waitFor('pool bench Ready', async () => (await poolStatus(cluster, 'bench')).readyGPUs === POD_NODES * GPUS_PER_NODE, 60_000, 200);
  await cp.kubectlOk(['create', 'namespace', NS]);
  await cp.kubectlOk(['create', 'namespace', TRIVIAL_NS]);
}

/**
 * CPU ms used so far by the processes whose command line holds one of `markers`, by name (see
 * cpuSecondsByProcess), and by this process (the bench's client and the balancers).
 */
function cpuMs(markers: readonly string[]): Map<string, number> {
  const out = new Map([...cpuSecondsByProcess(markers)].map(([name, s]) => [name, s * 1000]));
  const own = process.cpuUsage();
  return out.set('bench client and balancers', (own.user + own.system) / 1000);
}

/** `after` − `before`, added into `into`, per key. */
function addDelta(into: Map<string, number>, before: Map<string, number>, after: Map<string, number>): void {
  for (const [k, v] of after) if (v > (before.get(k) ?? 0)) into.set(k, (into.get(k) ?? 0) + v - (before.get(k) ?? 0));
}

/** Part 1: pod creates with our webhook, with the trivial one, and with none; per side, each process's CPU time and the API requests. */
async function podCreates(cluster: HttpCluster, ctl: RunningController, cpuMarkers: readonly string[]) {
  const pods = (side: Side, names: string, from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => pod(`${names}-${from + i}`, side));
  // Warm-up; the webhook sides are retried until every pod is admitted and marked (both replicas'
  // views have the GPUs; the API server has loaded the trivial webhook's configuration).
  await createAll(cluster, RESOURCES.pods, pods('none', 'warm-plain', 0, WARMUP));
  for (const side of ['ours', 'trivial'] as const) {
    for (let attempt = 0; ; attempt++) {
      const w = await createAll(cluster, RESOURCES.pods, pods(side, `warm-${side}-${attempt}`, 0, WARMUP));
      if (w.errors.size === 0 && w.marked === WARMUP) break;
      if (attempt === 30) throw new Error(`${side} webhook warm-up keeps failing: marked ${w.marked}/${WARMUP}, ${describeErrors(w)}`);
      await sleep(1_000);
    }
  }
  const admittedBefore = await metricSum(ctl, 'tf_webhook_admissions_total');
  const durBefore = await metricSum(ctl, 'tf_webhook_admission_duration_seconds_sum');

  const half = Math.floor(PODS / 2);
  const blocks: Array<[Side, number, number]> = [
    ['none', 0, half],
    ['ours', 0, half],
    ['trivial', 0, half],
    ['trivial', half, PODS],
    ['ours', half, PODS],
    ['none', half, PODS],
  ];
  const runs: Partial<Record<Side, CreateRun>> = {};
  const cpu: Record<Side, Map<string, number>> = { ours: new Map(), trivial: new Map(), none: new Map() };
  const requests: Record<Side, Map<string, number>> = { ours: new Map(), trivial: new Map(), none: new Map() };
  for (const [side, from, to] of blocks) {
    const cpuBefore = cpuMs(cpuMarkers);
    const requestsBefore = await apiRequestCounts(cluster);
    const r = await createAll(cluster, RESOURCES.pods, pods(side, side, from, to));
    addDelta(cpu[side], cpuBefore, cpuMs(cpuMarkers));
    addDelta(requests[side], requestsBefore, await apiRequestCounts(cluster));
    runs[side] = runs[side] ? merge(runs[side], r) : r;
  }
  const admitted = (await metricSum(ctl, 'tf_webhook_admissions_total')) - admittedBefore;
  const serverMs = (1000 * ((await metricSum(ctl, 'tf_webhook_admission_duration_seconds_sum')) - durBefore)) / Math.max(1, admitted);
  return { hook: runs.ours!, trivial: runs.trivial!, base: runs.none!, admitted, serverMs, cpu, requests };
}

/** Part 2: NODES GFD nodes created at once until the controller has made and counted everything. */
async function reconcile(cluster: HttpCluster, ctl: RunningController) {
  await cluster.create(RESOURCES.gpupools, renderGpuPool('recon', {}) as K8sObject);
  const before = { gpunodes: await count(cluster, RESOURCES.gpunodes), gpus: await count(cluster, RESOURCES.gpus) };
  const reconcilesBefore = await metricSum(ctl, 'tf_controller_reconcile_total');
  const errorsBefore = await metricSum(ctl, 'tf_controller_reconcile_errors_total');
  const nodes = Array.from(
    { length: NODES },
    (_, i) =>
      kwokNode({
        name: `recon-${i}`,
        labels: a100Labels('recon', GPUS_PER_NODE),
        extended: { 'nvidia.com/gpu': String(GPUS_PER_NODE) },
      }) as K8sObject,
  );
  const t0 = performance.now();
  const created = await createAll(cluster, RESOURCES.nodes, nodes);
  if (created.errors.size) throw new Error(`node creates failed: ${describeErrors(created)}`);
  const createdMs = performance.now() - t0;
  // Milestones: first time each is reached, polled every 250 ms with three cheap reads.
  const at: Record<string, number> = {};
  let readyNodes = 0;
  const deadline = Date.now() + Math.max(120_000, NODES * 600);
  for (;;) {
    const [gpunodes, gpus, status] = await Promise.all([
      count(cluster, RESOURCES.gpunodes),
      count(cluster, RESOURCES.gpus),
      poolStatus(cluster, 'recon'),
    ]);
    const now = performance.now() - t0;
    const reached = {
      gpunodes: gpunodes - before.gpunodes >= NODES,
      gpus: gpus - before.gpus >= NODES * GPUS_PER_NODE,
      pool: status.totalNodes === NODES && status.totalGPUs === NODES * GPUS_PER_NODE,
    };
    for (const [k, v] of Object.entries(reached)) if (v) at[k] ??= now;
    if (reached.gpunodes && reached.gpus && reached.pool) {
      readyNodes = status.readyNodes;
      break;
    }
    if (Date.now() > deadline)
      throw new Error(
        `reconcile: after ${Math.round(now)} ms ${gpunodes - before.gpunodes} GPUNodes, ${gpus - before.gpus} GPUs, pool ${JSON.stringify({ totalNodes: status.totalNodes, totalGPUs: status.totalGPUs })}`,
      );
    await sleep(250);
  }
  const doneMs = Math.max(at.gpunodes, at.gpus, at.pool);
  const reconciles = (await metricSum(ctl, 'tf_controller_reconcile_total')) - reconcilesBefore;
  const errors = (await metricSum(ctl, 'tf_controller_reconcile_errors_total')) - errorsBefore;
  return { createdMs, at, readyNodes, doneMs, reconciles, errors };
}

/**
 * The replicas run build/controller/controller.js and the synthesized YAML embeds it, so it is built
 * from this tree (`npm run -s bundle`). When the tree does not build (someone mid-edit), an existing
 * bundle is used with a warning rather than nothing measured.
 */
function buildBundle(): void {
  try {
    execFileSync(process.execPath, [path.resolve(__dirname, '../scripts/bundle-controller.js')], { stdio: 'pipe' });
  } catch (err) {
    if (!existsSync(BUNDLE))
      throw new Error(`\`npm run -s bundle\` failed and ${BUNDLE} does not exist:\n${(err as { stderr?: Buffer }).stderr ?? err}`);
    console.log(`WARNING: \`npm run -s bundle\` failed; using the existing bundle built ${statSync(BUNDLE).mtime.toISOString()}`);
  }
}

let cleanup: (() => Promise<void>) | undefined;

async function main(): Promise<void> {
  const opts: ControlPlaneOptions = { kwok: true };
  const missing = missingBinaries(binariesFor(opts));
  if (missing.length) throw new Error(`needs ${missing.join(', ')}: run \`npm run envtest:setup\``);
  buildBundle();
  const synth = synthToTemp();
  const { user } = controllerIdentity(synth.controller);

  let cp: ControlPlane | undefined;
  let ctl: RunningController | undefined;
  let trivial: TrivialWebhook | undefined;
  let stopping: Promise<void> | undefined;
  cleanup = () =>
    (stopping ??= (async () => {
      await trivial?.stop();
      await ctl?.stop();
      await cp?.stop();
      rmSync(synth.dir, { recursive: true, force: true });
    })());
  try {
    cp = await ControlPlane.start({ ...opts, users: [user] });
    console.log(`control plane (etcd, kube-apiserver, kwok) started in ${cp.startMs} ms`);
    const t = performance.now();
    ctl = await installController(cp, synth.controller, synth.dir, { replicas: 2 });
    const cluster = cp.cluster('admin', 'bench-cluster');
    const replicas = ctl.replicas;
    await waitFor('replicas ready', async () => (await Promise.all(replicas.map((r) => r.ready()))).every(Boolean), 60_000, 200);
    await waitFor(
      'caBundle published',
      async () => {
        const res = await cluster.request(
          'GET',
          `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${CONTROLLER_NAMES.webhookConfiguration}`,
        );
        return res.status === 200 && Boolean(JSON.parse(res.body).webhooks[0].clientConfig.caBundle);
      },
      60_000,
      200,
    );
    console.log(`controller installed (CRDs Established, 2 replicas ready, caBundle published) in ${Math.round(performance.now() - t)} ms`);

    await podSetup(cp, cluster);
    const extraOps = TRIVIAL_PATCH === 'ours' ? await oursOps(cluster) : [];
    if (extraOps.length)
      console.log(`the do-nothing webhook also sends ours' ${extraOps.length} operations (${JSON.stringify(extraOps).length} bytes)`);
    trivial = await startTrivialWebhook(cp, synth.controller, synth.dir, extraOps);
    // The control plane's processes (their command lines name its directory), our replicas (the
    // bundle: controller.js) and the do-nothing webhook (trivial-webhook.ts).
    const p = await podCreates(cluster, ctl, [cp.dir, BUNDLE, 'trivial-webhook.ts']);
    const cpuPerPod = (side: Side) =>
      Object.fromEntries([...p.cpu[side]].sort((a, b) => b[1] - a[1]).map(([name, ms]) => [name, round(ms / PODS, 2)]));
    const ratio = rps(p.hook) / rps(p.base);
    const ratioTrivial = rps(p.hook) / rps(p.trivial);
    console.log(
      `pods: ${PODS} per side, ${CONCURRENCY} creates in flight, blocks none/ours/trivial/trivial/ours/none, after ${WARMUP} warm-up creates per side`,
    );
    console.log(
      `  with webhook   ${rps(p.hook)}/s  p50 ${pct(p.hook.latencies, 50)} ms  p99 ${pct(p.hook.latencies, 99)} ms  marked by the webhook ${p.hook.marked}/${PODS}  errors: ${describeErrors(p.hook)}`,
    );
    console.log(
      `  trivial hook   ${rps(p.trivial)}/s  p50 ${pct(p.trivial.latencies, 50)} ms  p99 ${pct(p.trivial.latencies, 99)} ms  marked by it ${p.trivial.marked}/${PODS}  errors: ${describeErrors(p.trivial)}`,
    );
    console.log(
      `  no webhook     ${rps(p.base)}/s  p50 ${pct(p.base.latencies, 50)} ms  p99 ${pct(p.base.latencies, 99)} ms  marked ${p.base.marked}/${PODS}  errors: ${describeErrors(p.base)}`,
    );
    console.log(
      `  ours / none ${ratio.toFixed(3)}, ours / trivial ${ratioTrivial.toFixed(3)}, trivial / none ${(rps(p.trivial) / rps(p.base)).toFixed(3)}; our webhook's reviews ${p.admitted} (reinvocations included), mean ${p.serverMs.toFixed(2)} ms inside the replica`,
    );

    console.log('  CPU ms per pod created, by process:');
    for (const side of ['ours', 'trivial', 'none'] as const) {
      const per = cpuPerPod(side);
      const all = round(
        Object.values(per).reduce((a, b) => a + b, 0),
        2,
      );
      console.log(
        `    ${side.padEnd(8)} ${Object.entries(per)
          .map(([name, ms]) => `${name} ${ms}`)
          .join(', ')}; all ${all}`,
      );
    }
    // The metrics reads between blocks are counted too (a few `get` requests per side).
    console.log('  API server requests per 100 pods created, by verb and resource:');
    for (const side of ['ours', 'trivial', 'none'] as const) {
      const rows = [...p.requests[side]].sort((a, b) => b[1] - a[1]).map(([key, n]) => `${key} ${round((100 * n) / PODS)}`);
      console.log(`    ${side.padEnd(8)} ${rows.join(', ')}`);
    }

    const r = await reconcile(cluster, ctl);
    const objects = NODES * (1 + GPUS_PER_NODE);
    console.log(
      `reconcile: ${NODES} KWOK nodes × ${GPUS_PER_NODE} GPUs created in ${Math.round(r.createdMs)} ms (${CONCURRENCY} in flight)`,
    );
    console.log(
      `  from the first create: all GPUNodes at ${Math.round(r.at.gpunodes)} ms, all GPUs at ${Math.round(r.at.gpus)} ms, pool status totals at ${Math.round(r.at.pool)} ms (readyNodes ${r.readyNodes} then)`,
    );
    console.log(
      `  ${round(NODES / (r.doneMs / 1000))} nodes/s, ${round(objects / (r.doneMs / 1000))} objects/s (${objects} GPUNode+GPU); ${r.reconciles} reconciles, ${r.errors} reconcile errors in the run`,
    );

    console.log(
      JSON.stringify({
        createRps: rps(p.hook),
        createRpsTrivialWebhook: rps(p.trivial),
        createRpsNoWebhook: rps(p.base),
        ratio: round(ratio, 3),
        ratioTrivialWebhook: round(ratioTrivial, 3),
        trivialWebhookRatio: round(rps(p.trivial) / rps(p.base), 3),
        p50Ms: pct(p.hook.latencies, 50),
        p99Ms: pct(p.hook.latencies, 99),
        p50MsNoWebhook: pct(p.base.latencies, 50),
        p50MsTrivialWebhook: pct(p.trivial.latencies, 50),
        p99MsTrivialWebhook: pct(p.trivial.latencies, 99),
        p99MsNoWebhook: pct(p.base.latencies, 99),
        reviewMs: round(p.serverMs, 2),
        trivialPatch: TRIVIAL_PATCH,
        cpuMsPerPod: { ours: cpuPerPod('ours'), trivial: cpuPerPod('trivial'), none: cpuPerPod('none') },
        nodes: NODES,
        reconcileNodesPerSec: round(NODES / (r.doneMs / 1000)),
        controlPlaneStartMs: cp.startMs,
        pods: PODS,
        concurrency: CONCURRENCY,
        reconcileObjectsPerSec: round(objects / (r.doneMs / 1000)),
      }),
    );
  } finally {
    await cleanup();
  }
}

// Ctrl-C stops the controller and the control plane too (the harness's exit hook SIGKILLs the rest).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void (cleanup?.() ?? Promise.resolve()).finally(() => process.exit(130)));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

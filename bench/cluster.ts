/**
 * Benchmark through a real kube-apiserver (test/support/control-plane: etcd, kube-apiserver and KWOK
 * on 127.0.0.1; no scheduler or controller manager, since no pod has to run) with the shipped
 * controller bundle installed as test/e2e/install.test.ts installs it: two replica processes as the
 * rendered ServiceAccount, the webhook reached through the loopback balancer.
 *
 * 1. Pod creates/s and create latency at a fixed client concurrency: opted-in pods (the webhook
 *    resolves each one's GPU share and patches the pod) against the same pods labelled
 *    `tensor-fusion.ai/enabled: "false"`, which the webhook's objectSelector does not match. Same
 *    namespace, same annotations, same size, same ValidatingAdmissionPolicy: only the webhook call
 *    differs. Blocks run A B B A (baseline, webhook, webhook, baseline) so drift from other load on
 *    the machine falls on both sides alike.
 * 2. Reconcile throughput: N KWOK nodes labelled like NVIDIA GFD (8 GPUs each) in a pool, created at
 *    once; time until N GPUNodes and 8N GPUs exist and the GPUPool status counts them.
 * 3. Control-plane start time.
 *
 * `npx ts-node --transpile-only bench/cluster.ts [--pods=2000] [--nodes=1000]`. Rebuilds the
 * controller bundle first (`npm run -s bundle`). Needs the envtest binaries (`npm run envtest:setup`).
 * Prints figures and ends with one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, SHARE_ANNOTATION } from '../lib/model/metadata-keys';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import { RESOURCES, ResourceType, resourcePath } from '../lib/runtime/kube/resources';
import { renderGpuPool } from '../lib/render/gpu-pool';
import { CONTROLLER_NAMES } from '../lib/contract/object-names';
import { missingBinaries } from '../test/envtest/assets';
import { ControlPlane, ControlPlaneOptions, KWOK_NODE_ANNOTATION, binariesFor } from '../test/support/control-plane/control-plane';
import { BUNDLE } from '../test/support/control-plane/controller-process';
import { waitFor } from '../test/support/control-plane/process';
import {
  a100Labels,
  controllerIdentity,
  installController,
  kwokNode,
  RunningController,
  synthToTemp,
} from '../test/support/control-plane/install';
import { intFlag as flag } from './flags';
import { percentile } from './stats';

const PODS = flag('pods', 2000);
const NODES = flag('nodes', 1000);
/** Requests in flight at once from the bench client (one keep-alive agent, 64 sockets). */
const CONCURRENCY = 32;
const GPUS_PER_NODE = 8;
/** Pods of part 1 go to 4 nodes × 8 A100s: 1 TFLOPS / 256 MiB shares fit some 10,000 times. */
const POD_NODES = 4;
/** Unmeasured creates first: TLS connections to the API server and to the webhook, first writes. */
const WARMUP = 2 * CONCURRENCY;
const NS = 'bench';

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

/** An opted-in pod asking for a small local share, or (`webhook` false) the same pod not opted in. */
function pod(name: string, webhook: boolean): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NS,
      labels: { app: 'bench', [ENABLED_LABEL]: webhook ? 'true' : 'false' },
      annotations: {
        'tensor-fusion.ai/gpupool': 'bench',
        'tensor-fusion.ai/is-local-gpu': 'true',
        'tensor-fusion.ai/tflops-request': '1',
        'tensor-fusion.ai/tflops-limit': '4',
        'tensor-fusion.ai/vram-request': '256Mi',
        'tensor-fusion.ai/vram-limit': '1Gi',
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
  /** Created pods the webhook marked: an allocation (webhook allocates) or a share for the extender. */
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
        if (a[ALLOCATION_ANNOTATION] || a[SHARE_ANNOTATION]) run.marked++;
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

/** Part 1: webhook vs baseline pod creates. */
async function podCreates(cp: ControlPlane, cluster: HttpCluster, ctl: RunningController) {
  await cluster.create(RESOURCES.gpupools, renderGpuPool('bench', {}) as K8sObject);
  for (let i = 0; i < POD_NODES; i++) await cluster.create(RESOURCES.nodes, staticGpuNode(`bench-gpu-${i}`, 'bench'));
  await waitFor('pool bench Ready', async () => (await poolStatus(cluster, 'bench')).readyGPUs === POD_NODES * GPUS_PER_NODE, 60_000, 200);
  await cp.kubectlOk(['create', 'namespace', NS]);

  // Warm-up; the webhook path is retried until no pod is denied (both replicas' views have the GPUs).
  await createAll(
    cluster,
    RESOURCES.pods,
    Array.from({ length: WARMUP }, (_, i) => pod(`warm-plain-${i}`, false)),
  );
  for (let attempt = 0; ; attempt++) {
    const w = await createAll(
      cluster,
      RESOURCES.pods,
      Array.from({ length: WARMUP }, (_, i) => pod(`warm-tf-${attempt}-${i}`, true)),
    );
    if (w.errors.size === 0) break;
    if (attempt === 30) throw new Error(`webhook warm-up keeps failing: ${describeErrors(w)}`);
    await sleep(1_000);
  }
  const admittedBefore = await metricSum(ctl, 'tf_webhook_admissions_total');
  const durBefore = await metricSum(ctl, 'tf_webhook_admission_duration_seconds_sum');

  const half = Math.floor(PODS / 2);
  const blocks: Array<[boolean, number, number]> = [
    [false, 0, half],
    [true, 0, half],
    [true, half, PODS],
    [false, half, PODS],
  ];
  let hook: CreateRun | undefined;
  let base: CreateRun | undefined;
  for (const [webhook, from, to] of blocks) {
    const objs = Array.from({ length: to - from }, (_, i) => pod(`${webhook ? 'tf' : 'plain'}-${from + i}`, webhook));
    const r = await createAll(cluster, RESOURCES.pods, objs);
    if (webhook) hook = hook ? merge(hook, r) : r;
    else base = base ? merge(base, r) : r;
  }
  const admitted = (await metricSum(ctl, 'tf_webhook_admissions_total')) - admittedBefore;
  const serverMs = (1000 * ((await metricSum(ctl, 'tf_webhook_admission_duration_seconds_sum')) - durBefore)) / Math.max(1, admitted);
  return { hook: hook!, base: base!, admitted, serverMs };
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
  let stopping: Promise<void> | undefined;
  cleanup = () =>
    (stopping ??= (async () => {
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

    const p = await podCreates(cp, cluster, ctl);
    const ratio = rps(p.hook) / rps(p.base);
    console.log(
      `pods: ${PODS} per side, ${CONCURRENCY} creates in flight, blocks baseline/webhook/webhook/baseline, after ${WARMUP} warm-up creates per side`,
    );
    console.log(
      `  with webhook   ${rps(p.hook)}/s  p50 ${pct(p.hook.latencies, 50)} ms  p99 ${pct(p.hook.latencies, 99)} ms  marked by the webhook ${p.hook.marked}/${PODS}  errors: ${describeErrors(p.hook)}`,
    );
    console.log(
      `  no webhook     ${rps(p.base)}/s  p50 ${pct(p.base.latencies, 50)} ms  p99 ${pct(p.base.latencies, 99)} ms  marked ${p.base.marked}/${PODS}  errors: ${describeErrors(p.base)}`,
    );
    console.log(
      `  ratio ${ratio.toFixed(3)}; webhook reviews ${p.admitted} (reinvocations included), mean ${p.serverMs.toFixed(2)} ms inside the replica`,
    );

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
        createRpsNoWebhook: rps(p.base),
        ratio: round(ratio, 3),
        p50Ms: pct(p.hook.latencies, 50),
        p99Ms: pct(p.hook.latencies, 99),
        p50MsNoWebhook: pct(p.base.latencies, 50),
        p99MsNoWebhook: pct(p.base.latencies, 99),
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

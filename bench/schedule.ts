/**
 * npm run bench:schedule — GPU pods placed by the real kube-scheduler with our extender, against the
 * same kube-scheduler build placing the same number of pods that request a plain extended resource
 * (`nvidia.com/gpu: 1`), in one run on one control plane with KWOK GPU nodes. Measures pods bound per
 * second and create-to-bound latency (p50/p99) for both; the ratio is the headline.
 *
 * Runs `--rounds` rounds (3), each placing `--pods` pods both ways, the first side alternating from round
 * to round; the headline figures are the medians over the rounds, so one noisy run on a shared machine
 * does not decide them. Before them, `--warmup` pods (500) are placed both ways and not counted, so that
 * no round pays for what a running controller has long done: V8 compiling the admission and extender
 * code (a sixth of the controller's CPU on its first 1,000 pods, measured with perf).
 *
 * Flags: --pods=N (1000), --nodes=N (1000), --concurrency=N (32), --rounds=N (3), --warmup=N (500, 0 for
 *        none); --bare-pods: GPU pods without a workload annotation, so each gets a generated workload
 *        of its own (one more write per pod);
 *        --quotas: instead of the plain scheduler, our placement with a GPUResourceQuota in each of the 10
 *        namespaces the pods are spread over (room for all of them: the bench measures the accounting,
 *        not a refusal) against the same spread without quotas;
 *        --state: instead, the extender state at scale without an API server (50,000 GPUs, 200,000 shares);
 *        --openb=DIR [--seed=N] [--limit=N] [--nodes-every=K] [--dra|--dra-only [--dra-pods=N] [--dra-levers=a,b]]: instead, the openb trace replay placed through the
 *        scheduler (schedule-openb.ts); --dra adds the DRA side, one replay per lever, and (with the plain
 *        lever) a throughput comparison of N DRA pods against N nvidia.com/gpu pods (schedule-openb-dra.ts); --dra-only: without
 *        the extender side, for quick checks; --nodes-every=K keeps every K-th trace node (pods to 100% of
 *        that capacity).
 * Ends with one JSON line.
 */
import { ENABLED_LABEL } from '../lib/model/metadata-keys';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import { Informer } from '../lib/runtime/kube/informer';
import { RESOURCES } from '../lib/runtime/kube/resources';
import { a100Labels, installController, kwokNode, writeYaml } from '../test/support/control-plane/install';
import { measureState } from './schedule-state';
import { apiRequestCounts, countDelta, cpuDelta, cpuSecondsByProcess, median, metricSamples, percentile } from './stats';
import { BUNDLE } from '../test/support/control-plane/controller-process';
import { printOpenb } from './schedule-openb';
import { DRA_LEVERS, DraLever } from './schedule-openb-dra';
import { applyBenchPool, startBenchControlPlane } from './control-plane';
import { intFlag as flag, stringFlag } from './flags';

const PLAIN_SCHEDULER = 'plain-scheduler';
type Side = 'plain' | 'ours' | 'noQuota' | 'quota';
const LABELS: Record<Side, string> = {
  plain: 'plain kube-scheduler, nvidia.com/gpu',
  ours: 'webhook + kube-scheduler + extender',
  noQuota: 'ours, 10 namespaces without quotas',
  quota: 'ours, 10 namespaces with a GPUResourceQuota each',
};
/** A side in namespace and label values (lower case). */
const SLUGS: Record<Side, string> = { plain: 'plain', ours: 'ours', noQuota: 'no-quota', quota: 'quota' };
const POOL = 'bench';
/** The label that names a run's pods (the quota sides spread them over namespaces). */
const RUN_LABEL = 'bench.tensor-fusion.ai/run';
/** Namespaces of one run of a quota side. */
const QUOTA_NAMESPACES = 10;

interface RunFigures {
  boundPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU seconds per process during the run (this script's own as `bench`). */
  cpu: Record<string, number>;
  /** kube-apiserver requests during the run by verb and resource (10 or more). */
  requests: Record<string, number>;
}

/** Writes that are the cluster's steady state, not the aftermath of a run: node leases and events. */
const BACKGROUND = /^(PUT leases|POST events|PATCH events)/;
/** How long the API server must see no other write before a run starts. */
const QUIET_MS = 2_000;

/**
 * Waits until the API server has served no write but the background ones for `quietMs` (at most
 * `limitMs`), so that the status writes a run set off (KWOK starting its pods, the controller's GPU
 * status) are not counted in the next run.
 */
async function settle(cluster: HttpCluster, quietMs = QUIET_MS, limitMs = 60_000): Promise<number> {
  const writes = async () =>
    [...(await apiRequestCounts(cluster))]
      .filter(([k]) => /^(POST|PUT|PATCH|DELETE) /.test(k) && !BACKGROUND.test(k))
      .reduce((n, [, v]) => n + v, 0);
  const started = performance.now();
  let last = await writes();
  let quietSince = performance.now();
  while (performance.now() - quietSince < quietMs && performance.now() - started < limitMs) {
    await new Promise((r) => setTimeout(r, 250));
    const now = await writes();
    if (now !== last) quietSince = performance.now();
    last = now;
  }
  return Math.round(performance.now() - started);
}

/** Creates `count` pods with `concurrency` in flight; resolves when all are bound. */
async function run(
  cluster: HttpCluster,
  markers: string[],
  runName: string,
  count: number,
  concurrency: number,
  make: (i: number) => K8sObject,
): Promise<RunFigures> {
  const created = new Map<string, number>();
  const bound = new Map<string, number>();
  const pods = new Informer<K8sObject>(cluster, RESOURCES.pods, { labelSelector: `${RUN_LABEL}=${runName}` });
  let done: () => void = () => undefined;
  const all = new Promise<void>((r) => {
    done = r;
  });
  const seen = (p: K8sObject) => {
    const name = p.metadata.name!;
    if ((p.spec as { nodeName?: string } | undefined)?.nodeName && !bound.has(name)) {
      bound.set(name, performance.now());
      if (bound.size === count) done();
    }
  };
  pods.on({ add: seen, update: (_o, p) => seen(p) });
  pods.start();
  await pods.waitForSync();
  console.log(`  settled in ${await settle(cluster)} ms (no write but leases and events for ${QUIET_MS / 1000} s)`);
  const started = performance.now();
  const requestsBefore = await apiRequestCounts(cluster);
  const cpuBefore = cpuSecondsByProcess(markers);
  const ownBefore = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const pod = make(i);
        created.set(pod.metadata.name!, performance.now());
        await cluster.create(RESOURCES.pods, pod);
      }
    }),
  );
  await all;
  const own = process.cpuUsage(ownBefore);
  const cpu = { ...cpuDelta(cpuBefore, cpuSecondsByProcess(markers)), bench: Math.round((own.user + own.system) / 1e5) / 10 };
  const requests = countDelta(requestsBefore, await apiRequestCounts(cluster), 10);
  await pods.stop();
  const latencies = [...bound].map(([name, t]) => t - (created.get(name) ?? t)).sort((a, b) => a - b);
  const last = Math.max(...bound.values());
  return {
    boundPerSec: Math.round((count / ((last - started) / 1000)) * 10) / 10,
    p50Ms: Math.round(percentile(latencies, 50)),
    p99Ms: Math.round(percentile(latencies, 99)),
    cpu,
    requests,
  };
}

async function cluster(): Promise<void> {
  const pods = flag('pods', 1000);
  const nodes = flag('nodes', 1000);
  const concurrency = flag('concurrency', 32);
  const rounds = flag('rounds', 3);
  const warmup = flag('warmup', 500, 0);
  const bare = process.argv.includes('--bare-pods');
  const quotas = process.argv.includes('--quotas');
  const SIDES: readonly Side[] = quotas ? ['noQuota', 'quota'] : ['plain', 'ours'];
  const [base, measured] = SIDES;
  const { synth, cp } = await startBenchControlPlane();
  const stop = async () => {
    await ctl?.stop();
    await cp.stop();
  };
  let ctl: Awaited<ReturnType<typeof installController>> | undefined;
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    console.log(`control plane started in ${cp.startMs} ms`);
    ctl = await installController(cp, synth.controller, synth.dir, { replicas: 1, schedulers: true });
    if (!quotas)
      await cp.startScheduler({ profiles: [{ schedulerName: PLAIN_SCHEDULER }], percentageOfNodesToScore: 100 }, 'kube-scheduler-plain');
    const admin = cp.cluster('admin', 'bench-schedule');
    const nodeObjs = Array.from({ length: nodes }, (_, i) =>
      kwokNode({
        name: `gpu-${i}`,
        extended: { 'nvidia.com/gpu': '8' },
        labels: a100Labels(POOL, 8),
      }),
    );
    const runs = [...(warmup > 0 ? ['warmup'] : []), ...Array.from({ length: rounds }, (_, r) => String(r + 1))].flatMap((r) =>
      SIDES.map((side) => `${SLUGS[side]}-${r}`),
    );
    /** The namespace of pod `i` of a run: one per run, or ten for the quota sides. */
    const namespaceOf = (runName: string, i: number) => (quotas ? `${runName}-${i % QUOTA_NAMESPACES}` : runName);
    const namespaces = runs.flatMap((r) => Array.from({ length: quotas ? QUOTA_NAMESPACES : 1 }, (_, i) => namespaceOf(r, i)));
    // Room for every pod of the run (10 TFLOPS and 8Gi each), so that the quota is checked and counted, never refusing.
    const perNamespace = Math.ceil(Math.max(pods, warmup) / QUOTA_NAMESPACES);
    const quotaObjects = namespaces
      .filter((n) => n.startsWith('quota-'))
      .map((namespace) => ({
        apiVersion: 'tensor-fusion.ai/v1',
        kind: 'GPUResourceQuota',
        metadata: { name: 'bench', namespace },
        spec: {
          total: { requests: { tflops: String(10 * perNamespace), vram: `${8 * perNamespace}Gi` }, maxWorkers: perNamespace },
          single: { maxRequests: { tflops: '10' } },
        },
      }));
    await applyBenchPool(cp, synth.dir, POOL, namespaces);
    if (quotaObjects.length > 0) await cp.kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'quotas.yaml', quotaObjects)]);
    const t0 = performance.now();
    let ni = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (ni < nodeObjs.length) await admin.create(RESOURCES.nodes, nodeObjs[ni++] as K8sObject);
      }),
    );
    for (;;) {
      const pool = await admin.get<K8sObject & { status?: { totalNodes?: number; totalGPUs?: number } }>(RESOURCES.gpupools, {
        name: POOL,
      });
      if (pool?.status?.totalNodes === nodes && pool.status.totalGPUs === nodes * 8 && (await ctl.replicas[0].ready())) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    console.log(`${nodes} KWOK GPU nodes ready (GPUNode and GPU objects made) in ${Math.round(performance.now() - t0)} ms`);
    const container = (extra: Record<string, unknown> = {}) => [
      { name: 'main', image: 'example.io/app:1', resources: { requests: { cpu: '10m' }, ...extra } },
    ];
    const ourPod = (runName: string, i: number): K8sObject => {
      const namespace = namespaceOf(runName, i);
      return {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `gpu-${i}`,
          namespace,
          labels: { [ENABLED_LABEL]: 'true', [RUN_LABEL]: runName },
          // One workload, as the replicas of a Deployment are; --bare-pods: a generated workload each.
          annotations: {
            'tensor-fusion.ai/gpupool': POOL,
            'tensor-fusion.ai/is-local-gpu': 'true',
            'tensor-fusion.ai/tflops-request': '10',
            'tensor-fusion.ai/vram-request': '8Gi',
            ...(bare ? {} : { 'tensor-fusion.ai/workload': `bench-${namespace}` }),
          },
        },
        spec: { containers: container() },
      };
    };
    const make: Record<Side, (runName: string, i: number) => K8sObject> = {
      plain: (runName, i) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `plain-${i}`, namespace: runName, labels: { [RUN_LABEL]: runName } },
        spec: { schedulerName: PLAIN_SCHEDULER, containers: container({ limits: { 'nvidia.com/gpu': '1' } }) },
      }),
      ours: ourPod,
      noQuota: ourPod,
      quota: ourPod,
    };
    const markers = [cp.dir, BUNDLE];
    if (warmup > 0) {
      for (const side of SIDES) {
        const runName = `${SLUGS[side]}-warmup`;
        const f = await run(admin, markers, runName, warmup, concurrency, (i) => make[side](runName, i));
        console.log(`warm-up, ${LABELS[side]}: ${warmup} pods, ${f.boundPerSec} pods bound/s (not counted)`);
      }
    }
    const ratios: number[] = [];
    const figures: Record<Side, RunFigures[]> = { plain: [], ours: [], noQuota: [], quota: [] };
    for (let round = 1; round <= rounds; round++) {
      // Alternate which side goes first, so that neither always runs on the cluster the other just grew.
      for (const side of round % 2 === 1 ? SIDES : [...SIDES].reverse()) {
        const runName = `${SLUGS[side]}-${round}`;
        const f = await run(admin, markers, runName, pods, concurrency, (i) => make[side](runName, i));
        figures[side].push(f);
        console.log(`round ${round}, ${LABELS[side]}: ${f.boundPerSec} pods bound/s, create-to-bound p50 ${f.p50Ms} ms, p99 ${f.p99Ms} ms`);
        console.log(`  CPU seconds: ${JSON.stringify(f.cpu)}`);
        console.log(`  API requests: ${JSON.stringify(f.requests)}`);
      }
      ratios.push(Number((figures[measured][round - 1].boundPerSec / figures[base][round - 1].boundPerSec).toFixed(2)));
      console.log(`round ${round}: ratio (${measured} / ${base} bound per second) ${ratios[round - 1]}`);
    }
    const metrics = await ctl.replicas[0].metrics();
    const sums = new Map(metricSamples(metrics, 'tf_extender_call_duration_seconds_sum').map((x) => [x.labels.verb, x.value]));
    const verbs = metricSamples(metrics, 'tf_extender_call_duration_seconds_count').map(
      ({ labels: { verb }, value: n }) => `${verb} ${n} calls, mean ${(((sums.get(verb) ?? NaN) / n) * 1000).toFixed(2)} ms`,
    );
    console.log(`extender (whole bench): ${verbs.join('; ')}`);
    const med = (side: Side, k: 'boundPerSec' | 'p50Ms' | 'p99Ms') => median(figures[side].map((f) => f[k]));
    console.log(
      `median of ${rounds} rounds: ${measured} ${med(measured, 'boundPerSec')} pods/s against ${base} ${med(base, 'boundPerSec')}, ratio ${median(ratios)}`,
    );
    const common = { ratio: median(ratios), ratios, pods, nodes, concurrency, rounds, warmup, bare };
    console.log(
      JSON.stringify(
        quotas
          ? {
              quotaBoundPerSec: med('quota', 'boundPerSec'),
              noQuotaBoundPerSec: med('noQuota', 'boundPerSec'),
              quotaP99Ms: med('quota', 'p99Ms'),
              noQuotaP99Ms: med('noQuota', 'p99Ms'),
              quotaNamespaces: QUOTA_NAMESPACES,
              meetsGoal: median(ratios) >= 0.95,
              ...common,
            }
          : {
              boundPerSec: med('ours', 'boundPerSec'),
              plainBoundPerSec: med('plain', 'boundPerSec'),
              p50Ms: med('ours', 'p50Ms'),
              p99Ms: med('ours', 'p99Ms'),
              plainP50Ms: med('plain', 'p50Ms'),
              plainP99Ms: med('plain', 'p99Ms'),
              ...common,
            },
      ),
    );
  } finally {
    await stop();
  }
}

async function state(): Promise<void> {
  const r = await measureState();
  console.log(
    `${r.gpus} GPUs, ${r.shares} shares recorded on pods: state rebuilt in ${r.rebuildMs} ms; heap +${r.heapMB} MB, RSS +${r.rssMB} MB (pod cache included)`,
  );
  console.log(`one more share through filter over every node: p50 ${r.placeP50Ms} ms, p99 ${r.placeP99Ms} ms`);
  console.log("no object holds more than one pod's share: each allocation is an annotation of its own pod");
  console.log(
    JSON.stringify({
      shares: r.shares,
      gpus: r.gpus,
      rssMB: r.rssMB,
      heapMB: r.heapMB,
      rebuildMs: r.rebuildMs,
      placeP50Ms: r.placeP50Ms,
      placeP99Ms: r.placeP99Ms,
    }),
  );
}

const openbDir = stringFlag('openb');
/** `--dra-levers=plain,fgd`: a subset of the DRA levers, checked. */
function draLevers(list: string | undefined): DraLever[] | undefined {
  if (list === undefined) return undefined;
  const levers = list.split(',');
  const bad = levers.find((l) => !(DRA_LEVERS as readonly string[]).includes(l));
  if (bad !== undefined) throw new Error(`--dra-levers: ${JSON.stringify(bad)} is not a lever; allowed: ${DRA_LEVERS.join(', ')}`);
  return levers as DraLever[];
}
const limit = process.argv.some((a) => a.startsWith('--limit=')) ? flag('limit', 1) : undefined;
(process.argv.includes('--state')
  ? state()
  : openbDir
    ? printOpenb({
        dir: openbDir,
        seed: flag('seed', 42),
        limit,
        dra: process.argv.includes('--dra') || process.argv.includes('--dra-only'),
        draOnly: process.argv.includes('--dra-only'),
        nodesEvery: flag('nodes-every', 1),
        draLevers: draLevers(stringFlag('dra-levers')),
        draThroughputPods: flag('dra-pods', 1000),
      })
    : cluster()
).catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});

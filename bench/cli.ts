/**
 * `npm run bench:cli -- [openb dir]` (default ../shared/traces/openb): the bundled `kubectl tf` plugin,
 * run as users run it (a child process of the bundle, build/controller/kubectl-tf.js).
 *
 * 1. `plan` on Alibaba's openb trace written as manifests (openb-manifests.ts: 1,213 nodes, 8,152 pods
 *    in trace order): wall time and peak RSS (median of `--runs`, 3), and its figures beside those of the
 *    trace replay's allocatorRun on the same pods in-process, which must be equal; the plan's time
 *    against the allocator's own (time inside allocate()).
 * 2. `top gpus` against a real control plane with 1,000 KWOK GPU nodes of 8 GPUs (`--nodes`) and
 *    `--pods` (300) GPU pods placed by the real kube-scheduler and extender: median wall time of `--runs`
 *    against `kubectl get gpus -o json` timed the same way in the same run.
 *
 * Flags: --runs=N (3), --nodes=N (1000), --pods=N (300). Ends with one JSON line.
 */
import { spawn } from 'child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join, resolve } from 'path';
import { CLI_BUNDLE_PATH } from '../lib/contract/bundle';
import { clusterFromManifests, readManifests } from '../lib/runtime/cli/manifests';
import { planPlacement } from '../lib/runtime/cli/plan';
import { workloadPods } from '../lib/runtime/cli/workload-pods';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import { RESOURCES } from '../lib/runtime/kube/resources';
import { binaryPath } from '../test/envtest/assets';
import { a100Labels, installController, kwokNode, localGpuPod, writeYaml } from '../test/support/control-plane/install';
import { openbPlatform, openbPods } from './openb-manifests';
import { allocatorRun, capacity, readNodes, readPods } from './trace-replay';
import { median } from './stats';
import { applyBenchPool, startBenchControlPlane } from './control-plane';
import { intFlag as flag } from './flags';
import { EXIT } from '../lib/runtime/cli/cli-error';

const BUNDLE = resolve(__dirname, '..', CLI_BUNDLE_PATH);
const POOL = 'bench';
const NS = 'bench-top';

interface Ran {
  seconds: number;
  /** Peak resident set of the child, in MB (its own process.resourceUsage().maxRSS, read at exit). */
  peakMB: number;
  stdout: string;
}

/** Runs `cmd args`, timing it from spawn to exit; with `rssHook`, node reports its peak RSS on stderr. */
function timed(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv, okCodes: readonly number[] = [0]): Promise<Ran> {
  return new Promise((done, fail) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', fail);
    child.on('close', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      const stderr = Buffer.concat(err).toString();
      if (!okCodes.includes(code ?? -1)) return fail(new Error(`${cmd} ${args.join(' ')}: exit ${code}\n${stderr.slice(-2000)}`));
      const rss = /^maxRSS (\d+)$/m.exec(stderr);
      done({ seconds, peakMB: rss ? Number(rss[1]) / 1024 : NaN, stdout: Buffer.concat(out).toString() });
    });
  });
}

/** Median of `runs` runs of `run`, with the spread. */
async function medianOf(runs: number, run: () => Promise<Ran>): Promise<{ last: Ran; seconds: number[]; peakMB: number[] }> {
  const all: Ran[] = [];
  for (let i = 0; i < runs; i++) all.push(await run());
  return { last: all[all.length - 1], seconds: all.map((r) => r.seconds), peakMB: all.map((r) => r.peakMB) };
}

const spread = (xs: readonly number[], d = 2) =>
  `median ${median(xs).toFixed(d)} (${[...xs]
    .sort((a, b) => a - b)
    .map((x) => x.toFixed(d))
    .join(', ')})`;

interface PlanJson {
  pods: { node?: string }[];
  placed: number;
  unplaced: number;
  unallocatedPct: number;
  strandedVram: number;
}

async function planBench(dir: string, runs: number, tmp: string) {
  const nodes = readNodes(dir);
  const pods = readPods(dir, 'default');
  const platform = writeYaml(tmp, 'platform.yaml', openbPlatform(nodes));
  const podsFile = writeYaml(tmp, 'pods.yaml', openbPods(pods));
  const hook = join(tmp, 'max-rss.js');
  // maxRSS is in kilobytes.
  writeFileSync(hook, "process.on('exit', () => process.stderr.write(`\\nmaxRSS ${process.resourceUsage().maxRSS}\\n`));\n");
  const svg = join(tmp, 'plan.svg');
  console.log(
    `openb: ${nodes.length} nodes, ${capacity(nodes) / 1000} GPUs, ${pods.length} pods (${pods.filter((p) => p.n === 0).length} CPU-only); ` +
      `manifests ${(statSync(podsFile).size / 2 ** 20).toFixed(1)} MB of pods, ${(statSync(platform).size / 2 ** 20).toFixed(1)} MB of platform`,
  );
  const args = ['--require', hook, BUNDLE, 'plan', '-f', podsFile, '--from', platform, '-o', 'json', '--svg', svg];
  const plan = await medianOf(runs, () => timed(process.execPath, args, process.env, [EXIT.ok, EXIT.unplaced]));
  const p = JSON.parse(plan.last.stdout) as PlanJson;

  const replays = Array.from({ length: runs }, () => {
    const t0 = performance.now();
    const r = allocatorRun(nodes, pods, undefined, 'MinFragmentation', 0);
    return { r, wall: (performance.now() - t0) / 1000 };
  });
  // Where the plugin's time goes, in this process (ts-node, not the bundle): reading YAML, building the cluster, placing.
  const t0 = performance.now();
  const read = (f: string) => readFileSync(f, 'utf8');
  const podDocs = readManifests([podsFile], read);
  const platformDocs = readManifests([platform], read);
  const t1 = performance.now();
  const cluster = clusterFromManifests(platformDocs);
  const workloads = workloadPods(podDocs).pods;
  const t2 = performance.now();
  await planPlacement(cluster, workloads);
  const t3 = performance.now();
  const phases = { readYamlS: (t1 - t0) / 1000, buildS: (t2 - t1) / 1000, placeS: (t3 - t2) / 1000 };
  const { r } = replays[0];
  const allocated = pods.reduce((s, x, i) => s + (r.outcome[i] !== '' ? x.n * x.g : 0), 0);
  const traceUnallocatedPct = 100 - (100 * allocated) / capacity(nodes);
  const tracePlaced = r.outcome.filter((n) => n !== '').length;
  const differing = p.pods.filter((x, i) => (x.node ?? '') !== r.outcome[i]).length;
  const allocS = median(replays.map((x) => x.r.seconds));
  const allocWallS = median(replays.map((x) => x.wall));
  // VRAM is 1000 MiB per GPU here: stranded MiB / 1000 is stranded GPUs' worth of memory.
  const strandedGpus = p.strandedVram / 2 ** 20 / 1000;
  console.log(`kubectl tf plan (bundled, child process): ${spread(plan.seconds)} s, peak RSS ${spread(plan.peakMB, 0)} MB`);
  console.log(
    `  plan:     placed ${p.placed}, unplaced ${p.unplaced}, unallocated ${p.unallocatedPct.toFixed(4)}% of TFLOPS, stranded VRAM ${strandedGpus.toFixed(1)} GPUs' worth`,
  );
  console.log(
    `  replay:   placed ${tracePlaced}, unplaced ${pods.length - tracePlaced}, unallocated ${traceUnallocatedPct.toFixed(4)}% (allocatorRun, MinFragmentation, learned mix, seed 0)`,
  );
  console.log(`  pods placed on a different node (or only by one): ${differing}`);
  console.log(
    `  allocatorRun: ${allocS.toFixed(3)} s inside allocate(), ${allocWallS.toFixed(3)} s with building the cluster (median of ${runs}); ` +
      `plan / allocate() time ${(median(plan.seconds) / allocS).toFixed(1)}x`,
  );
  console.log(
    `  in process, one run: read YAML ${phases.readYamlS.toFixed(2)} s, objects and pods ${phases.buildS.toFixed(2)} s, planPlacement ${phases.placeS.toFixed(2)} s`,
  );
  if (differing > 0 || p.placed !== tracePlaced || Math.abs(p.unallocatedPct - traceUnallocatedPct) > 1e-9) {
    throw new Error(`kubectl tf plan and allocatorRun differ: ${differing} pods on other nodes`);
  }
  return {
    planS: Number(median(plan.seconds).toFixed(3)),
    planSRuns: plan.seconds.map((s) => Number(s.toFixed(3))),
    planPeakMB: Math.round(median(plan.peakMB)),
    planPlaced: p.placed,
    planUnplaced: p.unplaced,
    planUnallocatedPct: Number(p.unallocatedPct.toFixed(4)),
    traceUnallocatedPct: Number(traceUnallocatedPct.toFixed(4)),
    planStrandedVramGpus: Number(strandedGpus.toFixed(1)),
    allocatorS: Number(allocS.toFixed(3)),
    planVsAllocator: Number((median(plan.seconds) / allocS).toFixed(1)),
    planPhasesS: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, Number(v.toFixed(2))])),
  };
}

async function topBench(nodes: number, pods: number, runs: number) {
  const { synth, cp } = await startBenchControlPlane();
  let ctl: Awaited<ReturnType<typeof installController>> | undefined;
  try {
    ctl = await installController(cp, synth.controller, synth.dir, { replicas: 1, schedulers: true });
    const admin = cp.cluster('admin', 'bench-cli');
    await applyBenchPool(cp, synth.dir, POOL, [NS]);
    const t0 = performance.now();
    const nodeObjs = Array.from({ length: nodes }, (_, i) => kwokNode({ name: `gpu-${i}`, labels: a100Labels(POOL, 8) }));
    const createAll = async (objs: K8sObject[], rt: (typeof RESOURCES)[keyof typeof RESOURCES]) => {
      let i = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (i < objs.length) await admin.create(rt, objs[i++]);
        }),
      );
    };
    await createAll(nodeObjs as K8sObject[], RESOURCES.nodes);
    for (;;) {
      const pool = await admin.get<K8sObject & { status?: { totalNodes?: number; totalGPUs?: number } }>(RESOURCES.gpupools, {
        name: POOL,
      });
      if (pool?.status?.totalNodes === nodes && pool.status.totalGPUs === nodes * 8 && (await ctl.replicas[0].ready())) break;
      if (performance.now() - t0 > 300_000) throw new Error(`pool ${POOL}: ${JSON.stringify(pool?.status)} after 300 s`);
      await new Promise((r) => setTimeout(r, 500));
    }
    console.log(`\n${nodes} KWOK GPU nodes (${nodes * 8} GPUs) ready in ${Math.round(performance.now() - t0)} ms`);
    const t1 = performance.now();
    const podObjs = Array.from({ length: pods }, (_, i) =>
      localGpuPod({ name: `gpu-${i}`, namespace: NS, pool: POOL, tflops: String(10 + (i % 5) * 40), vram: '8Gi', cpu: '10m' }),
    );
    await createAll(podObjs as K8sObject[], RESOURCES.pods);
    for (;;) {
      const list = await admin.list<K8sObject & { spec?: { nodeName?: string } }>(RESOURCES.pods, { namespace: NS });
      const bound = list.items.filter((p) => p.spec?.nodeName).length;
      if (bound === pods) break;
      if (performance.now() - t1 > 300_000) throw new Error(`${bound} of ${pods} GPU pods bound after 300 s`);
      await new Promise((r) => setTimeout(r, 500));
    }
    console.log(`${pods} GPU pods bound in ${Math.round(performance.now() - t1)} ms`);

    const env = { ...process.env, KUBECONFIG: cp.kubeconfig, HOME: cp.dir };
    const measure = async (label: string, cmd: string, args: string[]) => {
      const r = await medianOf(runs, () => timed(cmd, args, env));
      const out = JSON.parse(r.last.stdout) as unknown[] | { items: unknown[] };
      const gpus = Array.isArray(out) ? out.length : out.items.length;
      console.log(`${label}: ${spread(r.seconds)} s, ${gpus} GPUs, ${(r.last.stdout.length / 2 ** 20).toFixed(2)} MB of JSON`);
      return r.seconds;
    };
    const top = await measure('kubectl tf top gpus -o json (bundled plugin)', process.execPath, [BUNDLE, 'top', 'gpus', '-o', 'json']);
    const get = await measure('kubectl get gpus -o json', binaryPath('kubectl'), ['get', 'gpus', '-o', 'json']);
    const topTable = await medianOf(runs, () => timed(process.execPath, [BUNDLE, 'top', 'gpus'], env));
    console.log(`kubectl tf top gpus (table): ${spread(topTable.seconds)} s`);
    console.log(`top gpus / kubectl get gpus: ${(median(top) / median(get)).toFixed(2)}x`);
    return {
      topGpusS: Number(median(top).toFixed(3)),
      topGpusSRuns: top.map((s) => Number(s.toFixed(3))),
      topGpusTableS: Number(median(topTable.seconds).toFixed(3)),
      kubectlGetGpusS: Number(median(get).toFixed(3)),
      kubectlGetGpusSRuns: get.map((s) => Number(s.toFixed(3))),
      topVsGet: Number((median(top) / median(get)).toFixed(2)),
      gpus: nodes * 8,
      gpuPods: pods,
    };
  } finally {
    await ctl?.stop();
    await cp.stop();
    rmSync(synth.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const dir = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? resolve(__dirname, '../../shared/traces/openb');
  if (!existsSync(join(dir, 'openb_node_list_gpu_node.csv'))) {
    throw new Error(`openb dir: got ${JSON.stringify(dir)}, expected a directory holding openb_node_list_gpu_node.csv`);
  }
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE}: missing; run npm run bundle (npm run bench:cli does)`);
  const runs = flag('runs', 3);
  const tmp = mkdtempSync(join(tmpdir(), 'tf-bench-cli-'));
  try {
    const plan = await planBench(dir, runs, tmp);
    const top = await topBench(flag('nodes', 1000), flag('pods', 300, 0), runs);
    console.log(JSON.stringify({ ...plan, ...top, runs }));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});

/**
 * `npm run bench:schedule -- --openb=<openb dir> [--seed=42] [--limit=N]`
 *
 * The openb trace replay of bench:trace (trace-replay.ts, FGD protocol), with placement going through
 * the real kube-scheduler and our extender instead of the allocator in process: one KWOK node per
 * trace node, one pod per arrival, placed one at a time and tried once (an unschedulable pod is
 * deleted at once, nothing departs). Unallocated GPU % at 100% arrived is computed from the bound
 * pods' allocation records with trace-replay's own formula, beside allocatorRun's figure for the same
 * seed and policy. `--limit` stops after N pods for a quick check (then only allocated % so far is
 * comparable).
 *
 * The mapping keeps the trace's arithmetic exact: every GPU is 1000 TFLOPS (a pool override per trace
 * model: the trace's model names are not in the catalog, or not with one capacity) and 16000 MiB, so
 * `gpu_milli` g asks for g TFLOPS and 16·g MiB on each of its GPUs, the same fraction on any model, as
 * the trace means it. CPU and memory are container requests against the node's allocatable, so
 * kube-scheduler enforces the trace's hard limits. CPU-only trace pods (no GPU) cannot be opted in
 * (gpu-count >= 1), so they are plain pods of our kube-scheduler: they take their CPU and memory in
 * the same scheduler cache, and the extender places them by the pool's mode as shares of no GPU.
 *
 * The full replay (~8,400 pods, sequential) takes about half an hour on 2 cores; use --limit for checks.
 */
import { startBenchControlPlane } from './control-plane';
import { ENABLED_LABEL, ALLOCATION_ANNOTATION } from '../lib/model/metadata-keys';
import { SCHEDULER_NAME } from '../lib/contract/object-names';
import { DEFAULT_PLACEMENT_MODE } from '../lib/model/rules';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import { Informer } from '../lib/runtime/kube/informer';
import { RESOURCES } from '../lib/runtime/kube/resources';
import { parseQuantity } from '../lib/k8s/quantity';
import type { Allocation } from '../lib/allocator';
import { ControlPlane } from '../test/support/control-plane';
import { installController, kwokNode, synthToTemp, writeYaml } from '../test/support/control-plane/install';
import { allocatorRun, arrivalStream, capacity, readNodes, readPods, replay, TraceNode, TracePod, traceMix } from './trace-replay';
import { percentile } from './stats';
import { GPU_TFLOPS, GPU_VRAM_MIB, gpuNodeLabels, openbPool } from './openb-gpu';
import { Decisions } from './scheduler-decisions';
import { DRA_LEVERS, DraFigures, DraLever, draThroughput, inProcessAsFgd, placeDra, setUpDra, stopDra } from './schedule-openb-dra';

const POOL = 'openb';
const NAMESPACE = 'openb';

export interface OpenbOptions {
  dir: string;
  seed: number;
  /** Stop after this many pods. */
  limit?: number;
  /**
   * Every how many trace nodes one is kept (1: all). A smaller cluster with the pods to 100% of its own
   * capacity: a whole replay in a fraction of the time. @default 1
   */
  nodesEvery?: number;
  /** Also replay the pods through kube-scheduler's DRA allocator, one side per lever (schedule-openb-dra.ts). */
  dra?: boolean;
  /** DRA pods (and plain pods) for the throughput comparison. @default 1000 */
  draThroughputPods?: number;
  /** With `dra`: the levers to replay. @default DRA_LEVERS */
  draLevers?: readonly DraLever[];
  /** With `dra`: the DRA sides only (no controller, no extender side), for quick checks. */
  draOnly?: boolean;
  log?: (line: string) => void;
}

export interface OpenbFigures {
  seed: number;
  policy: string;
  /** Pods tried through the scheduler, and how many were bound. */
  pods: number;
  bound: number;
  /** Unallocated GPU % at 100% arrived: through the scheduler (NaN when stopped early), and the allocator in process (bench:trace). */
  openbUnallocated100: number;
  offlineUnallocated100: number;
  /**
   * The allocator in process as the extender places: learning the workload mix as it goes (bench:trace
   * gives it the whole trace's mix up front), ties broken in the same order (seed 0).
   */
  offlineLearnedUnallocated100: number;
  /** Allocated GPU % of capacity after the last pod tried, both ways (comparable with --limit too). */
  openbAllocatedEnd: number;
  offlineAllocatedEnd: number;
  /** Arrived GPU % after the last pod tried. */
  arrivedEnd: number;
  /** Pods placed on the same node as the allocator in process learning the mix placed them (offlineLearnedUnallocated100). */
  sameNode: number;
  /** Bound GPU pods whose allocation record does not match the request, and GPUs given past capacity. */
  recordMismatches: number;
  overcommittedGpus: number;
  /** PodScheduled=False reasons other than Unschedulable. */
  otherFailures: Record<string, number>;
  placeSeconds: number;
  p50Ms: number;
  p99Ms: number;
  /** The DRA sides, with --dra. */
  dra?: DraFigures[];
  /** With the fgd lever: the allocator in process as that side's extender ranks (inProcessAsFgd). */
  draInProcessUnallocated100?: number;
  draBoundPerSec?: number;
  plainBoundPerSec?: number;
}

/** The pods to try: up to the last one whose arrival still rounds to 100% (replay()'s point). */
export function prefixTo100(stream: readonly TracePod[], cap: number): TracePod[] {
  let arrived = 0;
  let end = 0;
  while (end < stream.length) {
    arrived += stream[end].n * stream[end].g;
    // Python's round(100.5) is 100: events up to 100.5% count for "100% arrived", none after.
    if ((100 * arrived) / cap > 100.5) break;
    end++;
  }
  return stream.slice(0, end);
}

function nodeObject(n: TraceNode): K8sObject {
  return kwokNode({
    name: n.sn,
    cpu: `${n.cpu}m`,
    memory: `${n.mem}Mi`,
    // kwokNode's 110 pods per node could bind before CPU does; the trace has no pod-count limit.
    extended: { pods: '1000' },
    labels: gpuNodeLabels(n, POOL),
  }) as K8sObject;
}

/** A trace pod as a user would write it: a GPU pod opted in with its share, a CPU-only pod plain. */
function podObject(i: number, p: TracePod): K8sObject {
  const container = { name: 'main', image: 'example.io/app:1', resources: { requests: { cpu: `${p.cpu}m`, memory: `${p.mem}Mi` } } };
  const name = `pod-${i}`;
  if (p.n === 0) {
    // No GPU share to ask for: a plain pod, but placed by our kube-scheduler like the GPU pods, so the
    // CPU and memory it takes are counted by the same scheduler cache that places the GPU pods.
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NAMESPACE },
      spec: { schedulerName: SCHEDULER_NAME, containers: [container] },
    };
  }
  if (p.spec.length > 1) throw new Error(`${p.name}: allows models ${p.spec.join('|')}; a pod can name one gpu-model`);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NAMESPACE,
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: {
        'tensor-fusion.ai/gpupool': POOL,
        'tensor-fusion.ai/is-local-gpu': 'true',
        'tensor-fusion.ai/gpu-count': String(p.n),
        'tensor-fusion.ai/tflops-request': String((p.g / 1000) * GPU_TFLOPS),
        'tensor-fusion.ai/vram-request': `${(p.g / 1000) * GPU_VRAM_MIB}Mi`,
        ...(p.spec.length === 1 ? { 'tensor-fusion.ai/gpu-model': p.spec[0] } : {}),
      },
    },
    spec: { containers: [container] },
  };
}

/** Control plane, controller and kube-scheduler up, trace nodes in one pool; returns when the pool shows every GPU. */
async function setUp(cp: ControlPlane, synth: ReturnType<typeof synthToTemp>, nodes: readonly TraceNode[], log: (l: string) => void) {
  // One replica and its kube-scheduler (no leader election), as bench:schedule runs them.
  const ctl = await installController(cp, synth.controller, synth.dir, { replicas: 1, schedulers: true });
  const admin = cp.cluster('admin', 'bench-schedule-openb');
  const pool = openbPool(
    POOL,
    nodes.map((n) => n.model),
  );
  await cp.kubectlOk([
    'apply',
    '--server-side',
    '-f',
    writeYaml(synth.dir, 'openb.yaml', [pool, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }]),
  ]);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < nodes.length) await admin.create(RESOURCES.nodes, nodeObject(nodes[next++]));
    }),
  );
  const gpus = nodes.reduce((s, n) => s + n.gpus, 0);
  for (;;) {
    const p = await admin.get<K8sObject & { status?: { totalNodes?: number; totalGPUs?: number } }>(RESOURCES.gpupools, { name: POOL });
    if (p?.status?.totalNodes === nodes.length && p.status.totalGPUs === gpus && (await ctl.replicas[0].ready())) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  // The shares are fractions of these capacities: check the controller gave every GPU the mapping's.
  const list = await admin.list<K8sObject & { status?: { capacity?: { tflops?: string; vram?: string }; phase?: string } }>(RESOURCES.gpus);
  const off = list.items.filter(
    (g) =>
      parseQuantity(g.status?.capacity?.tflops ?? '') !== GPU_TFLOPS ||
      parseQuantity(g.status?.capacity?.vram ?? '') !== GPU_VRAM_MIB * 2 ** 20 ||
      g.status?.phase !== 'Running',
  );
  if (list.items.length !== gpus || off.length > 0) {
    throw new Error(
      `GPU objects: ${list.items.length} (want ${gpus}), ${off.length} without ${GPU_TFLOPS} TFLOPS / ${GPU_VRAM_MIB}Mi Running, e.g. ${JSON.stringify(off[0]?.status)}`,
    );
  }
  log(
    `${nodes.length} KWOK nodes, ${gpus} GPU objects (${GPU_TFLOPS} TFLOPS, ${GPU_VRAM_MIB}Mi each) ready in ${Math.round(performance.now() - t0)} ms`,
  );
  return { ctl, admin };
}

/** Tries each pod once, in order; the node it was bound to, or '' when unschedulable. */
async function placeAll(admin: HttpCluster, pods: readonly TracePod[], cap: number, log: (l: string) => void) {
  const informer = new Informer<K8sObject>(admin, RESOURCES.pods, { namespace: NAMESPACE });
  const decisions = new Decisions(informer);
  informer.start();
  await informer.waitForSync();
  const outcome: string[] = [];
  const records: (Allocation | undefined)[] = [];
  const latencies: number[] = [];
  const otherFailures: Record<string, number> = {};
  const started = performance.now();
  let arrived = 0;
  let used = 0;
  try {
    for (let i = 0; i < pods.length; i++) {
      const obj = podObject(i, pods[i]);
      const name = obj.metadata.name as string;
      const d = await decisions.create(admin, obj);
      latencies.push(d.ms);
      if (d.node) {
        outcome.push(d.node);
        const text = d.pod.metadata.annotations?.[ALLOCATION_ANNOTATION];
        records.push(text ? (JSON.parse(text) as Allocation) : undefined);
        used += pods[i].n * pods[i].g;
      } else {
        // Tried once: an unschedulable pod leaves at once, before the scheduler's backoff retries it.
        if (d.reason !== 'Unschedulable') otherFailures[d.reason ?? ''] = (otherFailures[d.reason ?? ''] ?? 0) + 1;
        await admin.delete(RESOURCES.pods, { namespace: NAMESPACE, name });
        outcome.push('');
        records.push(undefined);
      }
      arrived += pods[i].n * pods[i].g;
      if ((i + 1) % 500 === 0) {
        const s = (performance.now() - started) / 1000;
        log(
          `  ${i + 1} pods in ${s.toFixed(0)} s (${((i + 1) / s).toFixed(1)}/s): arrived ${((100 * arrived) / cap).toFixed(1)}%, allocated ${((100 * used) / cap).toFixed(2)}%`,
        );
      }
    }
  } finally {
    await informer.stop();
  }
  return { outcome, records, latencies, otherFailures, seconds: (performance.now() - started) / 1000 };
}

/** Bound GPU pods whose record is not the request (node, GPU count, per-GPU share), and GPUs past capacity. */
function checkRecords(pods: readonly TracePod[], outcome: readonly string[], records: readonly (Allocation | undefined)[]) {
  let mismatches = 0;
  const perGpu = new Map<string, number>();
  pods.forEach((p, i) => {
    if (outcome[i] === '' || p.n === 0) return;
    const a = records[i];
    const tflops = (p.g / 1000) * GPU_TFLOPS;
    const vram = (p.g / 1000) * GPU_VRAM_MIB * 2 ** 20;
    if (
      !a ||
      a.node !== outcome[i] ||
      a.gpuIds.length !== p.n ||
      new Set(a.gpuIds).size !== p.n ||
      a.tflopsRequest !== tflops ||
      a.vramRequest !== vram
    ) {
      mismatches++;
      return;
    }
    for (const id of a.gpuIds) perGpu.set(id, (perGpu.get(id) ?? 0) + a.tflopsRequest);
  });
  return { mismatches, overcommitted: [...perGpu.values()].filter((t) => t > GPU_TFLOPS).length };
}

/** Runs the replay through a fresh control plane; always stops what it started. */
export async function scheduleOpenb(opts: OpenbOptions): Promise<OpenbFigures> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const nodes = readNodes(opts.dir).filter((_n, i) => i % (opts.nodesEvery ?? 1) === 0);
  const all = readPods(opts.dir, 'default');
  const cap = capacity(nodes);
  const stream = arrivalStream(all, opts.seed, cap);
  const full = prefixTo100(stream, cap);
  const pods = full.slice(0, opts.limit ?? full.length);
  // Stopped before 100% arrived: only the allocated % so far compares.
  const early = pods.length < full.length;
  const policy = DEFAULT_PLACEMENT_MODE;
  // The allocator in process on the whole stream: exactly bench:trace's run for this seed and policy.
  const offline = allocatorRun(nodes, stream, traceMix(all), policy, opts.seed);
  // As the extender places: learning the mix as it goes, ties broken in its order (the allocator's seed 0).
  const learned = allocatorRun(nodes, stream, undefined, policy, 0);
  log(
    `openb: ${nodes.length} nodes, ${cap / 1000} GPUs; seed ${opts.seed}; policy ${policy}; ${pods.length} of ${stream.length} pods (to 100% arrived${opts.limit ? `, limit ${opts.limit}` : ''})`,
  );
  log(
    `allocator in process (bench:trace): unallocated ${offline.unallocated100.toFixed(2)}% at 100% arrived; learning the mix as it goes, as the extender (seed 0): ${learned.unallocated100.toFixed(2)}%`,
  );

  const { synth, cp } = await startBenchControlPlane({ controllerManager: opts.dra });
  let ctl: Awaited<ReturnType<typeof setUp>>['ctl'] | undefined;
  let sides: Awaited<ReturnType<typeof setUpDra>> = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await stopDra(sides);
      await ctl?.stop();
      await cp.stop();
    })());
  const onSigint = () => void stop().then(() => process.exit(130));
  process.once('SIGINT', onSigint);
  try {
    log(`control plane started in ${cp.startMs} ms`);
    // --dra-only: no controller and no extender side (its set-up alone takes minutes), for quick checks.
    const ext = opts.draOnly ? [] : pods;
    const up = opts.draOnly ? { ctl: undefined, admin: cp.cluster('admin', 'bench-schedule-openb') } : await setUp(cp, synth, nodes, log);
    ctl = up.ctl;
    const levers = opts.draLevers ?? DRA_LEVERS;
    if (opts.dra) sides = await setUpDra(cp, up.admin, synth.dir, nodes, pods, levers, log);
    // The sides place on nodes of their own, each one pod at a time, one side after another: on 2
    // cores, run at once, they slowed each other (the fgd side placed 5 pods a second beside the
    // extender side, 17 alone).
    const run = await placeAll(up.admin, ext, cap, log);
    const dra: DraFigures[] = [];
    for (const s of sides) dra.push(await placeDra(up.admin, s, pods, log));
    const throughput = opts.dra ? await draThroughput(cp, up.admin, synth.dir, opts.draThroughputPods ?? 1000) : undefined;
    const { mismatches, overcommitted } = checkRecords(ext, run.outcome, run.records);
    // trace-replay's formula over the recorded outcomes (records checked to hold exactly the requests).
    const ours = replay(ext, cap, (i) => run.outcome[i]);
    const usedBy = (outcome: readonly string[]) => ext.reduce((s, p, i) => s + (outcome[i] !== '' ? p.n * p.g : 0), 0);
    const lat = [...run.latencies].sort((a, b) => a - b);
    return {
      seed: opts.seed,
      policy,
      pods: ext.length,
      bound: run.outcome.filter((n) => n !== '').length,
      openbUnallocated100: early || opts.draOnly ? NaN : ours.unallocated100,
      offlineUnallocated100: offline.unallocated100,
      offlineLearnedUnallocated100: learned.unallocated100,
      openbAllocatedEnd: (100 * usedBy(run.outcome)) / cap,
      offlineAllocatedEnd: (100 * usedBy(offline.outcome)) / cap,
      arrivedEnd: (100 * ext.reduce((s, p) => s + p.n * p.g, 0)) / cap,
      sameNode: ext.filter((_p, i) => run.outcome[i] === learned.outcome[i]).length,
      recordMismatches: mismatches,
      overcommittedGpus: overcommitted,
      otherFailures: run.otherFailures,
      placeSeconds: run.seconds,
      p50Ms: percentile(lat, 50),
      p99Ms: percentile(lat, 99),
      ...(opts.dra
        ? {
            dra: dra.map((d) => (early ? { ...d, unallocated100: NaN } : d)),
            ...(levers.includes('fgd') ? { draInProcessUnallocated100: inProcessAsFgd(nodes, stream, policy) } : {}),
            ...throughput,
          }
        : {}),
    };
  } finally {
    process.removeListener('SIGINT', onSigint);
    await stop();
  }
}

/** The `--openb` run of bench:schedule: figures, then one JSON line. */
export async function printOpenb(opts: OpenbOptions): Promise<void> {
  const f = await scheduleOpenb(opts);
  const r = (x: number, d = 2) => (Number.isFinite(x) ? Number(x.toFixed(d)) : null);
  console.log(
    `${f.pods} pods tried one at a time, ${f.bound} bound, in ${f.placeSeconds.toFixed(0)} s (${(f.pods / f.placeSeconds).toFixed(1)}/s; create-to-decision p50 ${f.p50Ms.toFixed(0)} ms, p99 ${f.p99Ms.toFixed(0)} ms)`,
  );
  console.log(
    `arrived ${f.arrivedEnd.toFixed(2)}% of GPU capacity; allocated: scheduler + extender ${f.openbAllocatedEnd.toFixed(2)}%, allocator in process ${f.offlineAllocatedEnd.toFixed(2)}%; same node as the allocator in process learning the mix for ${f.sameNode}/${f.pods} pods`,
  );
  console.log(
    `unallocated GPU % at 100% arrived, seed ${f.seed}, ${f.policy}: scheduler + extender ${r(f.openbUnallocated100) ?? '- (stopped early)'}, allocator in process ${r(f.offlineUnallocated100) ?? '-'}` +
      (Number.isFinite(f.openbUnallocated100 - f.offlineUnallocated100)
        ? `, difference ${(f.openbUnallocated100 - f.offlineUnallocated100).toFixed(2)} points`
        : '') +
      `; allocator in process learning the mix ${r(f.offlineLearnedUnallocated100) ?? '-'}`,
  );
  console.log(
    `allocation records not matching the request: ${f.recordMismatches}; GPUs past capacity: ${f.overcommittedGpus}; other scheduling failures: ${JSON.stringify(f.otherFailures)}`,
  );
  const dra = f.dra ?? [];
  for (const d of dra) {
    console.log(
      `DRA ${d.lever} (${d.label}): ${d.bound}/${d.pods} bound in ${d.placeSeconds.toFixed(0)} s (p50 ${d.p50Ms.toFixed(0)} ms, p99 ${d.p99Ms.toFixed(0)} ms); allocated ${d.allocatedEnd.toFixed(2)}%; unallocated at 100% arrived ${r(d.unallocated100) ?? '- (stopped early)'}; claims not matching the request ${d.recordMismatches}, devices past capacity ${d.overcommittedDevices}, slices republished ${d.republished}, devices not first fit in the published order ${d.notFirstFit}, bound off our extender's node ${d.notExtenderNode}, other failures ${JSON.stringify(d.otherFailures)}`,
    );
  }
  if (f.draInProcessUnallocated100 !== undefined)
    console.log(
      `DRA fgd side's extender in process (its node names, its seed 0, learning the mix): unallocated ${r(f.draInProcessUnallocated100)}% at 100% arrived`,
    );
  // The DRA path's figure: the product's lever (fgd) when it ran, else the best (by allocated % when stopped early).
  const best = dra.find((d) => d.lever === 'fgd') ?? [...dra].sort((a, b) => b.allocatedEnd - a.allocatedEnd)[0];
  if (best && f.draBoundPerSec !== undefined) {
    console.log(
      `DRA throughput (kube-scheduler's default profile, ${opts.draThroughputPods ?? 1000} pods each, 32 in flight): DRA claims ${f.draBoundPerSec} pods bound/s, nvidia.com/gpu ${f.plainBoundPerSec}`,
    );
  }
  const draFields = best
    ? {
        draUnallocatedPct: r(best.unallocated100),
        extenderUnallocatedPct: r(f.openbUnallocated100),
        draBoundPerSec: f.draBoundPerSec,
        plainBoundPerSec: f.plainBoundPerSec,
        draLever: best.lever,
        draInProcessUnallocatedPct: f.draInProcessUnallocated100 === undefined ? undefined : r(f.draInProcessUnallocated100),
        ...Object.fromEntries(
          dra.map((d) => [
            `dra_${d.lever}`,
            {
              unallocatedPct: r(d.unallocated100),
              allocatedEnd: r(d.allocatedEnd),
              bound: d.bound,
              recordMismatches: d.recordMismatches,
              overcommittedDevices: d.overcommittedDevices,
              notFirstFit: d.notFirstFit,
              notExtenderNode: d.notExtenderNode,
              placeSeconds: r(d.placeSeconds, 0),
              p50Ms: r(d.p50Ms, 0),
            },
          ]),
        ),
      }
    : {};
  console.log(
    JSON.stringify({
      ...draFields,
      openbUnallocated100: r(f.openbUnallocated100),
      offlineUnallocated100: r(f.offlineUnallocated100),
      offlineLearnedUnallocated100: r(f.offlineLearnedUnallocated100),
      difference: r(f.openbUnallocated100 - f.offlineUnallocated100),
      seed: f.seed,
      policy: f.policy,
      pods: f.pods,
      bound: f.bound,
      openbAllocatedEnd: r(f.openbAllocatedEnd),
      offlineAllocatedEnd: r(f.offlineAllocatedEnd),
      sameNode: f.sameNode,
      recordMismatches: f.recordMismatches,
      overcommittedGpus: f.overcommittedGpus,
      placeSeconds: r(f.placeSeconds, 0),
      p50Ms: r(f.p50Ms, 0),
      p99Ms: r(f.p99Ms, 0),
    }),
  );
}

/**
 * Replay of Alibaba's GPU-sharing trace (cluster-trace-gpu-v2023, "openb") with the FGD paper's
 * protocol: shuffled pods, inflated with re-samples to 1.3x GPU capacity, each pod tried once, no
 * departures, `gpu_milli` as both the compute and the memory share of one GPU, CPU and memory as hard
 * limits. See ../shared/research/gpu-trace.md section 3. The trace is read from the directory given.
 */
import { readFileSync } from 'fs';
import { join } from 'path';
import { AllocationRequest, Allocator, TypicalRequest } from '../lib/allocator';
import { binsBound, packingBound } from '../lib/allocator/packing-bound';
import { PlacementMode } from '../lib/model/rules';
import { prng } from './stats';

export interface TraceNode {
  readonly sn: string;
  readonly cpu: number;
  readonly mem: number;
  readonly gpus: number;
  readonly model: string;
}

export interface TracePod {
  readonly name: string;
  readonly cpu: number;
  readonly mem: number;
  /** GPUs requested. */
  readonly n: number;
  /** Milli-GPU per GPU. */
  readonly g: number;
  /** Allowed models; empty means any. */
  readonly spec: readonly string[];
}

/** The trace's files are plain CSV with no quoting, so a split is enough. */
function readCsv(file: string): Record<string, string>[] {
  const [header, ...lines] = readFileSync(file, 'utf8').trim().split(/\r?\n/);
  const cols = header.split(',');
  return lines.map((line) => {
    const cells = line.split(',');
    return Object.fromEntries(cols.map((c, i) => [c, cells[i] ?? '']));
  });
}

export function readNodes(dir: string): TraceNode[] {
  return readCsv(join(dir, 'openb_node_list_gpu_node.csv')).map((r) => ({
    sn: r.sn,
    cpu: Number(r.cpu_milli),
    mem: Number(r.memory_mib),
    gpus: Number(r.gpu),
    model: r.model,
  }));
}

export function readPods(dir: string, variant: string): TracePod[] {
  return readCsv(join(dir, `openb_pod_list_${variant}.csv`)).map((r) => {
    const n = Number(r.num_gpu);
    return {
      name: r.name,
      cpu: Number(r.cpu_milli),
      mem: Number(r.memory_mib),
      n,
      g: n > 0 ? Math.min(1000, Math.max(0, Number(r.gpu_milli))) : 0,
      spec: [...new Set((r.gpu_spec ?? '').split('|').filter((s) => s.length > 0 && s !== 'nan'))].sort(),
    };
  });
}

function randInt(rng: () => number, n: number): number {
  return Math.floor(rng() * n);
}

/** The arrival stream: the trace shuffled, then re-samples appended (or pods removed) to `tune` x capacity. */
export function arrivalStream(pods: readonly TracePod[], seed: number, capacityMilli: number, tune = 1.3): TracePod[] {
  const rng = prng(seed);
  const sorted = [...pods].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const order = [...sorted];
  for (let i = order.length - 1; i > 0; i--) {
    const j = randInt(rng, i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  const target = tune * capacityMilli;
  let total = order.reduce((s, p) => s + p.n * p.g, 0);
  if (total <= target) {
    for (;;) {
      const p = sorted[randInt(rng, sorted.length)];
      if (total + p.n * p.g > target) break;
      order.push(p);
      total += p.n * p.g;
    }
  } else {
    while (total > target) {
      const [p] = order.splice(randInt(rng, order.length), 1);
      total -= p.n * p.g;
    }
  }
  return order;
}

/**
 * The trace's typical requests, as in FGD: the most frequent (cpu, gpu milli, GPU count, models)
 * tuples of the original trace covering 95% of pods.
 */
export function traceMix(pods: readonly TracePod[]): TypicalRequest[] {
  const counts = new Map<string, { p: TracePod; n: number }>();
  for (const p of pods) {
    const key = `${p.cpu}|${p.g}|${p.n}|${p.spec.join(',')}`;
    const e = counts.get(key);
    if (e) e.n++;
    else counts.set(key, { p, n: 1 });
  }
  const sorted = [...counts.values()].sort((a, b) => b.n - a.n || b.p.cpu - a.p.cpu || b.p.g - a.p.g);
  const mix: TypicalRequest[] = [];
  let covered = 0;
  for (const { p, n } of sorted) {
    if (covered >= 0.95 * pods.length) break;
    mix.push({ gpuCount: p.n, tflops: p.g / 1000, vram: p.g, cpu: p.cpu, models: p.spec, weight: n });
    covered += n;
  }
  return mix;
}

export interface RunResult {
  /** Unallocated GPU % when arrivals reach 100% and 130% of capacity. */
  readonly unallocated100: number;
  readonly unallocated130: number;
  readonly attempts: number;
  readonly seconds: number;
  /** Placement outcome per pod (node, or '' when it failed), to compare two runs. */
  readonly outcome: readonly string[];
}

/** Python's round(): halves go to the even neighbour, as the artifact's post-processing does. */
function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** The events whose rounded arrival % is `x` (or x +- 1 when there are none), as the artifact buckets them. */
function eventsAt(arrived: Float64Array, x: number): number[] {
  for (const targets of [[x], [x - 1, x + 1]]) {
    const events: number[] = [];
    for (let i = 0; i < arrived.length; i++) if (targets.includes(roundHalfEven(arrived[i]))) events.push(i);
    if (events.length > 0) return events;
  }
  return [];
}

/** Mean allocation % over {@link eventsAt}, each rounded to 2 decimals as the artifact does. */
function allocatedAt(arrived: Float64Array, allocated: Float64Array, x: number): number {
  const events = eventsAt(arrived, x);
  return events.reduce((s, i) => s + Math.round(allocated[i] * 100) / 100, 0) / events.length;
}

/** Arrived GPU % of capacity after each pod of the stream. */
function arrivedPercent(stream: readonly TracePod[], capacityMilli: number): Float64Array {
  const arrived = new Float64Array(stream.length);
  let arr = 0;
  stream.forEach((p, i) => {
    arr += p.n * p.g;
    arrived[i] = (100 * arr) / capacityMilli;
  });
  return arrived;
}

/**
 * The least unallocated GPU % at `x`% arrived that any placement of the stream could reach, online
 * or offline (lib/allocator/packing-bound.ts): after pod i, no placement has more allocated than
 * arrived nor more than the bound for the pods up to the bucket's last event, which holds every
 * earlier prefix. A bound, not a placement found: the best packing may be above it.
 */
export function limitRun(nodes: readonly TraceNode[], stream: readonly TracePod[], x = 100): number {
  const cap = capacity(nodes);
  const arrived = arrivedPercent(stream, cap);
  const events = eventsAt(arrived, x);
  const prefix = stream.slice(0, events[events.length - 1] + 1);
  const bound =
    (100 *
      packingBound(
        nodes.map((n) => ({ cpu: n.cpu, memory: n.mem, gpus: n.gpus, model: n.model })),
        prefix.map((p) => ({ gpuCount: p.n, share: p.g, cpu: p.cpu, memory: p.mem, models: p.spec })),
      )) /
    cap;
  const allocated = Float64Array.from(arrived, (a) => Math.min(a, bound));
  return 100 - allocatedAt(arrived, allocated, x);
}

/**
 * What a placement must leave free if it has placed every single-GPU share arrived by the last event
 * of the `x`% bucket, as % of capacity: the GPUs they need (`floor`: binsBound, no packing can need
 * fewer; `bestFit`: an offline best-fit decreasing packing of all of them, one found) less their volume.
 */
export function shareFloorRun(nodes: readonly TraceNode[], stream: readonly TracePod[], x = 100): { floor: number; bestFit: number } {
  const cap = capacity(nodes);
  const events = eventsAt(arrivedPercent(stream, cap), x);
  const sizes = new Map<number, number>();
  let volume = 0;
  for (const p of stream.slice(0, events[events.length - 1] + 1)) {
    if (p.n !== 1 || p.g <= 0 || p.g >= 1000) continue;
    sizes.set(p.g, (sizes.get(p.g) ?? 0) + 1);
    volume += p.g;
  }
  const pct = (bins: number) => (100 * (bins * 1000 - volume)) / cap;
  return { floor: pct(binsBound(sizes)), bestFit: pct(bestFitDecreasing(sizes)) };
}

/** Bins of 1000 that best-fit decreasing fills with the items (size to count); bins kept as counts per free room. */
function bestFitDecreasing(sizes: ReadonlyMap<number, number>): number {
  const byRoom = new Int32Array(1001);
  let bins = 0;
  for (const size of [...sizes.keys()].sort((a, b) => b - a)) {
    for (let n = sizes.get(size)!; n > 0; n--) {
      let room = size;
      while (room < 1000 && byRoom[room] === 0) room++;
      if (room === 1000) bins++;
      else byRoom[room]--;
      byRoom[room - size]++;
    }
  }
  return bins;
}

/** Runs `place` over the stream; times only the placement calls. */
export function replay(stream: readonly TracePod[], capacityMilli: number, place: (i: number) => string): RunResult {
  const outcome: string[] = new Array(stream.length);
  let ns = 0n;
  for (let i = 0; i < stream.length; i++) {
    const t0 = process.hrtime.bigint();
    outcome[i] = place(i);
    ns += process.hrtime.bigint() - t0;
  }
  const r = replayTaken(stream, capacityMilli, (i) => (outcome[i] !== '' ? stream[i].n * stream[i].g : 0));
  return { ...r, attempts: stream.length, seconds: Number(ns) / 1e9, outcome };
}

/**
 * Unallocated GPU % at 100% and 130% arrived when pod i took `taken(i)` milli-GPU (0 when it
 * failed): the figures of {@link replay} from amounts recorded elsewhere (e.g. DRA claims).
 */
export function replayTaken(
  stream: readonly TracePod[],
  capacityMilli: number,
  taken: (i: number) => number,
): Pick<RunResult, 'unallocated100' | 'unallocated130'> {
  const arrived = arrivedPercent(stream, capacityMilli);
  const allocated = new Float64Array(stream.length);
  let used = 0;
  for (let i = 0; i < stream.length; i++) {
    used += taken(i);
    allocated[i] = (100 * used) / capacityMilli;
  }
  return { unallocated100: 100 - allocatedAt(arrived, allocated, 100), unallocated130: 100 - allocatedAt(arrived, allocated, 130) };
}

/** Our allocator over the trace cluster: each GPU is 1 TFLOPS and 1000 VRAM units, so milli-GPU maps exactly. */
export function allocatorRun(
  nodes: readonly TraceNode[],
  stream: readonly TracePod[],
  /** The pool's workload mix; undefined: learned from the requests as they come, as the extender does. */
  mix: readonly TypicalRequest[] | undefined,
  mode: PlacementMode,
  seed: number,
  indexed = true,
): RunResult {
  const a = new Allocator({
    seed,
    indexed,
    pools: { openb: { placementMode: mode, tflopsOversellRatio: 100, ...(mix ? { workloadMix: mix } : {}) } },
  });
  for (const n of nodes) {
    a.addNode({
      name: n.sn,
      pool: 'openb',
      cpu: n.cpu,
      memory: n.mem,
      gpus: Array.from({ length: n.gpus }, (_, i) => ({ id: `${n.sn}/${i}`, index: i, model: n.model, tflops: 1, vram: 1000 })),
    });
  }
  const requests: AllocationRequest[] = stream.map((p, i) => ({
    id: `pod-${i}`,
    pool: 'openb',
    tflopsRequest: p.g / 1000,
    vramRequest: p.g,
    gpuCount: p.n,
    gpuModel: p.spec.length > 0 ? p.spec : undefined,
    cpu: p.cpu,
    memory: p.mem,
    qos: 'medium',
  }));
  return replay(stream, capacity(nodes), (i) => {
    const r = a.allocate(requests[i]);
    return r.ok ? r.allocation.node : '';
  });
}

/**
 * Random-fit baseline (the paper's Random): a uniformly random feasible node, a random fitting GPU
 * for a shared pod, the lowest-index free GPUs for whole-GPU pods. Scans every node by design.
 */
export function randomRun(nodes: readonly TraceNode[], stream: readonly TracePod[], seed: number): RunResult {
  const rng = prng(seed ^ 0x5eed);
  const free = nodes.map((n) => new Int32Array(n.gpus).fill(1000));
  const cpu = nodes.map((n) => n.cpu);
  const mem = nodes.map((n) => n.mem);
  const feasible: number[] = [];
  const fitting: number[] = [];
  return replay(stream, capacity(nodes), (i) => {
    const p = stream[i];
    feasible.length = 0;
    for (let k = 0; k < nodes.length; k++) {
      if (cpu[k] < p.cpu || mem[k] < p.mem) continue;
      if (p.n > 0) {
        if (p.spec.length > 0 && !p.spec.includes(nodes[k].model)) continue;
        let fit = 0;
        for (const f of free[k]) if (f >= p.g) fit++;
        if (fit < p.n) continue;
      }
      feasible.push(k);
    }
    if (feasible.length === 0) return '';
    const k = feasible[randInt(rng, feasible.length)];
    cpu[k] -= p.cpu;
    mem[k] -= p.mem;
    const gpus = free[k];
    if (p.n === 1 && p.g < 1000) {
      fitting.length = 0;
      gpus.forEach((f, j) => f >= p.g && fitting.push(j));
      gpus[fitting[randInt(rng, fitting.length)]] -= p.g;
    } else {
      for (let j = 0, left = p.n; j < gpus.length && left > 0; j++) {
        if (gpus[j] >= p.g) {
          gpus[j] -= p.g;
          left--;
        }
      }
    }
    return nodes[k].sn;
  });
}

export function capacity(nodes: readonly TraceNode[]): number {
  return nodes.reduce((s, n) => s + 1000 * n.gpus, 0);
}

/** The cluster and pods repeated `times` times under new names: same shapes, same mix. */
export function scaleUp(nodes: readonly TraceNode[], pods: readonly TracePod[], times: number): [TraceNode[], TracePod[]] {
  const copies = Array.from({ length: times }, (_, c) => c);
  return [
    copies.flatMap((c) => nodes.map((n) => ({ ...n, sn: `${n.sn}-x${c}` }))),
    copies.flatMap((c) => pods.map((p) => ({ ...p, name: `${p.name}-x${c}` }))),
  ];
}

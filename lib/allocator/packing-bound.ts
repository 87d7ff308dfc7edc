/**
 * An upper bound on the GPU share that any placement, online or offline, can give a set of requests
 * on a set of nodes: the optimum of a linear relaxation (simplex.ts). Requests are grouped into classes of
 * equal shape and nodes into groups of equal shape; a class may send any fraction of its requests to
 * any group that could host one, within the group's totals of a few valid inequalities per resource.
 * Plain totals (GPU share, CPU, memory) would let a GPU's unusable remainder count as room; dual
 * feasible functions (Fekete and Schepers) close most of that gap: on one GPU the shares of the
 * requests it holds add up to at most 1, so do their images under any such function, which rounds
 * large items up and drops small ones. The same holds per node for CPU, memory and the GPUs a request
 * covers.
 */
import { GpuModelFilter } from '../model/gpu-catalog';
import { maximise } from './simplex';

/** A node as the bound sees it: its GPUs are all of one model, each of share 1000. */
export interface BoundNode {
  readonly cpu: number;
  readonly memory: number;
  readonly gpus: number;
  readonly model: string;
}

/** A request: `gpuCount` GPUs of one node, `share` milli-GPU (1..1000) on each. */
export interface BoundRequest {
  readonly gpuCount: number;
  readonly share: number;
  readonly cpu: number;
  readonly memory: number;
  /** Allowed models; empty or absent means any. */
  readonly models?: readonly string[];
}

/** Item sizes are fractions of one bin (GPU, node's CPU, memory or GPUs), so every function maps [0, 1] to [0, 1]. */
type Dff = (x: number) => number;

/** Fekete-Schepers u^(k): x when (k+1)x is whole, else floor((k+1)x)/k. */
function fs(k: number): Dff {
  return (x) => {
    const y = (k + 1) * x;
    return Math.abs(y - Math.round(y)) < 1e-12 ? x : Math.floor(y) / k;
  };
}

/** 1 above 1-e, x between e and 1-e, 0 below e (e at most 1/2). */
function cut(e: number): Dff {
  return (x) => (x > 1 - e ? 1 : x < e ? 0 : x);
}

const identity: Dff = (x) => x;
const GPU_DFFS: Dff[] = [identity, ...[1, 2, 3, 4, 5, 6].map(fs), ...[0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45].map(cut)];
const CPU_DFFS: Dff[] = [identity, ...[1, 2].map(fs)];
const MEM_DFFS: Dff[] = [identity];
/** On a node, a request covers k·share/1000 of its GPUs (at least): they add up to at most the node's GPUs. */
const SPAN_DFFS: Dff[] = [...[1, 2].map(fs)];
const PER_GROUP = GPU_DFFS.length + CPU_DFFS.length + MEM_DFFS.length + SPAN_DFFS.length;

/** The functions {@link binsBound} tries: u^k for k up to 30 and cut-offs every 0.001, each alone and followed by u^k. */
let binDffs: Dff[] | undefined;

/**
 * The fewest bins of size 1000 that can hold items of the given sizes (milli, size to count), by
 * the best of many dual feasible functions: a bound, not a packing. For the shares of one GPU each.
 */
export function binsBound(sizes: ReadonlyMap<number, number>): number {
  if (!binDffs) {
    const base: Dff[] = [identity];
    for (let k = 1; k <= 30; k++) base.push(fs(k));
    for (let e = 1; e <= 500; e++) base.push(cut(e / 1000));
    // A composition of dual feasible functions is one; identity first keeps each function alone.
    const then = base.slice(0, 31);
    const compose =
      (f: Dff, g: Dff): Dff =>
      (x) =>
        g(f(x));
    binDffs = base.flatMap((f) => then.map((g) => compose(f, g)));
  }
  let best = 0;
  for (const f of binDffs) {
    let sum = 0;
    for (const [size, count] of sizes) sum += f(size / 1000) * count;
    best = Math.max(best, sum);
  }
  return Math.ceil(best - 1e-9);
}

interface Group {
  readonly node: BoundNode;
  count: number;
}

interface Class {
  readonly r: BoundRequest;
  m: number;
}

/** One (class, group) pair a class may use: its resource uses, over the group's PER_GROUP rows. */
interface Arc {
  readonly group: number;
  readonly use: Float64Array;
}

/**
 * Upper bound, in milli-GPU, on the share `requests` can be given on `nodes` by any placement that
 * keeps each request on one node, within every GPU's share, the node's CPU and memory. Requests of
 * no GPU are left out (they add nothing to the share).
 */
export function packingBound(nodes: readonly BoundNode[], requests: readonly BoundRequest[]): number {
  const groups = new Map<string, Group>();
  for (const n of nodes) {
    const key = `${n.cpu}|${n.memory}|${n.gpus}|${n.model}`;
    const g = groups.get(key);
    if (g) g.count++;
    else groups.set(key, { node: n, count: 1 });
  }
  const classes = new Map<string, Class>();
  for (const r of requests) {
    if (r.gpuCount === 0 || r.share <= 0) continue;
    const key = `${r.gpuCount}|${r.share}|${r.cpu}|${r.memory}|${[...new Set(r.models ?? [])].sort().join(',')}`;
    const c = classes.get(key);
    if (c) c.m++;
    else classes.set(key, { r, m: 1 });
  }
  const gs = [...groups.values()];
  const cs = [...classes.values()];
  const cap = new Float64Array(gs.length * PER_GROUP);
  gs.forEach((g, t) => {
    for (let i = 0; i < PER_GROUP; i++) cap[t * PER_GROUP + i] = i < GPU_DFFS.length ? g.count * g.node.gpus : g.count;
  });
  const arcs = cs.map(({ r }) => {
    const filter = r.models && r.models.length > 0 ? new GpuModelFilter(r.models) : null;
    const out: Arc[] = [];
    gs.forEach(({ node }, group) => {
      if (node.gpus < r.gpuCount || node.cpu < r.cpu || node.memory < r.memory || (filter && !filter.has(node.model))) return;
      const x = r.share / 1000;
      const fractions = [
        ...GPU_DFFS.map((f) => r.gpuCount * f(x)),
        ...CPU_DFFS.map((f) => (node.cpu > 0 ? f(r.cpu / node.cpu) : 0)),
        ...MEM_DFFS.map((f) => (node.memory > 0 ? f(r.memory / node.memory) : 0)),
        ...SPAN_DFFS.map((f) => f((r.gpuCount * x) / node.gpus)),
      ];
      out.push({ group, use: Float64Array.from(fractions) });
    });
    return out;
  });

  // One column per (class, group) pair; a row per class (at most its count) and per group resource.
  const columns = arcs.flatMap((list, ci) => list.map((arc) => ({ ci, arc })));
  const rows: Float64Array[] = [];
  const rhs: number[] = [];
  cs.forEach((c, ci) => {
    const row = new Float64Array(columns.length);
    columns.forEach((col, j) => col.ci === ci && (row[j] = 1));
    rows.push(row);
    rhs.push(c.m);
  });
  for (let r = 0; r < cap.length; r++) {
    const row = new Float64Array(columns.length);
    let used = false;
    columns.forEach(({ arc }, j) => {
      if (arc.group * PER_GROUP <= r && r < (arc.group + 1) * PER_GROUP && arc.use[r - arc.group * PER_GROUP] > 0) {
        row[j] = arc.use[r - arc.group * PER_GROUP];
        used = true;
      }
    });
    if (!used) continue;
    rows.push(row);
    rhs.push(cap[r]);
  }
  return columns.length === 0
    ? 0
    : maximise(
        rows,
        rhs,
        columns.map(({ ci }) => cs[ci].r.gpuCount * cs[ci].r.share),
      );
}

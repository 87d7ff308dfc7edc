/**
 * Explains a failed placement. Each node is counted once under CPU or memory; otherwise each GPU of
 * an allowed model is counted under the first resource it lacks, and a node with too few fitting
 * GPUs is counted as short. The counts are sums of per-node parts, so the pool keeps them up to date
 * for a request shape the way it keeps its score tree: only changed nodes are recounted.
 */
import { Need, NodeState } from './state';
import { PlacementReason } from './types';

const CPU = 0;
const MEM = 1;
const ALLOWED = 2;
const VRAM = 3;
const TFLOPS = 4;
const OVERSOLD = 5;
/** Fitting GPUs + 1 on a node short of GPUs; 0 when the node is not short. */
const SHORT = 6;
/** Allowed GPUs on which the request's TFLOPS limit alone is above the oversell bound. */
const LIMIT_ALONE = 7;
const FIELDS = 8;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Per-node reason counts for one request shape, and their sums. */
export class Why {
  private readonly parts: Int32Array;
  private readonly totals = new Float64Array(FIELDS);
  /** Short nodes by fitting GPU count, to report the most on one node. */
  private readonly shortByFitting: Int32Array;
  /** Largest capacity (milli-TFLOPS) of an allowed GPU, per slot: the bound a limit alone is held to. */
  private readonly largestCap: Float64Array;
  private nodes = 0;
  private gpus = 0;

  constructor(
    slots: number,
    private readonly need: Need,
    private readonly oversell: number,
  ) {
    this.parts = new Int32Array(slots * FIELDS);
    this.shortByFitting = new Int32Array(need.k + 1);
    this.largestCap = new Float64Array(slots);
  }

  /** Recounts one slot (`undefined` when the slot is empty). */
  set(slot: number, node: NodeState | undefined): void {
    const at = slot * FIELDS;
    this.apply(at, -1);
    this.parts.fill(0, at, at + FIELDS);
    this.largestCap[slot] = 0;
    if (node) this.count(node, at);
    this.apply(at, 1);
  }

  private apply(at: number, sign: number): void {
    const p = this.parts;
    for (let f = 0; f < FIELDS; f++) if (f !== SHORT) this.totals[f] += sign * p[at + f];
    if (p[at + SHORT] > 0) {
      this.totals[SHORT] += sign;
      this.shortByFitting[p[at + SHORT] - 1] += sign;
    }
  }

  private count(node: NodeState, at: number): void {
    const p = this.parts;
    const need = this.need;
    if (node.cpuUsed + need.cpu > node.cpuCap) p[at + CPU] = 1;
    else if (node.memUsed + need.mem > node.memCap) p[at + MEM] = 1;
    if (p[at + CPU] + p[at + MEM] > 0) return;
    let fitting = 0;
    for (const g of node.gpus) {
      if (need.models !== null && !need.models.has(g.model)) continue;
      if (need.indices && !need.indices.has(g.index)) continue;
      p[at + ALLOWED]++;
      if (need.tl * 100 > g.capT * this.oversell) p[at + LIMIT_ALONE]++;
      if (g.capT > this.largestCap[at / FIELDS]) this.largestCap[at / FIELDS] = g.capT;
      if (g.usedV + need.v > g.capV) p[at + VRAM]++;
      else if (g.usedT + need.t > g.capT) p[at + TFLOPS]++;
      else if ((g.limT + need.tl) * 100 > g.capT * this.oversell) p[at + OVERSOLD]++;
      else fitting++;
    }
    // One GPU that lacks something is explained per GPU above; a node short of GPUs is explained here.
    const allowed = p[at + ALLOWED];
    if (need.k > 0 && fitting < need.k && (need.k > 1 || allowed === 0) && (allowed > 0 || need.models === null)) {
      p[at + SHORT] = fitting + 1;
    }
  }

  /** Sets the pool totals shown in messages. */
  setPoolSize(nodes: number, gpus: number): void {
    this.nodes = nodes;
    this.gpus = gpus;
  }

  reasons(pool: string): PlacementReason[] {
    const need = this.need;
    const t = this.totals;
    if (this.nodes === 0) return [{ kind: 'NoNodesInPool', pool, message: `pool ${JSON.stringify(pool)} has no nodes` }];
    const reasons: PlacementReason[] = [];
    if (need.k > 0 && need.models !== null && t[ALLOWED] === 0 && t[CPU] + t[MEM] < this.nodes) {
      const models = [...need.models].sort();
      reasons.push({
        kind: 'NoGpuOfModel',
        models,
        gpus: this.gpus,
        message: `none of the pool's ${plural(this.gpus, 'GPU')} is a ${models.join(' or ')}`,
      });
    }
    if (t[CPU] > 0) reasons.push({ kind: 'InsufficientCpu', nodes: t[CPU], message: `${plural(t[CPU], 'node')}: not enough CPU` });
    if (t[MEM] > 0) reasons.push({ kind: 'InsufficientMemory', nodes: t[MEM], message: `${plural(t[MEM], 'node')}: not enough memory` });
    if (need.k === 0) return reasons;
    // A limit above the oversell bound of every allowed GPU never fits, whatever is freed: say so first.
    if (t[ALLOWED] > 0 && t[LIMIT_ALONE] === t[ALLOWED]) {
      const largest = this.largestCap.reduce((a, b) => Math.max(a, b), 0);
      const max = (largest * this.oversell) / 100 / 1000;
      const limit = need.tl / 1000;
      reasons.unshift({
        kind: 'TflopsLimitAboveOversell',
        limit,
        max,
        ratio: this.oversell,
        message: `tflops-limit ${limit} is above ${max} TFLOPS, the most one GPU may be oversold to (${largest / 1000} TFLOPS x ${this.oversell}%)`,
      });
    }
    if (t[VRAM] > 0) reasons.push({ kind: 'InsufficientVram', gpus: t[VRAM], message: `${plural(t[VRAM], 'GPU')}: not enough free VRAM` });
    if (t[TFLOPS] > 0)
      reasons.push({ kind: 'InsufficientTflops', gpus: t[TFLOPS], message: `${plural(t[TFLOPS], 'GPU')}: not enough free TFLOPS` });
    if (t[OVERSOLD] > 0) {
      reasons.push({
        kind: 'TflopsOversellExceeded',
        gpus: t[OVERSOLD],
        ratio: this.oversell,
        message: `${plural(t[OVERSOLD], 'GPU')}: TFLOPS limits would exceed ${this.oversell}% of capacity`,
      });
    }
    if (t[SHORT] > 0) {
      let most = need.k - 1;
      while (this.shortByFitting[most] === 0) most--;
      reasons.push({
        kind: 'NotEnoughGpusOnOneNode',
        nodes: t[SHORT],
        needed: need.k,
        mostOnOneNode: most,
        message: `${plural(t[SHORT], 'node')}: fewer than ${plural(need.k, 'fitting GPU')} (at most ${most} on one node)`,
      });
    }
    return reasons;
  }
}

/** Explains a failure with one pass over `nodes`. */
export function explain(pool: string, nodes: readonly (NodeState | undefined)[], need: Need, oversell: number): PlacementReason[] {
  const why = new Why(nodes.length, need, oversell);
  let count = 0;
  let gpus = 0;
  nodes.forEach((node, slot) => {
    if (!node) return;
    count++;
    gpus += node.gpus.length;
    why.set(slot, node);
  });
  why.setPoolSize(count, gpus);
  return why.reasons(pool);
}

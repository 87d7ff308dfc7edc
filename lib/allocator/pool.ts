/**
 * One pool's nodes and its placement index: an argmax {@link ScoreTree} per request shape, kept in
 * step lazily through a log of changed node slots. A placement re-scores only the nodes that changed
 * since that shape was last placed, so its cost grows with the churn, not with the cluster.
 */
import { DEFAULT_PLACEMENT_MODE, PlacementMode } from '../model/rules';
import { expectedLeftover, Leftover, MixLearner, normaliseMix, strandedWeight } from './fragmentation';
import { explain, Why } from './reasons';
import { ScoreTree } from './score-tree';
import { GpuState, Need, NodeState, Typical } from './state';
import { evaluate, PoolView, Score } from './strategies';
import { PlacementReason, PoolConfig } from './types';
import { DEFAULT_OVERSELL_RATIO } from '../model/limits';

/** Trees kept per pool; the least recently used one is dropped beyond this. */
const MAX_TREES = 256;

interface TreeEntry {
  readonly tree: ScoreTree;
  /** Absolute log position the tree has caught up to. */
  pos: number;
  readonly epoch: number;
  /** Failure reason counts, kept up to date once the shape has failed. */
  why?: Why;
}

const score: Score = { primary: 0, secondary: 0 };

export class PoolState implements PoolView {
  oversell = DEFAULT_OVERSELL_RATIO;
  mode: PlacementMode = DEFAULT_PLACEMENT_MODE;
  mix: Typical[] = [];
  mixEpoch = 0;
  /** Learns the mix when none is configured. */
  learner: MixLearner | undefined;

  /** Nodes by slot; holes are free slots. */
  readonly slots: (NodeState | undefined)[] = [];
  private readonly freeSlots: number[] = [];
  rank = new Uint32Array(0);
  nodeCount = 0;
  gpuCount = 0;

  private readonly trees = new Map<string, TreeEntry>();
  private pressureCache: Map<string, number> | undefined;
  private stranded = { epoch: -1, weight: 1 };
  /** expectedLeftover tables by GPU model and capacity, for the current mix (a pool has few kinds). */
  private readonly leftoverCache: { model: string; capT: number; capV: number; leftover: Leftover }[] = [];
  /** Bumped when every tree must be rebuilt (nodes added or removed, settings changed). */
  private epoch = 0;
  private log: number[] = [];
  private logBase = 0;
  private mark = new Int32Array(0);
  private markStamp = 0;

  /**
   * `indexed: false` scores every node per request: the reference the index is checked against.
   * `shared` is a caller's learner for this pool (LearnedMixes), kept across allocators.
   */
  constructor(
    readonly name: string,
    private readonly indexed = true,
    private readonly shared?: MixLearner,
  ) {
    this.learner = shared ?? new MixLearner();
    this.mix = this.learner.last;
  }

  configure(config: PoolConfig): void {
    this.oversell = config.tflopsOversellRatio ?? DEFAULT_OVERSELL_RATIO;
    this.mode = config.placementMode ?? DEFAULT_PLACEMENT_MODE;
    if (config.workloadMix) {
      this.mix = normaliseMix(config.workloadMix);
      this.learner = undefined;
    } else if (!this.learner) {
      this.learner = this.shared ?? new MixLearner();
      this.mix = this.learner.last;
    }
    this.mixEpoch++;
    this.invalidate();
  }

  /**
   * Demand on a GPU model from typical requests that can run only on a subset of the pool's models:
   * their GPU volume (weight x GPUs x share) over the fraction of the pool's GPUs they may use.
   */
  pressure(model: string): number {
    if (!this.pressureCache) {
      const gpus = new Map<string, number>();
      for (const node of this.nodes()) for (const g of node.gpus) gpus.set(g.model, (gpus.get(g.model) ?? 0) + 1);
      const total = this.gpuCount;
      const cache = new Map<string, number>();
      for (const m of this.mix) {
        if (m.models === null || m.k === 0) continue;
        // The GPU models a request may use, by family and alias (lib/model/gpu-catalog.ts).
        const usable = [...gpus].filter(([x]) => m.models!.has(x));
        const supply = usable.reduce((sum, [, n]) => sum + n, 0);
        if (supply === 0 || supply === total) continue;
        const share = 0.5 * (m.t / 1000 + m.v / 1000);
        for (const [x] of usable) cache.set(x, (cache.get(x) ?? 0) + (m.p * m.k * share * total) / supply);
      }
      this.pressureCache = cache;
    }
    return this.pressureCache.get(model) ?? 0;
  }

  /** strandedWeight of the mix, by mixEpoch. */
  get strandedWeight(): number {
    if (this.stranded.epoch !== this.mixEpoch) this.stranded = { epoch: this.mixEpoch, weight: strandedWeight(this.mix) };
    return this.stranded.weight;
  }

  leftover(g: GpuState): Leftover {
    for (const e of this.leftoverCache) if (e.model === g.model && e.capT === g.capT && e.capV === g.capV) return e.leftover;
    const leftover = expectedLeftover(this.mix, g.model, g.capT, g.capV);
    this.leftoverCache.push({ model: g.model, capT: g.capT, capV: g.capV, leftover });
    return leftover;
  }

  /** Records a request for the learned mix. */
  observe(need: Need): void {
    if (this.learner?.observe(need)) {
      this.mix = this.learner.mix();
      this.mixEpoch++;
      this.invalidate();
    }
  }

  *nodes(): IterableIterator<NodeState> {
    for (const n of this.slots) if (n) yield n;
  }

  /** Places a node in a free slot. The caller builds the node with `slot = nextSlot()`. */
  nextSlot(): number {
    return this.freeSlots.length > 0 ? this.freeSlots[this.freeSlots.length - 1] : this.slots.length;
  }

  insert(node: NodeState): void {
    if (this.freeSlots.length > 0 && this.freeSlots[this.freeSlots.length - 1] === node.slot) this.freeSlots.pop();
    this.slots[node.slot] = node;
    if (this.rank.length < this.slots.length) {
      const rank = new Uint32Array(Math.max(16, this.slots.length * 2));
      rank.set(this.rank);
      this.rank = rank;
      this.mark = new Int32Array(rank.length);
    }
    this.rank[node.slot] = node.rank;
    this.nodeCount++;
    this.gpuCount += node.gpus.length;
    this.invalidate();
  }

  delete(node: NodeState): void {
    this.slots[node.slot] = undefined;
    this.freeSlots.push(node.slot);
    this.nodeCount--;
    this.gpuCount -= node.gpus.length;
    this.invalidate();
  }

  /** Notes that a node's usage changed. */
  touch(node: NodeState): void {
    node.version++;
    this.log.push(node.slot);
    if (this.log.length > 4 * this.slots.length + 1024) {
      const drop = this.log.length >> 1;
      this.log = this.log.slice(drop);
      this.logBase += drop;
    }
  }

  /** Drops every tree, e.g. after the node set or the settings changed. */
  invalidate(): void {
    this.pressureCache = undefined;
    this.leftoverCache.length = 0;
    this.epoch++;
    this.trees.clear();
  }

  /** The best node for `need`, or undefined when none can take it. */
  best(need: Need): NodeState | undefined {
    if (!this.indexed) return this.scan(need);
    const slot = this.treeFor(need).top();
    return slot < 0 ? undefined : this.slots[slot];
  }

  /** Why nothing can take `need`; call right after {@link best} returned undefined. */
  reasons(need: Need): PlacementReason[] {
    const entry = this.indexed ? this.trees.get(need.key) : undefined;
    if (!entry) return explain(this.name, this.slots, need, this.oversell);
    if (!entry.why) {
      entry.why = new Why(this.slots.length, need, this.oversell);
      this.slots.forEach((node, slot) => node && entry.why?.set(slot, node));
      entry.why.setPoolSize(this.nodeCount, this.gpuCount);
    }
    return entry.why.reasons(this.name);
  }

  /**
   * The best of `nodes` (nodes of this pool) for `need`, by a scan: Allocator.best has already asked
   * the index whether the pool's best is among a scheduler's nodes before it comes to this.
   */
  bestOf(need: Need, nodes: readonly NodeState[]): NodeState | undefined {
    return this.scan(need, nodes);
  }

  private scan(need: Need, nodes: readonly (NodeState | undefined)[] = this.slots): NodeState | undefined {
    let best: NodeState | undefined;
    let bp = 0;
    let bs = 0;
    for (const node of nodes) {
      if (!node || !evaluate(node, need, this, score, null)) continue;
      const { primary: p, secondary: s } = score;
      if (
        !best ||
        p > bp ||
        (p === bp && (s > bs || (s === bs && (node.rank < best.rank || (node.rank === best.rank && node.slot < best.slot)))))
      ) {
        best = node;
        bp = p;
        bs = s;
      }
    }
    return best;
  }

  private treeFor(need: Need): ScoreTree {
    const end = this.logBase + this.log.length;
    const entry = this.trees.get(need.key);
    if (entry && entry.epoch === this.epoch && entry.pos >= this.logBase && end - entry.pos <= this.slots.length) {
      this.trees.delete(need.key);
      this.trees.set(need.key, entry);
      const stamp = ++this.markStamp;
      for (let i = entry.pos - this.logBase; i < this.log.length; i++) {
        const slot = this.log[i];
        if (this.mark[slot] === stamp) continue;
        this.mark[slot] = stamp;
        const node = this.slots[slot];
        if (node && evaluate(node, need, this, score, null)) entry.tree.set(slot, score.primary, score.secondary);
        else entry.tree.set(slot, -Infinity, 0);
        entry.why?.set(slot, node);
      }
      entry.pos = end;
      return entry.tree;
    }
    const tree = new ScoreTree(this.slots.length, this.rank);
    for (let slot = 0; slot < this.slots.length; slot++) {
      const node = this.slots[slot];
      if (node && evaluate(node, need, this, score, null)) tree.load(slot, score.primary, score.secondary);
    }
    tree.finish();
    this.trees.delete(need.key);
    this.trees.set(need.key, { tree, pos: end, epoch: this.epoch });
    if (this.trees.size > MAX_TREES) this.trees.delete(this.trees.keys().next().value as string);
    return tree;
  }
}

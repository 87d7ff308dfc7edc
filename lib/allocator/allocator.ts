import { fieldIssue, throwIfInvalid, ValidationError } from '../model/errors';
import { GpuModelFilter } from '../model/gpu-catalog';
import { LearnedMixes } from './fragmentation';
import { PoolState } from './pool';
import { explain } from './reasons';
import { GpuState, gpuFits, hashRank, Need, nodeFits, NodeState, toMilli } from './state';
import { evaluate, Score } from './strategies';
import {
  AllocateResult,
  Allocation,
  AllocationRequest,
  AllocatorSnapshot,
  GpuUsage,
  NodeSpec,
  NodeUsage,
  PlacementReason,
  PoolConfig,
  PoolUsage,
  RebuildResult,
  ShareAmounts,
} from './types';
import { validateNode, validatePoolConfig, validateRequest } from './input-checks';

export interface AllocatorOptions {
  /** Seeds the tie-break order between equally good nodes. @default 0 */
  readonly seed?: number;
  /** Settings per pool name; pools not listed use the defaults of {@link PoolConfig}. */
  readonly pools?: Readonly<Record<string, PoolConfig>>;
  /**
   * `false` scores every node of the pool for each request instead of using the per-shape index.
   * Same placements, O(nodes) per request: a reference for tests and benchmarks. @default true
   */
  readonly indexed?: boolean;
  /**
   * Mixes learned by pools without a workloadMix, kept by the caller across the allocators it
   * rebuilds: given, this allocator learns only from {@link Allocator.observe}, which the caller
   * calls once per request (placed or not). @default each pool learns from the requests given to
   * allocate and the allocations restored
   */
  readonly learned?: LearnedMixes;
}

interface Placed {
  readonly allocation: Allocation;
  readonly node: NodeState;
  readonly gpus: readonly GpuState[];
}

const scratch: Score = { primary: 0, secondary: 0 };

/** What {@link Allocator.choose} says of a scheduler's feasible nodes. */
export interface Choice {
  /** The node the placement mode prefers among those that fit; undefined when none fits. */
  readonly best?: string;
  /** Every candidate that can take the request. */
  readonly fitting: readonly string[];
  /** Candidates that cannot, with why. */
  readonly unfit: ReadonlyMap<string, readonly PlacementReason[]>;
}

function notInPool(node: string, pool: string): PlacementReason {
  return { kind: 'NoNodesInPool', pool, message: `node ${JSON.stringify(node)} has no GPUs in pool ${JSON.stringify(pool)}` };
}

function byName<T extends { name: string }>(a: T, b: T): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * The GPU allocator: pure, deterministic, no I/O. See the module documentation in `index.ts` for
 * what oversubscription allows and how each placement mode chooses.
 *
 * @example
 * const a = new Allocator({ pools: { shared: { tflopsOversellRatio: 200 } } });
 * a.addNode({ name: 'n1', pool: 'shared', gpus: [{ id: 'GPU-0', index: 0, model: 'A100', tflops: 312, vram: 80 * 2 ** 30 }] });
 * const r = a.allocate({ id: 'ns/pod', pool: 'shared', tflopsRequest: 50, vramRequest: 2 ** 30, gpuCount: 1, qos: 'medium' });
 * if (r.ok) console.log(r.allocation.node, r.allocation.gpuIds);
 */
export class Allocator {
  private readonly seed: number;
  private readonly indexed: boolean;
  private readonly learned: LearnedMixes | undefined;
  private readonly pools = new Map<string, PoolState>();
  private readonly nodes = new Map<string, NodeState>();
  private readonly gpuOwners = new Map<string, NodeState>();
  private readonly placed = new Map<string, Placed>();
  private readonly pick: number[] = [];
  /** Nodes that take no share now, with their pool and why (setUnavailable). */
  private readonly unavailable = new Map<string, { pool: string; reason: string }>();

  constructor(options: AllocatorOptions = {}) {
    this.seed = options.seed ?? 0;
    this.indexed = options.indexed ?? true;
    this.learned = options.learned;
    for (const [name, config] of Object.entries(options.pools ?? {})) this.configurePool(name, config);
  }

  /** Sets a pool's oversell ratio, default placement mode and workload mix. */
  configurePool(name: string, config: PoolConfig): void {
    throwIfInvalid(validatePoolConfig(config, `pools.${name}`), 'configurePool');
    this.poolState(name).configure(config);
  }

  /** Adds a node with its GPUs. Throws a ValidationError (and changes nothing) on bad input. */
  addNode(spec: NodeSpec): void {
    const issues = validateNode(spec);
    if (issues.length === 0 && this.nodes.has(spec.name)) issues.push(fieldIssue('node.name', spec.name, 'a node name not added yet'));
    if (issues.length === 0) {
      this.unavailable.delete(spec.name);
      spec.gpus.forEach((g, i) => {
        if (this.gpuOwners.has(g.id)) issues.push(fieldIssue(`node.gpus[${i}].id`, g.id, 'a GPU id not used on another node'));
      });
    }
    throwIfInvalid(issues, 'addNode');
    const pool = this.poolState(spec.pool);
    const node: NodeState = {
      name: spec.name,
      pool: spec.pool,
      slot: pool.nextSlot(),
      rank: hashRank(this.seed, spec.name),
      cpuCap: spec.cpu ?? Infinity,
      memCap: spec.memory ?? Infinity,
      cpuUsed: 0,
      memUsed: 0,
      gpus: [...spec.gpus]
        .sort((a, b) => a.index - b.index)
        .map((g) => ({
          id: g.id,
          index: g.index,
          model: g.model,
          capT: toMilli(g.tflops),
          capV: g.vram,
          usedT: 0,
          limT: 0,
          usedV: 0,
          limV: 0,
          allocs: new Set<string>(),
        })),
      version: 0,
    };
    pool.insert(node);
    this.nodes.set(node.name, node);
    for (const g of node.gpus) this.gpuOwners.set(g.id, node);
  }

  /** Removes a node; its allocations are released. Returns their ids (sorted). */
  removeNode(name: string): string[] {
    const node = this.nodes.get(name);
    if (!node) return [];
    const released = this.allocationsOn(node);
    for (const id of released) this.release(id);
    this.poolState(node.pool).delete(node);
    this.nodes.delete(name);
    for (const g of node.gpus) this.gpuOwners.delete(g.id);
    return released;
  }

  /**
   * Replaces a node's spec (capacity, GPUs, pool). Allocations whose GPUs are all still on the node
   * in the same pool are kept, even beyond a reduced capacity; the others are released and returned.
   */
  updateNode(spec: NodeSpec): string[] {
    throwIfInvalid(validateNode(spec), 'updateNode');
    const old = this.nodes.get(spec.name);
    if (!old) throw new ValidationError([fieldIssue('node.name', spec.name, 'the name of a node already added')], 'updateNode');
    const kept = this.allocationsOn(old).map((id) => (this.placed.get(id) as Placed).allocation);
    this.removeNode(spec.name);
    try {
      this.addNode(spec);
    } catch (e) {
      this.addNode(this.specOf(old));
      this.restoreAll(kept);
      throw e;
    }
    return this.restoreAll(kept).skipped.map((s) => s.id);
  }

  /**
   * Records that node `name` of `pool` takes no share now and why (e.g. `NotReady`), so that a refusal
   * says so instead of "no nodes". `reason` undefined forgets it. The node's GPUs are not added.
   */
  setUnavailable(name: string, pool: string, reason: string | undefined): void {
    if (reason === undefined) this.unavailable.delete(name);
    else this.unavailable.set(name, { pool, reason });
  }

  /** The reason a node cannot take a request of `pool`: unavailable, or not a GPU node of the pool. */
  private notInPool(node: string, pool: string): PlacementReason {
    const down = this.unavailable.get(node);
    if (down && down.pool === pool) {
      return {
        kind: 'NodeUnavailable',
        pool,
        nodes: [node],
        reason: down.reason,
        message: `node ${JSON.stringify(node)} of pool ${JSON.stringify(pool)} is ${down.reason}`,
      };
    }
    return notInPool(node, pool);
  }

  /** Why a pool with no usable node has none, when its nodes are known but unavailable. */
  private unavailableIn(pool: string): PlacementReason | undefined {
    const nodes = [...this.unavailable]
      .filter(([, u]) => u.pool === pool)
      .map(([n]) => n)
      .sort();
    if (nodes.length === 0) return undefined;
    const reasons = [...new Set(nodes.map((n) => this.unavailable.get(n)!.reason))];
    const list = nodes.map((n) => `${JSON.stringify(n)} is ${this.unavailable.get(n)!.reason}`).join(', ');
    return {
      kind: 'NodeUnavailable',
      pool,
      nodes,
      reason: reasons.join(', '),
      message: `pool ${JSON.stringify(pool)} has no usable node: ${list}`,
    };
  }

  /**
   * Places a request, or says why it cannot be placed. With `on`, only that node is considered (the
   * node a scheduler chose). Throws a ValidationError on bad input.
   */
  allocate(request: AllocationRequest, on?: { node: string }): AllocateResult {
    throwIfInvalid(validateRequest(request), 'allocate');
    if (this.placed.has(request.id)) {
      throw new ValidationError([fieldIssue('request.id', request.id, 'an id not already allocated')], 'allocate');
    }
    const pool = this.pools.get(request.pool);
    if (!pool || pool.nodeCount === 0) {
      const down = this.unavailableIn(request.pool);
      return { ok: false, reasons: down ? [down] : explain(request.pool, [], this.need(request, 'MinFragmentation'), 0) };
    }
    const need = this.need(request, pool.mode);
    if (!this.learned) pool.observe(need);
    let node: NodeState | undefined;
    if (on) {
      const pinned = this.nodes.get(on.node);
      if (!pinned || pinned.pool !== pool.name) return { ok: false, reasons: [this.notInPool(on.node, pool.name)] };
      if (!evaluate(pinned, need, pool, scratch, null)) return { ok: false, reasons: explain(pool.name, [pinned], need, pool.oversell) };
      node = pinned;
    } else {
      node = pool.best(need);
    }
    if (!node) return { ok: false, reasons: pool.reasons(need) };
    evaluate(node, need, pool, scratch, this.pick);
    const gpus = this.pick.map((i) => node.gpus[i]);
    const allocation: Allocation = {
      id: request.id,
      pool: pool.name,
      node: node.name,
      gpuIds: gpus.map((g) => g.id),
      tflopsRequest: request.gpuCount === 0 ? 0 : request.tflopsRequest,
      tflopsLimit: request.gpuCount === 0 ? 0 : (request.tflopsLimit ?? request.tflopsRequest),
      vramRequest: request.gpuCount === 0 ? 0 : request.vramRequest,
      vramLimit: request.gpuCount === 0 ? 0 : (request.vramLimit ?? request.vramRequest),
      cpu: request.cpu ?? 0,
      memory: request.memory ?? 0,
      qos: request.qos,
    };
    this.apply(allocation, node, gpus, 1);
    return { ok: true, allocation };
  }

  /**
   * The node the pool's placement mode prefers among `candidates`, as {@link choose} gives it, without
   * judging every candidate when it can be avoided: a scheduler usually hands over every node that
   * can take the request, and when the pool's best (its index, kept up to date at the cost of the
   * nodes that changed) is among them it is their best too. Undefined when none can take the
   * request; {@link choose} then says why of each. Throws a ValidationError on bad input.
   */
  best(request: AllocationRequest, candidates: readonly string[]): string | undefined {
    throwIfInvalid(validateRequest(request), 'best');
    const pool = this.pools.get(request.pool);
    const top = pool && this.indexed ? pool.best(this.need(request, pool.mode)) : undefined;
    return top && candidates.includes(top.name) ? top.name : this.judge(request, candidates).best;
  }

  /**
   * Judges the nodes a scheduler found feasible for a request, without placing it: the one the pool's
   * placement mode chooses among them, and for every other one why it cannot take the request
   * (unknown or of another pool, or the per-node reasons). Throws a ValidationError on bad input.
   */
  choose(request: AllocationRequest, candidates: readonly string[]): Choice {
    throwIfInvalid(validateRequest(request), 'choose');
    const unfit = new Map<string, readonly PlacementReason[]>();
    return { ...this.judge(request, candidates, unfit), unfit };
  }

  /**
   * The candidates that can take a (valid) request and the best of them; with `unfit`, why each other
   * one cannot, which only {@link choose} pays for.
   */
  private judge(
    request: AllocationRequest,
    candidates: readonly string[],
    unfit?: Map<string, readonly PlacementReason[]>,
  ): Omit<Choice, 'unfit'> {
    const pool = this.pools.get(request.pool);
    const need = this.need(request, pool?.mode ?? 'MinFragmentation');
    const fitting: NodeState[] = [];
    for (const name of candidates) {
      const node = this.nodes.get(name);
      if (!pool || !node || node.pool !== pool.name) unfit?.set(name, [this.notInPool(name, request.pool)]);
      else if (nodeFits(node, need, pool.oversell)) fitting.push(node);
      else unfit?.set(name, explain(pool.name, [node], need, pool.oversell));
    }
    const best = pool && fitting.length > 0 ? pool.bestOf(need, fitting)?.name : undefined;
    return { best, fitting: fitting.map((n) => n.name) };
  }

  /**
   * Counts a request toward its pool's learned mix (a pool without a workloadMix), without placing
   * it: for a caller that keeps {@link AllocatorOptions.learned} and decides what counts (the
   * extender: each pod once, at its first filter, before it is placed or refused). A pool this
   * allocator does not know is left alone, as allocate leaves it. Throws a ValidationError on bad input.
   */
  observe(request: AllocationRequest): void {
    throwIfInvalid(validateRequest(request), 'observe');
    const pool = this.pools.get(request.pool);
    pool?.observe(this.need(request, pool.mode));
  }

  /**
   * Adds allocations that are running (even beyond capacity) without clearing the others; the same
   * checks as {@link rebuild}.
   */
  restore(allocations: readonly Allocation[]): RebuildResult {
    return this.restoreAll(allocations);
  }

  /**
   * Changes the per-GPU amounts of a placed allocation on the same node and GPUs (an in-place resize),
   * when those GPUs have room for the new amounts once the old ones are freed; otherwise nothing
   * changes and the reasons say what each of its GPUs lacks. Throws a ValidationError for an unknown id,
   * a share of no GPU, or bad amounts.
   */
  resize(id: string, amounts: ShareAmounts): AllocateResult {
    const p = this.placed.get(id);
    const issues = p && p.gpus.length > 0 ? [] : [fieldIssue('id', id, 'the id of a placed allocation of at least one GPU')];
    if (p) issues.push(...validateRequest({ ...p.allocation, ...amounts, gpuCount: p.gpus.length }));
    throwIfInvalid(issues, 'resize');
    const { allocation: old, node, gpus } = p as Placed;
    const next: Allocation = {
      ...old,
      tflopsRequest: amounts.tflopsRequest,
      tflopsLimit: amounts.tflopsLimit ?? amounts.tflopsRequest,
      vramRequest: amounts.vramRequest,
      vramLimit: amounts.vramLimit ?? amounts.vramRequest,
    };
    const pool = this.poolState(node.pool);
    this.apply(old, node, gpus, -1);
    const need = this.need({ ...next, gpuCount: gpus.length }, pool.mode);
    if (gpus.every((g) => gpuFits(g, need, pool.oversell))) {
      this.apply(next, node, gpus, 1);
      return { ok: true, allocation: next };
    }
    const reasons = explain(pool.name, [{ ...node, gpus: [...gpus] }], need, pool.oversell).filter(
      (r) => r.kind !== 'NotEnoughGpusOnOneNode',
    );
    this.apply(old, node, gpus, 1);
    return { ok: false, reasons };
  }

  /** Frees an allocation. Returns false when the id is unknown (already released). */
  release(id: string): boolean {
    const p = this.placed.get(id);
    if (!p) return false;
    this.apply(p.allocation, p.node, p.gpus, -1);
    return true;
  }

  /**
   * Clears all usage and restores the given allocations as they are, even beyond capacity (they are
   * running). Allocations naming an unknown node or GPU, a GPU of another node, another pool or a
   * repeated id are skipped and listed.
   */
  rebuild(allocations: readonly Allocation[]): RebuildResult {
    for (const id of [...this.placed.keys()]) this.release(id);
    return this.restoreAll(allocations);
  }

  /** The allocation with this id, if placed. */
  allocation(id: string): Allocation | undefined {
    return this.placed.get(id)?.allocation;
  }

  /** All allocations, sorted by id. */
  allocations(): Allocation[] {
    return [...this.placed.values()].map((p) => p.allocation).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Used and available figures of one node and its GPUs. */
  nodeUsage(name: string): NodeUsage | undefined {
    const node = this.nodes.get(name);
    return node && this.usageOf(node);
  }

  /** Used and available figures of one GPU. */
  gpuUsage(id: string): GpuUsage | undefined {
    const node = this.gpuOwners.get(id);
    const g = node?.gpus.find((x) => x.id === id);
    return node && g && this.gpuUsageOf(node, g);
  }

  /** Totals of one pool. */
  poolUsage(name: string): PoolUsage | undefined {
    const pool = this.pools.get(name);
    if (!pool) return undefined;
    let gpus = 0;
    let capT = 0;
    let usedT = 0;
    let capV = 0;
    let usedV = 0;
    for (const node of pool.nodes()) {
      for (const g of node.gpus) {
        gpus++;
        capT += g.capT;
        usedT += g.usedT;
        capV += g.capV;
        usedV += g.usedV;
      }
    }
    let allocations = 0;
    for (const p of this.placed.values()) if (p.allocation.pool === name) allocations++;
    return {
      name,
      nodes: pool.nodeCount,
      gpus,
      tflops: { capacity: capT / 1000, requested: usedT / 1000, available: Math.max(0, capT - usedT) / 1000 },
      vram: { capacity: capV, requested: usedV, available: Math.max(0, capV - usedV) },
      allocations,
    };
  }

  /** A copy of every pool's and node's figures, sorted by name. O(GPUs). */
  snapshot(): AllocatorSnapshot {
    const pools = [...this.pools.keys()].sort().map((n) => this.poolUsage(n) as PoolUsage);
    const nodes = [...this.nodes.values()].map((n) => this.usageOf(n)).sort(byName);
    return { pools, nodes };
  }

  private poolState(name: string): PoolState {
    let pool = this.pools.get(name);
    if (!pool) {
      pool = new PoolState(name, this.indexed, this.learned?.learner(name));
      this.pools.set(name, pool);
    }
    return pool;
  }

  private need(r: AllocationRequest, poolMode: Need['mode']): Need {
    const k = r.gpuCount;
    const t = k === 0 ? 0 : toMilli(r.tflopsRequest);
    const tl = k === 0 ? 0 : toMilli(r.tflopsLimit ?? r.tflopsRequest);
    const v = k === 0 ? 0 : r.vramRequest;
    const vl = k === 0 ? 0 : (r.vramLimit ?? r.vramRequest);
    const cpu = r.cpu ?? 0;
    const mem = r.memory ?? 0;
    const models =
      k === 0 || r.gpuModel === undefined ? null : new GpuModelFilter(typeof r.gpuModel === 'string' ? [r.gpuModel] : r.gpuModel);
    const mode = r.placementMode ?? poolMode;
    const modelKey = models ? [...models].sort().join(',') : '';
    const indices = k === 0 || r.gpuIndices === undefined ? null : new Set(r.gpuIndices);
    const indexKey = indices ? `|@${[...indices].sort((a, b) => a - b).join(',')}` : '';
    return { k, t, tl, v, vl, cpu, mem, models, indices, mode, key: `${mode}|${k}|${t}|${tl}|${v}|${cpu}|${mem}|${modelKey}${indexKey}` };
  }

  /** Adds (`sign` 1) or removes (-1) an allocation's usage. */
  private apply(a: Allocation, node: NodeState, gpus: readonly GpuState[], sign: 1 | -1): void {
    const t = toMilli(a.tflopsRequest);
    const tl = toMilli(a.tflopsLimit);
    for (const g of gpus) {
      g.usedT += sign * t;
      g.limT += sign * tl;
      g.usedV += sign * a.vramRequest;
      g.limV += sign * a.vramLimit;
      if (sign > 0) g.allocs.add(a.id);
      else g.allocs.delete(a.id);
    }
    node.cpuUsed += sign * a.cpu;
    node.memUsed += sign * a.memory;
    if (sign > 0) this.placed.set(a.id, { allocation: a, node, gpus });
    else this.placed.delete(a.id);
    this.poolState(node.pool).touch(node);
  }

  private restoreAll(allocations: readonly Allocation[]): RebuildResult {
    const skipped: { id: string; reason: string }[] = [];
    let restored = 0;
    for (const a of allocations) {
      const reason = this.restoreProblem(a);
      if (reason) {
        skipped.push({ id: a.id, reason });
        continue;
      }
      const node = this.nodes.get(a.node) as NodeState;
      const gpus = a.gpuIds.map((id) => node.gpus.find((g) => g.id === id) as GpuState);
      this.apply(a, node, gpus, 1);
      if (!this.learned) this.poolState(node.pool).observe(this.need({ ...a, gpuCount: gpus.length }, 'MinFragmentation'));
      restored++;
    }
    return { restored, skipped };
  }

  private restoreProblem(a: Allocation): string | undefined {
    if (this.placed.has(a.id)) return 'id already allocated';
    const node = this.nodes.get(a.node);
    if (!node) return `unknown node ${JSON.stringify(a.node)}`;
    if (node.pool !== a.pool) return `node ${JSON.stringify(a.node)} is in pool ${JSON.stringify(node.pool)}`;
    if (new Set(a.gpuIds).size !== a.gpuIds.length) return 'a GPU is listed twice';
    const stray = a.gpuIds.find((id) => this.gpuOwners.get(id) !== node);
    return stray === undefined ? undefined : `GPU ${JSON.stringify(stray)} is not on node ${JSON.stringify(a.node)}`;
  }

  private allocationsOn(node: NodeState): string[] {
    const ids: string[] = [];
    for (const [id, p] of this.placed) if (p.node === node) ids.push(id);
    return ids.sort();
  }

  private specOf(node: NodeState): NodeSpec {
    return {
      name: node.name,
      pool: node.pool,
      cpu: node.cpuCap === Infinity ? undefined : node.cpuCap,
      memory: node.memCap === Infinity ? undefined : node.memCap,
      gpus: node.gpus.map((g) => ({ id: g.id, index: g.index, model: g.model, tflops: g.capT / 1000, vram: g.capV })),
    };
  }

  private usageOf(node: NodeState): NodeUsage {
    return {
      name: node.name,
      pool: node.pool,
      cpu: node.cpuCap === Infinity ? undefined : { capacity: node.cpuCap, requested: node.cpuUsed },
      memory: node.memCap === Infinity ? undefined : { capacity: node.memCap, requested: node.memUsed },
      gpus: node.gpus.map((g) => this.gpuUsageOf(node, g)),
    };
  }

  private gpuUsageOf(node: NodeState, g: GpuState): GpuUsage {
    return {
      id: g.id,
      index: g.index,
      model: g.model,
      node: node.name,
      pool: node.pool,
      tflops: {
        capacity: g.capT / 1000,
        requested: g.usedT / 1000,
        limits: g.limT / 1000,
        available: Math.max(0, g.capT - g.usedT) / 1000,
      },
      vram: { capacity: g.capV, requested: g.usedV, limits: g.limV, available: Math.max(0, g.capV - g.usedV) },
      allocations: [...g.allocs].sort(),
    };
  }
}

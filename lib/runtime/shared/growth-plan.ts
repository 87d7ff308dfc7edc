/**
 * How many new GPU nodes the shares waiting for room need, and which placeholder pods stand for them
 * (docs/growth.md). Pure: the growth reconciler (reconcile/growth.ts) feeds it the pool's waiting
 * shares and its placeholders, and writes what it returns.
 *
 * Shares are packed, largest first, onto new nodes of `gpusPerNode` GPUs as large as the pool's
 * largest, so the autoscaler is asked for the nodes the shares need, not one node (or GPU) per pod.
 * Each placeholder stands for one new node: whole GPUs (those its shares take) and their CPU and memory.
 * A new node is asked per namespace (a placeholder's owners are its shares, in its namespace).
 */

/** A share that waits for GPU room. Amounts per GPU, as in its share record; CPU in millicores, memory in bytes. */
export interface WaitingShare {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly gpuCount: number;
  readonly vram: number;
  /** Milli-TFLOPS, or TFLOPS: the unit of {@link NewGpu.tflops}. */
  readonly tflops: number;
  readonly cpu: number;
  readonly memory: number;
}

/** One GPU of a new node, when the pool has GPUs to tell its size by. */
export interface NewGpu {
  readonly vram: number;
  readonly tflops: number;
}

/** One new node asked for: the shares it is for, the whole GPUs they take, their CPU and memory. */
export interface NodeAsk {
  readonly pods: readonly WaitingShare[];
  readonly gpus: number;
  readonly cpu: number;
  readonly memory: number;
}

/** The shares no new node can take (more GPUs than a node brings, more than one GPU holds), and the nodes for the rest. */
export interface Packing {
  readonly nodes: NodeAsk[];
  readonly unfit: WaitingShare[];
  /** The room each of the `existing` nodes has left, per GPU. */
  readonly left: NewGpu[][];
}

/**
 * Packs `shares` first-fit decreasing onto new nodes of `gpusPerNode` GPUs of size `gpu`, after the
 * room `existing` nodes still have (free amounts per GPU, per node): shares that fit there wait only
 * for kube-scheduler's retry, and no node is asked for them. Without a size (a pool with no GPUs
 * yet), each share is taken to fill its GPUs: never too few nodes.
 */
export function packIntoNewNodes(
  shares: readonly WaitingShare[],
  gpusPerNode: number,
  gpu?: NewGpu,
  existing: readonly (readonly NewGpu[])[] = [],
): Packing {
  const cap = gpu ?? { vram: 1, tflops: 1 };
  const need = (s: WaitingShare) => (gpu ? { vram: s.vram, tflops: s.tflops } : cap);
  const unfit: WaitingShare[] = [];
  type Bin = { namespace?: string; pods: WaitingShare[]; free: { vram: number; tflops: number }[]; cpu: number; memory: number };
  const old: Bin[] = existing.map((gpus) => ({ pods: [], free: gpus.map((g) => ({ ...g })), cpu: 0, memory: 0 }));
  const nodes: Bin[] = [];
  const order = [...shares].sort((a, b) => b.gpuCount - a.gpuCount || b.vram - a.vram || b.tflops - a.tflops || (a.uid < b.uid ? -1 : 1));
  for (const s of order) {
    const n = need(s);
    if (s.gpuCount > gpusPerNode || n.vram > cap.vram || n.tflops > cap.tflops) {
      unfit.push(s);
      continue;
    }
    const fits = (f: { vram: number; tflops: number }) => f.vram >= n.vram && f.tflops >= n.tflops;
    const room = (x: Bin) => x.free.filter(fits).length >= s.gpuCount;
    // A placeholder is owned by its shares, and owners share its namespace: a new node is asked per namespace.
    let node = old.find(room) ?? nodes.find((x) => x.namespace === s.namespace && room(x));
    if (!node) {
      node = { namespace: s.namespace, pods: [], free: Array.from({ length: gpusPerNode }, () => ({ ...cap })), cpu: 0, memory: 0 };
      nodes.push(node);
    }
    // The fullest GPUs with room first, so that whole GPUs stay free for later shares.
    const chosen = node.free
      .filter(fits)
      .sort((a, b) => a.vram - b.vram || a.tflops - b.tflops)
      .slice(0, s.gpuCount);
    for (const f of chosen) {
      f.vram -= n.vram;
      f.tflops -= n.tflops;
    }
    node.pods.push(s);
    node.cpu += s.cpu;
    node.memory += s.memory;
  }
  return {
    nodes: nodes.map((x) => ({
      pods: x.pods,
      gpus: x.free.filter((f) => f.vram < cap.vram || f.tflops < cap.tflops).length,
      cpu: x.cpu,
      memory: x.memory,
    })),
    unfit,
    left: old.map((x) => x.free),
  };
}

/** A placeholder that exists: the pods it stands for, and whether its node came. */
export interface ExistingPlaceholder {
  readonly name: string;
  readonly pods: readonly string[];
  /** When it was made (ms). */
  readonly askedAtMs: number;
  /** It is bound to a node. */
  readonly bound: boolean;
  /** The whole GPUs it asks for. */
  readonly gpus: number;
  /** Its node's GPUs are in the pool: the shares can go there, and the placeholder's work is done. */
  readonly nodeJoined?: boolean;
}

/** What the reconciler does with a pool's placeholders. */
export interface GrowthPlan {
  /** Placeholders to delete: none of their shares waits for room any more, or their node came a while ago. */
  readonly remove: string[];
  /** New nodes to ask for, one placeholder each, for the waiting shares no kept placeholder stands for. */
  readonly create: NodeAsk[];
  /** Waiting shares that no new node can take. */
  readonly unfit: WaitingShare[];
}

/**
 * The plan for one pool. A placeholder stands for its shares until none of them waits for room, or
 * its node's GPUs joined the pool (then the room it asked for is counted in `free`), or it is bound
 * and was made `boundGraceMs` ago (a node that never joins: a placeholder must never hold a node alive).
 * Shares a kept placeholder stands for are not asked for again; the rest are packed after the room
 * the pool's GPUs still have (`free`, per node) and the room kept placeholders' GPUs keep beside
 * their shares, and only what overflows is asked for.
 */
export function planGrowth(opts: {
  waiting: readonly WaitingShare[];
  existing: readonly ExistingPlaceholder[];
  gpusPerNode: number;
  gpu?: NewGpu;
  free?: readonly (readonly NewGpu[])[];
  nowMs: number;
  boundGraceMs: number;
}): GrowthPlan {
  const waiting = new Set(opts.waiting.map((s) => s.uid));
  const remove: string[] = [];
  const covered = new Set<string>();
  const free: (readonly NewGpu[])[] = [...(opts.free ?? [])];
  for (const p of opts.existing) {
    const stale = p.bound && opts.nowMs - p.askedAtMs >= opts.boundGraceMs;
    if (stale || p.nodeJoined || !p.pods.some((uid) => waiting.has(uid))) {
      remove.push(p.name);
      continue;
    }
    p.pods.forEach((uid) => covered.add(uid));
    // The room its GPUs keep beside its own shares takes later ones: shares arriving over several
    // passes fill the nodes already asked for before a new one is asked.
    if (opts.gpu) {
      const whole = Array.from({ length: p.gpus }, () => opts.gpu!);
      const mine = opts.waiting.filter((s) => p.pods.includes(s.uid));
      free.push(...packIntoNewNodes(mine, p.gpus, opts.gpu, [whole]).left);
    }
  }
  const { nodes, unfit } = packIntoNewNodes(
    opts.waiting.filter((s) => !covered.has(s.uid)),
    opts.gpusPerNode,
    opts.gpu,
    free,
  );
  return { remove, create: nodes, unfit };
}

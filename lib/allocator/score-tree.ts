/**
 * Argmax segment tree over a pool's node slots: O(log n) point update, O(1) best-node query.
 * Written by hand because the order is specific (score, then secondary score, then seeded rank,
 * then slot) and the hot path must stay on typed arrays; no npm package offers that.
 */
export class ScoreTree {
  private readonly size: number;
  private readonly primary: Float64Array;
  private readonly secondary: Float64Array;
  /** best[i]: winning slot of the subtree rooted at i, or -1 when every slot in it is infeasible. */
  private readonly best: Int32Array;

  constructor(
    slots: number,
    private readonly rank: Uint32Array,
  ) {
    let size = 1;
    while (size < slots) size <<= 1;
    this.size = size;
    this.primary = new Float64Array(size).fill(-Infinity);
    this.secondary = new Float64Array(size);
    this.best = new Int32Array(2 * size).fill(-1);
  }

  /** The best feasible slot, or -1. */
  top(): number {
    return this.best[1];
  }

  /** Sets a slot's scores (`-Infinity` = infeasible) and repairs the path to the root. */
  set(slot: number, primary: number, secondary: number): void {
    this.load(slot, primary, secondary);
    for (let i = (slot + this.size) >> 1; i >= 1; i >>= 1) this.best[i] = this.better(this.best[2 * i], this.best[2 * i + 1]);
  }

  /** Sets a slot without repairing the path; call {@link finish} after a batch. */
  load(slot: number, primary: number, secondary: number): void {
    this.primary[slot] = primary;
    this.secondary[slot] = secondary;
    this.best[slot + this.size] = primary === -Infinity ? -1 : slot;
  }

  finish(): void {
    for (let i = this.size - 1; i >= 1; i--) this.best[i] = this.better(this.best[2 * i], this.best[2 * i + 1]);
  }

  private better(a: number, b: number): number {
    if (a < 0) return b;
    if (b < 0) return a;
    const pa = this.primary[a];
    const pb = this.primary[b];
    if (pa !== pb) return pa > pb ? a : b;
    const sa = this.secondary[a];
    const sb = this.secondary[b];
    if (sa !== sb) return sa > sb ? a : b;
    const ra = this.rank[a];
    const rb = this.rank[b];
    if (ra !== rb) return ra < rb ? a : b;
    return a < b ? a : b;
  }
}

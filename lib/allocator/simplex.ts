/**
 * A dense primal simplex for `max c·x, A x <= b, x >= 0` with `b >= 0`, the only form the packing
 * bound needs: the slack basis is feasible, so there is no first phase. Dantzig's rule, with Bland's
 * rule after a run of degenerate pivots so that it cannot cycle. Small problems only (hundreds of
 * rows): the tableau is dense.
 */

const EPS = 1e-9;
/** Degenerate pivots in a row before switching to Bland's rule. */
const STALL = 50;

/**
 * The optimum of the linear programme; `rows[i]` is row i of A (length of `c`). Throws when the
 * programme is unbounded (a column of the objective with no row that limits it).
 */
export function maximise(rows: readonly Float64Array[], b: readonly number[], c: readonly number[]): number {
  const m = rows.length;
  const n = c.length;
  const width = n + m + 1;
  const t = rows.map((row, i) => {
    const r = new Float64Array(width);
    r.set(row);
    r[n + i] = 1;
    r[width - 1] = b[i];
    return r;
  });
  const z = new Float64Array(width);
  for (let j = 0; j < n; j++) z[j] = -c[j];
  const basis = Array.from({ length: m }, (_, i) => n + i);
  let stalled = 0;
  for (let iteration = 0; iteration < 50 * (n + m) + 1000; iteration++) {
    let enter = -1;
    if (stalled < STALL) {
      let most = -EPS;
      for (let j = 0; j < width - 1; j++) if (z[j] < most) [most, enter] = [z[j], j];
    } else {
      for (let j = 0; j < width - 1 && enter < 0; j++) if (z[j] < -EPS) enter = j;
    }
    if (enter < 0) return z[width - 1];
    let leave = -1;
    let ratio = Infinity;
    for (let i = 0; i < m; i++) {
      const a = t[i][enter];
      if (a <= EPS) continue;
      const q = t[i][width - 1] / a;
      if (q < ratio - EPS || (q <= ratio + EPS && leave >= 0 && basis[i] < basis[leave])) [ratio, leave] = [q, i];
    }
    if (leave < 0) throw new Error(`simplex: column ${enter} is unbounded`);
    stalled = ratio <= EPS ? stalled + 1 : 0;
    const p = t[leave];
    const inv = 1 / p[enter];
    for (let j = 0; j < width; j++) p[j] *= inv;
    for (const r of [...t, z]) {
      if (r === p) continue;
      const f = r[enter];
      if (f === 0) continue;
      for (let j = 0; j < width; j++) r[j] -= f * p[j];
    }
    basis[leave] = enter;
  }
  throw new Error('simplex: no optimum within the iteration limit');
}

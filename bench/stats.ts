/** Figures the benchmark scripts share. */

/** Nearest-rank percentile `p` (0–100) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}

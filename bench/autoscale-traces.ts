/**
 * Usage traces for `npm run bench:autoscale`, generated from fixed seeds so every run replays the
 * same numbers. One sample per minute of one worker on one GPU: TFLOPS in use and VRAM bytes in use.
 *
 * - steady:  10 TFLOPS with Gaussian noise (sd 1), 6 GiB VRAM with small noise; 3 days.
 * - diurnal: 4 TFLOPS at night to 22 by day (a sine with its peak at 14:00) plus noise; VRAM follows
 *            between 5 and 8 GiB; 4 days.
 * - bursty:  6 TFLOPS with bursts to 20-28 TFLOPS lasting 5-15 minutes, a Poisson process of one every
 *            2 hours on average; VRAM 4 GiB, 7 GiB during a burst; 3 days.
 * - leak:    8 TFLOPS; VRAM starts at 4 GiB and leaks 1.5 GiB a day, reserved the way PyTorch's
 *            caching allocator reserves: in 1 GiB segments, so usage rises in steps; the worker is killed
 *            (by the bench) when usage exceeds the VRAM limit in force, and starts again at 4 GiB.
 *
 * `static` is what the workload was declared with before autoscaling: requests sized for its peak,
 * as people do.
 */
import type { Resources } from '../lib/autoscale';
import { prng } from './stats';

export const GIB = 2 ** 30;
export const STEP_S = 60;

export interface Trace {
  readonly name: 'steady' | 'diurnal' | 'bursty' | 'leak';
  readonly static: Resources;
  readonly minutes: number;
  /** TFLOPS in use at minute i. */
  tflops(i: number): number;
  /** VRAM in use at minute i, given the minutes since the worker last (re)started. */
  vram(i: number, sinceStartMin: number): number;
}

/** Box-Muller normal sample. */
function gauss(r: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

/** Precomputes `n` values so that a trace is a pure function of the minute. */
function table(n: number, f: (i: number) => number): (i: number) => number {
  const values = Array.from({ length: n }, (_, i) => f(i));
  return (i) => values[i];
}

export function steady(seed = 1): Trace {
  const r = prng(seed);
  const n = 3 * 1440;
  return {
    name: 'steady',
    minutes: n,
    static: { tflopsRequest: 20, tflopsLimit: 40, vramRequest: 10 * GIB, vramLimit: 10 * GIB },
    tflops: table(n, () => Math.max(0, 10 + gauss(r))),
    vram: table(n, () => 6 * GIB + Math.abs(gauss(r)) * 0.05 * GIB),
  };
}

export function diurnal(seed = 2): Trace {
  const r = prng(seed);
  const n = 4 * 1440;
  const shape = (i: number) => (1 + Math.sin((2 * Math.PI * ((i % 1440) - 8 * 60)) / 1440)) / 2; // peak at 14:00
  return {
    name: 'diurnal',
    minutes: n,
    static: { tflopsRequest: 30, tflopsLimit: 45, vramRequest: 10 * GIB, vramLimit: 10 * GIB },
    tflops: table(n, (i) => Math.max(0, 4 + 18 * shape(i) + gauss(r))),
    vram: table(n, (i) => 5 * GIB + 3 * GIB * shape(i) + Math.abs(gauss(r)) * 0.05 * GIB),
  };
}

export function bursty(seed = 3): Trace {
  const r = prng(seed);
  const n = 3 * 1440;
  const burst = new Array<number>(n).fill(0);
  for (let i = 0; i < n;) {
    i += Math.ceil(-Math.log(1 - r()) * 120); // exponential gaps, mean 2 h
    const length = 5 + Math.floor(r() * 11);
    const height = 20 + r() * 8;
    for (let j = i; j < Math.min(n, i + length); j++) burst[j] = height;
    i += length;
  }
  return {
    name: 'bursty',
    minutes: n,
    static: { tflopsRequest: 25, tflopsLimit: 40, vramRequest: 8 * GIB, vramLimit: 8 * GIB },
    tflops: table(n, (i) => Math.max(0, (burst[i] || 6) + 0.5 * gauss(r))),
    vram: table(n, (i) => (burst[i] ? 7 : 4) * GIB + Math.abs(gauss(r)) * 0.02 * GIB),
  };
}

export function leak(seed = 4): Trace {
  const r = prng(seed);
  const n = 4 * 1440;
  const noise = table(n, () => Math.abs(gauss(r)) * 0.02 * GIB);
  const tflops = table(n, () => Math.max(0, 8 + 0.5 * gauss(r)));
  return {
    name: 'leak',
    minutes: n,
    static: { tflopsRequest: 12, tflopsLimit: 20, vramRequest: 12 * GIB, vramLimit: 12 * GIB },
    tflops,
    vram: (i, since) => 4 * GIB + Math.floor((1.5 * since) / 1440) * GIB + noise(i),
  };
}

/** Total TFLOPS of a replicated service: 40 for 6 h, a step to 120 for 6 h, back to 40; noise sd 3. */
export function replicaStep(seed = 5): { minutes: number; stepAtMin: number; usage: (i: number) => number } {
  const r = prng(seed);
  const n = 18 * 60;
  const stepAtMin = 6 * 60;
  return { minutes: n, stepAtMin, usage: table(n, (i) => Math.max(0, (i >= stepAtMin && i < 12 * 60 ? 120 : 40) + 3 * gauss(r))) };
}

export const TRACES = [steady, diurnal, bursty, leak] as const;

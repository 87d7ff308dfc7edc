/**
 * CPU affinity of bench processes, through util-linux's `taskset`: Node has no affinity API, and a
 * goal "on one core" is only measured when the process under test cannot spread onto another core
 * (V8's GC and compiler threads included) and its load generator cannot take CPU from it.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';

/** The CPUs this process may run on (`Cpus_allowed_list`, e.g. `0-3,6`), in order; empty when unknown. */
export function allowedCpus(): number[] {
  let status: string;
  try {
    status = fs.readFileSync('/proc/self/status', 'utf8');
  } catch {
    return [];
  }
  const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1] ?? '';
  return list
    .split(',')
    .filter(Boolean)
    .flatMap((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return Array.from({ length: to - from + 1 }, (_, i) => from + i);
    });
}

/** Binds every thread of `pid` (and the threads it starts later) to `cpus`; the reason when it could not. */
export function pinToCpus(pid: number, cpus: number[]): string | undefined {
  const r = spawnSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus.join(','), String(pid)], { encoding: 'utf8' });
  if (r.error) return `taskset: ${r.error.message}`;
  if (r.status !== 0) return `taskset exited ${r.status}: ${r.stderr.trim()}`;
  return undefined;
}

/**
 * The process under test alone on the first allowed CPU, `others` on the rest. Says what was done, or
 * why nothing was (fewer than 2 CPUs, no taskset), so a run's figures say which they are.
 */
export function isolate(underTest: number, others: number[]): { pinned: boolean; says: string } {
  const cpus = allowedCpus();
  if (cpus.length < 2) return { pinned: false, says: `not pinned: ${cpus.length} CPU allowed` };
  const failed = pinToCpus(underTest, cpus.slice(0, 1)) ?? others.map((pid) => pinToCpus(pid, cpus.slice(1))).find(Boolean);
  if (failed) return { pinned: false, says: `not pinned: ${failed}` };
  return { pinned: true, says: `alone on CPU ${cpus[0]}, the other processes on CPU ${cpus.slice(1).join(',')}` };
}

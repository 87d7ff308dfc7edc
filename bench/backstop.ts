/**
 * `npm run bench:backstop`: the time from a bypass to its kill. A real process (`sleep`) is entered
 * in a fake /proc as a process of a share's pod that its daemon does not list, and shown by the fake
 * nvidia-smi (test/support/fake-nvidia-smi.js, a Node process per query, as slow to start as the real
 * one is to answer); the backstop's loop (lib/runtime/agent/share/backstop-loop.ts) polls the query
 * at its default interval. Measured: from the trace listing the process to the process's exit, over
 * `--tries=20`; and the time of one query run. Prints the figures and ends with one JSON line.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { identify } from '../lib/runtime/agent/cgroup';
import { queryApps } from '../lib/runtime/agent/nvidia-smi-run';
import { BACKSTOP_DEFAULTS, BackstopLoop } from '../lib/runtime/agent/share/backstop-loop';
import { bypassTrace, fakeNode, MEMBERS_A, replaceTrace, SHARE_A, spawnBypasser, statLine, TRACE } from '../test/runtime/agent/fixtures';
import { intFlag } from './flags';
import { percentile } from './stats';

async function main(): Promise<void> {
  const tries = intFlag('tries', 20);
  const intervalMs = intFlag('interval', BACKSTOP_DEFAULTS.intervalMs);
  const node = fakeNode(undefined, { gpus: TRACE.gpus, steps: [{ apps: [] }] });
  writeFileSync(join(node.procRoot, '101', 'stat'), statLine(101, 'python3', 11));
  const show = (pids: number[]) => replaceTrace(node, bypassTrace(pids));
  const mine = new Set<number>();
  const loop = new BackstopLoop({
    shares: () => [SHARE_A],
    members: async () => MEMBERS_A,
    query: () => queryApps(node.nvidiaSmi, 2_000),
    identify: (pid) => identify(node.procRoot, pid),
    kill: (pid) => {
      if (!mine.has(pid)) throw new Error(`pid ${pid} is not a bench process`);
      process.kill(pid, 'SIGKILL');
    },
    event: async () => undefined,
    remove: async () => undefined,
    intervalMs,
    escalateAfter: Number.MAX_SAFE_INTEGER,
  });
  try {
    show([]);
    const queryMs: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t = performance.now();
      await queryApps(node.nvidiaSmi, 2_000);
      queryMs.push(performance.now() - t);
    }
    await loop.start();
    const killMs: number[] = [];
    for (let i = 0; i < tries; i++) {
      const b = spawnBypasser(node);
      mine.add(b.pid);
      // Spread the starts over the poll interval, as real bypasses start at any moment.
      await new Promise((r) => setTimeout(r, (i * intervalMs) / tries));
      const t0 = Date.now();
      show([b.pid]);
      killMs.push((await b.exited) - t0);
      show([]);
    }
    await loop.stop();
    const sorted = [...killMs].sort((a, b) => a - b);
    const q = [...queryMs].sort((a, b) => a - b);
    console.log(
      `poll interval ${intervalMs} ms; one query run (fake nvidia-smi): p50 ${percentile(q, 50).toFixed(0)} ms, max ${q[q.length - 1].toFixed(0)} ms`,
    );
    console.log(
      `bypass to kill over ${tries} tries: p50 ${percentile(sorted, 50)} ms, p99 ${percentile(sorted, 99)} ms, max ${sorted[sorted.length - 1]} ms`,
    );
    console.log(`all (ms): ${killMs.join(' ')}`);
    console.log(
      JSON.stringify({
        bench: 'backstop',
        tries,
        intervalMs,
        queryP50Ms: Math.round(percentile(q, 50)),
        killP50Ms: percentile(sorted, 50),
        killP99Ms: percentile(sorted, 99),
        killMaxMs: sorted[sorted.length - 1],
        under1s: sorted.filter((x) => x < 1_000).length,
      }),
    );
  } finally {
    await loop.stop();
    node.cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * `kubectl tf plan` on Alibaba's openb trace written as manifests (bench/openb-manifests.ts) against
 * the trace replay's allocatorRun on the same pods in trace order: the same node for every pod and the
 * same unallocated GPU %. The real trace is read where it is (../shared/traces/openb from the repo
 * root, or TF_OPENB_DIR); elsewhere a small trace in the same CSV format is made from a seeded PRNG.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join, resolve } from 'path';
import { allocatorRun, capacity, readNodes, readPods } from '../../../bench/trace-replay';
import { openbPlatform, openbPods } from '../../../bench/openb-manifests';
import { prng } from '../../../bench/stats';
import { clusterFromManifests } from '../../../lib/runtime/cli/manifests';
import { planPlacement } from '../../../lib/runtime/cli/plan';
import { workloadPods } from '../../../lib/runtime/cli/workload-pods';

const OPENB = process.env.TF_OPENB_DIR ?? resolve(__dirname, '../../../../shared/traces/openb');
const REAL = existsSync(join(OPENB, 'openb_node_list_gpu_node.csv'));

/** A trace in openb's CSV format: mixed models and node sizes, shared, whole and multi-GPU pods, CPU-only pods, more than fits. */
function writeSyntheticTrace(dir: string): void {
  const rng = prng(7);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rng() * xs.length)];
  const shapes = [
    [32000, 131072, 2, 'P100'],
    [64000, 262144, 4, 'T4'],
    [96000, 393216, 8, 'G2'],
    [16000, 61440, 1, 'V100M16'],
  ] as const;
  const nodes = Array.from({ length: 32 }, (_, i) => {
    const [cpu, mem, gpus, model] = pick(shapes);
    return `openb-node-${String(i).padStart(4, '0')},${cpu},${mem},${gpus},${model}`;
  });
  const pods = Array.from({ length: 200 }, (_, i) => {
    const kind = rng();
    const n = kind < 0.12 ? 0 : kind < 0.8 ? 1 : pick([2, 4, 8]);
    const g = n === 0 ? 0 : n > 1 || rng() < 0.3 ? 1000 : pick([100, 250, 460, 500, 700]);
    return `openb-pod-${String(i).padStart(4, '0')},${pick([2000, 6000, 11908, 32200])},${pick([4096, 12288, 30000])},${n},${g},,LS,Running,0,1,0`;
  });
  writeFileSync(join(dir, 'openb_node_list_gpu_node.csv'), ['sn,cpu_milli,memory_mib,gpu,model', ...nodes].join('\n'));
  writeFileSync(
    join(dir, 'openb_pod_list_default.csv'),
    ['name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time', ...pods].join('\n'),
  );
}

describe(`kubectl tf plan on the openb trace (${REAL ? OPENB : 'synthetic, seeded'}) against the trace replay`, () => {
  let dir = OPENB;
  beforeAll(() => {
    if (REAL) return;
    dir = mkdtempSync(join(tmpdir(), 'tf-openb-'));
    writeSyntheticTrace(dir);
  });
  afterAll(() => {
    if (!REAL) rmSync(dir, { recursive: true, force: true });
  });

  test('the same node for every pod, in trace order, and the same unallocated GPU %', async () => {
    const nodes = readNodes(dir);
    const pods = readPods(dir, 'default');
    const replay = allocatorRun(nodes, pods, undefined, 'MinFragmentation', 0);
    const plan = await planPlacement(clusterFromManifests(openbPlatform(nodes)), workloadPods(openbPods(pods)).pods);

    expect(plan.pods.map((p) => p.node ?? '')).toEqual(replay.outcome);
    const allocated = pods.reduce((s, p, i) => s + (replay.outcome[i] !== '' ? p.n * p.g : 0), 0);
    expect(plan.unallocatedPct).toBeCloseTo(100 - (100 * allocated) / capacity(nodes), 9);
    // Not a trivial agreement: both placed pods of every kind, and both turned some away.
    expect(plan.placed).toBeGreaterThan(pods.length / 2);
    expect(plan.unplaced).toBeGreaterThan(0);
    for (const n of [0, 1]) expect(pods.some((p, i) => p.n === n && replay.outcome[i] !== '')).toBe(true);
    expect(pods.some((p, i) => p.n > 1 && replay.outcome[i] !== '')).toBe(true);
  }, 60_000);
});

/**
 * `kubectl tf` against the real control plane, run the way users run it: the bundled `kubectl-tf` on
 * PATH, found by the real kubectl as a plugin, reading the cluster through KUBECONFIG. Four GPU pods
 * placed by the real kube-scheduler and extender fill four A100s to 250 of 312 TFLOPS; a fifth pod of
 * 100 TFLOPS waits. `top` is checked against the GPU and pod objects, `why` against the scheduler's
 * condition and the room left, `plan --from-cluster` against the capacity the objects declare.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI_BUNDLE_PATH } from '../../lib/contract/bundle';
import { ENABLED_LABEL, GPU_IDS_ANNOTATION } from '../../lib/model/metadata-keys';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { binaryPath } from '../envtest/assets';
import { describeControlPlane, waitFor } from '../support/control-plane';
import type { Obj } from '../support/e2e';
import { a100Labels, controllerSuite, installController, kwokNode, localGpuPod, RunningController, writeYaml } from '../support/e2e';
import { eventually } from '../runtime/fixtures';

const { synth, user } = controllerSuite(120_000);

const POOL = 'tf-pool';
const NS = 'team';
const NODES = ['tf-0', 'tf-1'];

const gpuPod = (name: string, tflops: string) => localGpuPod({ name, namespace: NS, pool: POOL, tflops, vram: '10Gi', cpu: '10m' });

describeControlPlane('kubectl tf', { kwok: true, users: [user] }, (cp) => {
  let ctl: RunningController;
  let bin: string;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
  /** `kubectl tf ...` through the real kubectl's plugin lookup. */
  const tf = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        binaryPath('kubectl'),
        ['tf', ...args],
        { env: { ...process.env, KUBECONFIG: cp().kubeconfig, PATH: `${bin}:${process.env.PATH}` }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const tfJson = async (args: string[]) => {
    const r = await tf([...args, '-o', 'json']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    bin = mkdtempSync(path.join(tmpdir(), 'kubectl-tf-'));
    const bundle = path.resolve(__dirname, '../..', CLI_BUNDLE_PATH);
    expect(existsSync(bundle)).toBe(true);
    symlinkSync(bundle, path.join(bin, 'kubectl-tf'));
    ctl = await installController(cp(), synth.controller, synth.dir, { replicas: 1, schedulers: true });
    const apply = (name: string, docs: Obj[]) => cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, name, docs)]);
    await apply('tf-nodes.yaml', [
      renderGpuPool(POOL, { tflopsOversellRatio: 100 }),
      ...NODES.map((name) => kwokNode({ name, cpu: '64', labels: a100Labels(POOL, 2) })),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    ]);
    await waitFor('controller ready', () => ctl.replicas[0].ready(), 60_000, 200);
    await eventually(async () => expect((await get(['gpupool', POOL])).status).toMatchObject({ totalNodes: 2, totalGPUs: 4 }), 60_000);
    // One at a time: each takes a GPU of its own (250 of 312 TFLOPS leaves no room for a second).
    for (let i = 0; i < 4; i++) {
      await cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(gpuPod(`run-${i}`, '250')) });
      await eventually(async () => expect((await get(['pod', '-n', NS, `run-${i}`])).spec.nodeName).toBeDefined(), 30_000);
    }
    await cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(gpuPod('waits', '100')) });
    await eventually(async () => {
      const cond = ((await get(['pod', '-n', NS, 'waits'])).status.conditions ?? []).find((c: Obj) => c.type === 'PodScheduled');
      expect(cond).toMatchObject({ status: 'False', reason: 'Unschedulable' });
    }, 30_000);
  }, 180_000);

  afterAll(async () => {
    await ctl?.stop();
    if (bin) rmSync(bin, { recursive: true, force: true });
  });

  test('top gpus, pools and pods show what the GPU and pod objects hold', async () => {
    const gpus = (await get(['gpus'])).items as Obj[];
    const pods = ((await get(['pods', '-n', NS])).items as Obj[]).filter((p) => p.spec.nodeName);
    const holders = new Map<string, string[]>();
    for (const p of pods)
      for (const g of p.metadata.annotations[GPU_IDS_ANNOTATION].split(',')) holders.set(g, [...(holders.get(g) ?? []), p.metadata.name]);

    const top = (await tfJson(['top', 'gpus'])) as Obj[];
    expect(top.map((g) => g.name).sort()).toEqual(gpus.map((g) => g.metadata.name).sort());
    for (const g of top) {
      expect(g.shares.map((s: Obj) => s.pod)).toEqual(holders.get(g.name) ?? []);
      expect(g.tflops).toBe(312);
      for (const s of g.shares) expect(s).toMatchObject({ namespace: NS, tflopsRequest: 250, vramRequest: 10 * 2 ** 30 });
    }
    const table = (await tf(['top', 'gpus'])).stdout.split('\n');
    expect(table[0]).toMatch(/^GPU\s+NODE\s+POOL\s+MODEL\s+SHARES\s+TFLOPS\s+REQUESTED/);
    for (const g of gpus) expect(table.find((l) => l.startsWith(g.metadata.name))).toMatch(/\s1\s+312\s+250 \(80%\)/);

    const [pool] = (await tfJson(['top', 'pools'])) as Obj[];
    expect(pool).toMatchObject({ name: POOL, nodes: 2, gpus: 4, tflops: 4 * 312, tflopsRequested: 1000 });

    const byPod = await tfJson(['top', 'pods', '-n', NS]);
    expect(byPod.pods.map((p: Obj) => p.name).sort()).toEqual(pods.map((p) => p.metadata.name).sort());
    expect(byPod.pending).toEqual([expect.objectContaining({ name: 'waits', pool: POOL, tflopsRequest: 100, reason: 'Unschedulable' })]);
    expect((await tfJson(['top', 'pods', '-n', 'elsewhere'])).pods).toEqual([]);
  });

  test('why: the reasons per node of a waiting pod and what would let it fit; the share of a placed one', async () => {
    const r = await tf(['why', 'waits', '-n', NS]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(`Pod ${NS}/waits is Pending: it asks 1 GPU x (100 TFLOPS, 10Gi VRAM) in pool ${POOL}.`);
    expect(lines).toContain(`No node of pool ${POOL} can take it (2 nodes):`);
    expect(lines).toContain('  2 nodes: not enough free TFLOPS on any GPU');
    // 312 - 250 = 62 TFLOPS are left on every GPU.
    expect(r.stdout).toMatch(/It would fit now with 62% of its request: tflops-request 62 and vram-request .* \(node tf-[01]\)\./);
    expect(r.stdout).toMatch(/Or on node tf-[01] once this share is released: team\/run-[0-3] \(250 TFLOPS, 10Gi\)\./);
    expect(r.stdout).toContain('kube-scheduler: 0/2 nodes are available');

    const running = await get(['pod', '-n', NS, 'run-0']);
    const placed = await tfJson(['why', 'run-0', '-n', NS]);
    expect(placed).toMatchObject({
      state: 'Placed',
      allocation: { node: running.spec.nodeName, gpuIds: running.metadata.annotations[GPU_IDS_ANNOTATION].split(',') },
    });

    const missing = await tf(['why', 'nope', '-n', NS]);
    expect(missing).toMatchObject({ code: 1, stdout: '', stderr: `error: pod "nope" not found in namespace "${NS}"\n` });
  });

  test('plan --from-cluster places new pods in the room left, says why the rest wait, and draws the GPUs', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kubectl-tf-plan-'));
    try {
      const workload = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'next', namespace: NS },
        spec: {
          replicas: 5,
          selector: { matchLabels: { app: 'next' } },
          template: {
            ...gpuPod('', '50'),
            metadata: { ...gpuPod('', '50').metadata, name: undefined, labels: { [ENABLED_LABEL]: 'true', app: 'next' } },
          },
        },
      };
      const file = writeYaml(dir, 'next.yaml', [workload]);
      const svg = path.join(dir, 'plan.svg');
      const r = await tf(['plan', '-f', file, '--from-cluster', '--svg', svg, '-o', 'json']);
      // Four GPUs with 62 TFLOPS left take one 50 TFLOPS pod each; the fifth does not fit: exit 3.
      expect(r.code).toBe(3);
      const plan = JSON.parse(r.stdout);
      expect(plan).toMatchObject({ placed: 4, unplaced: 1 });
      const gpus = (await get(['gpus'])).items as Obj[];
      expect(new Set(plan.pods.flatMap((p: Obj) => p.gpus ?? []))).toEqual(new Set(gpus.map((g) => g.metadata.name)));
      expect(plan.pods.find((p: Obj) => !p.node)).toMatchObject({ name: 'next-4', reason: '4 GPUs: not enough free TFLOPS' });
      const capacity = gpus.reduce((s, g) => s + Number(g.status.capacity.tflops), 0);
      expect(plan.unallocatedPct).toBeCloseTo((100 * (capacity - 1000 - 4 * 50)) / capacity, 6);
      const picture = readFileSync(svg, 'utf8');
      for (const g of gpus) expect(picture).toContain(`>${g.metadata.name}<`);
      for (let i = 0; i < 4; i++) expect(picture).toContain(`>next-${i}<`);
      expect(picture).not.toContain('>next-4<');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

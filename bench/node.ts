/**
 * Pods to Running on a real node (test/support/node: kubelet, containerd, runc, bridge CNI, inside
 * the test network namespace), GPU pods against plain pods, in one run:
 *
 *  - GPU pods: opted-in pods of a small share (1 TFLOPS, 1 GiB) on a node GpuNode labels with eight
 *    A100s: admitted by the webhook, placed by kube-scheduler with our extender (the shipped bundle
 *    as one controller process beside its kube-scheduler, as test/e2e/install.test.ts runs it),
 *    started by the kubelet with the downward-API variables and the limits volume;
 *  - plain pods: the same pods without the opt-in label and annotations, placed by the default
 *    kube-scheduler.
 *
 * Each round creates N pods with one `kubectl create -f` and times until every container runs, then
 * deletes them and waits until they are gone. Rounds run A B B A (plain, GPU, GPU, plain) so drift
 * falls on both sides alike; the figures are the means. Each round also notes when every pod was bound. Also the node's start time (containerd,
 * images loaded, kubelet Ready, kube-proxy).
 *
 * `npm run bench:node [-- --pods=50 --rounds=2]`: runs inside the namespaces (scripts/in-netns.ts).
 * Prints figures and ends with one JSON line
 * `{"gpuPodsRunningS":...,"plainPodsRunningS":...,"nodeStartS":...}` (goal: GPU within 1.2x of plain).
 */
import { ENABLED_LABEL } from '../lib/model/keys';
import { renderGpuNode } from '../lib/render/gpu-node';
import { renderGpuPool } from '../lib/render/gpu-pool';
import { ControlPlane } from '../test/support/control-plane/control-plane';
import { waitFor } from '../test/support/control-plane/process';
import { controllerIdentity, installController, RunningController, synthToTemp, writeYaml } from '../test/support/control-plane/install';
import { busyboxContainer, defaultServiceAccount, NODE_NAME, RealNode } from '../test/support/node';
import { realNodeUnavailable } from '../test/support/node/node';
import { intFlag } from './flags';

const PODS = intFlag('pods', 50);
const ROUNDS = intFlag('rounds', 2);
const NS = 'bench';
const POOL = 'bench';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function pods(kind: 'gpu' | 'plain', round: number): Obj[] {
  return Array.from({ length: PODS }, (_, i) => ({
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: `${kind}-${round}-${i}`, namespace: NS,
      labels: { bench: kind, ...(kind === 'gpu' ? { [ENABLED_LABEL]: 'true' } : {}) },
      ...(kind === 'gpu' ? { annotations: { 'tensor-fusion.ai/gpupool': POOL, 'tensor-fusion.ai/is-local-gpu': 'true', 'tensor-fusion.ai/tflops-request': '1', 'tensor-fusion.ai/vram-request': '1Gi' } } : {}),
    },
    spec: {
      terminationGracePeriodSeconds: 0,
      containers: [busyboxContainer('main')],
    },
  }));
}

async function main(): Promise<void> {
  const why = realNodeUnavailable();
  if (why) throw new Error(`bench:node needs a real node: ${why}`);
  const synth = synthToTemp();
  const { user } = controllerIdentity(synth.controller);
  const cp = await ControlPlane.start({ node: true, controllerManager: true, scheduler: true, users: [user] });
  let node: RealNode | undefined;
  let ctl: RunningController | undefined;
  try {
    node = await RealNode.start(cp);
    console.log(`control plane started in ${(cp.startMs / 1000).toFixed(1)} s, node in ${(node.startMs / 1000).toFixed(1)} s`);
    ctl = await installController(cp, synth.controller, synth.dir, { replicas: 1, schedulers: true });
    await cp.kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'bench.yaml', [
      renderGpuNode({ nodeName: NODE_NAME, pools: [POOL], gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' } }),
      renderGpuPool(POOL, { tflopsOversellRatio: 100 }),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    ])]);
    await waitFor('controller ready', () => ctl!.replicas[0].ready(), 60_000, 200);
    await defaultServiceAccount(cp, NS);
    await waitFor('GPU pool counted', async () => {
      const r = await cp.kubectl(['get', 'gpupool', POOL, '-o', 'jsonpath={.status.totalGPUs}']);
      return r.stdout.trim() === '8';
    }, 60_000, 500);

    const list = async (kind: string): Promise<Obj[]> => JSON.parse(await cp.kubectlOk(['get', 'pods', '-n', NS, '-l', `bench=${kind}`, '-o', 'json'])).items;
    /** Seconds from the start of `kubectl create` until it returns, until every pod is bound, and until every container runs. */
    const round = async (kind: 'gpu' | 'plain', r: number): Promise<{ created: number; bound: number; running: number }> => {
      const file = writeYaml(synth.dir, `${kind}-${r}.yaml`, pods(kind, r));
      const started = Date.now();
      let bound = 0;
      await cp.kubectlOk(['create', '-f', file]);
      const created = (Date.now() - started) / 1000;
      await waitFor(`${PODS} ${kind} pods running`, async () => {
        const items = await list(kind);
        if (!bound && items.length === PODS && items.every((p) => p.spec.nodeName)) bound = (Date.now() - started) / 1000;
        return items.length === PODS && items.every((p) => p.status.containerStatuses?.every((c: Obj) => c.state.running));
      }, 600_000, 200);
      const running = (Date.now() - started) / 1000;
      await cp.kubectlOk(['delete', 'pods', '-n', NS, '-l', `bench=${kind}`, '--grace-period=0', '--wait=false']);
      await waitFor(`${kind} pods gone`, async () => (await list(kind)).length === 0, 600_000, 500);
      console.log(`  round ${r} ${kind}: ${PODS} pods created in ${created.toFixed(1)} s, bound in ${bound.toFixed(1)} s, running in ${running.toFixed(1)} s`);
      return { created, bound, running };
    };
    const times: Record<'gpu' | 'plain', { created: number; bound: number; running: number }[]> = { gpu: [], plain: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of r % 2 === 0 ? (['plain', 'gpu'] as const) : (['gpu', 'plain'] as const)) times[kind].push(await round(kind, r));
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const gpu = mean(times.gpu.map((t) => t.running));
    const plain = mean(times.plain.map((t) => t.running));
    console.log(`GPU pods ${gpu.toFixed(1)} s, plain pods ${plain.toFixed(1)} s (means of ${ROUNDS}): ratio ${(gpu / plain).toFixed(2)} (goal <= 1.2)`);
    console.log(JSON.stringify({
      gpuPodsRunningS: Number(gpu.toFixed(2)), plainPodsRunningS: Number(plain.toFixed(2)), nodeStartS: Number((node.startMs / 1000).toFixed(2)),
      ratio: Number((gpu / plain).toFixed(3)), pods: PODS, rounds: ROUNDS,
      gpuCreatedS: times.gpu.map((t) => t.created), plainCreatedS: times.plain.map((t) => t.created),
      gpuBoundS: times.gpu.map((t) => t.bound), plainBoundS: times.plain.map((t) => t.bound),
      gpuRunningS: times.gpu.map((t) => t.running), plainRunningS: times.plain.map((t) => t.running),
      controlPlaneStartS: Number((cp.startMs / 1000).toFixed(2)), meetsGoal: gpu <= 1.2 * plain,
    }));
  } finally {
    await ctl?.stop();
    await node?.stop();
    await cp.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

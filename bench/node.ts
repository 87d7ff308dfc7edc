/**
 * Pods to Running on a real node (test/support/node: kubelet, containerd, runc, bridge CNI, inside
 * the test network namespace), GPU pods against plain pods, in one run:
 *
 *  - hard GPU pods (`gpu`): opted-in pods of a small share (1 TFLOPS, 1 GiB) on a node GpuNode labels
 *    with eight A100s: admitted by the webhook, placed by kube-scheduler with our extender (the
 *    shipped bundle as one controller process beside its kube-scheduler, as test/e2e/install.test.ts
 *    runs it), and started by the kubelet with the devices, MPS daemon and limits the node agent's
 *    device plugin gives (test/support/node/gpu-agent.ts: the rendered DaemonSet with a fake
 *    nvidia-cuda-mps-control, a small static C program like the real one, under 1 MiB RSS a daemon);
 *  - shared GPU pods (`shared`): the same pods in the pool switched to `shared` isolation, started with
 *    the downward-API variables and the limits volume: the delivery path before hard isolation;
 *  - plain pods: the same pods without the opt-in label and annotations, placed by the default
 *    kube-scheduler;
 *  - with `--dra`, DRA pods (`dra`): the same pods in the pool switched to `shareDelivery: DRA` (the
 *    install's DRA side applied first), each given its claim by the webhook's template, allocated by
 *    kube-scheduler's DRA allocator just before its bind and prepared by the agent's kubelet plugin.
 *
 * Each round creates N pods with one `kubectl create -f` and times until every pod is bound and until
 * every container runs, then deletes them and waits until they are gone. Rounds run plain, shared,
 * gpu, then gpu, shared, plain, so drift falls on all sides alike; the figures are the means. Also the
 * node's start time (containerd, images loaded, kubelet Ready, kube-proxy).
 *
 * `npm run bench:node [-- --pods=50 --rounds=2 --dra]`: runs inside the namespaces (scripts/in-netns.ts).
 * Prints figures and ends with one JSON line
 * `{"gpuPodsRunningS":...,"plainPodsRunningS":...,"nodeStartS":...}` (goal: GPU within 1.2x of plain),
 * with `bindToRunningRatio`: bind-to-running of hard GPU pods over shared ones, and the agent's p99
 * answer times to the kubelet's `Allocate` and `PreStartContainer` (`allocateP99Ms`, `preStartP99Ms`:
 * the upper bound of the histogram bucket that holds the 99th percentile, from the agent's /metrics).
 * With `--dra`: `draPodsRunningS` and `draOverHardBindToRunning` (bind to running of DRA pods over the
 * device plugin's hard ones: a DRA claim is allocated in the bind's PreBind, so bind is allocation).
 */
import { ENABLED_LABEL, SHARE_RESOURCE } from '../lib/model/metadata-keys';
import { renderGpuPool } from '../lib/render/gpu-pool';
import { httpGet, waitFor } from '../test/support/control-plane/process';
import { AGENT_DEFAULTS, AGENT_METRICS } from '../lib/contract/agent';
import { writeYaml } from '../test/support/control-plane/install';
import { busyboxContainer } from '../test/support/node';
import { draInstall } from '../test/support/dra';
import { NODE_NAME } from '../test/support/node';
import { intFlag } from './flags';
import { startRealNodeBench } from './real-node';

const PODS = intFlag('pods', 50);
const ROUNDS = intFlag('rounds', 2);
const NS = 'bench';
const POOL = 'bench';
const WITH_DRA = process.argv.includes('--dra');

type Obj = Record<string, any>;

type Kind = 'gpu' | 'shared' | 'plain' | 'dra';
/** How each GPU kind's pool is set: isolation and share delivery. */
const POOL_SETTINGS = {
  gpu: { isolation: 'hard', shareDelivery: 'DevicePlugin' },
  shared: { isolation: 'shared', shareDelivery: 'DevicePlugin' },
  dra: { isolation: 'hard', shareDelivery: 'DRA' },
} as const;

function pods(kind: Kind, round: number): Obj[] {
  const opted = kind !== 'plain';
  return Array.from({ length: PODS }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${kind}-${round}-${i}`,
      namespace: NS,
      labels: { bench: kind, ...(opted ? { [ENABLED_LABEL]: 'true' } : {}) },
      ...(opted
        ? {
            annotations: {
              'tensor-fusion.ai/gpupool': POOL,
              'tensor-fusion.ai/is-local-gpu': 'true',
              'tensor-fusion.ai/tflops-request': '1',
              'tensor-fusion.ai/vram-request': '1Gi',
            },
          }
        : {}),
    },
    spec: {
      terminationGracePeriodSeconds: 0,
      containers: [busyboxContainer('main')],
    },
  }));
}

/** The upper bound (ms) of the bucket holding the 99th percentile of the agent's `method` answers. */
function p99Ms(exposition: string, method: string): number | null {
  const buckets = [...exposition.matchAll(new RegExp(`^${AGENT_METRICS.devicePluginSeconds}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm'))]
    .filter((m) => m[1].includes(`method="${method}"`) && m[1].includes('outcome="ok"'))
    .map((m) => ({ le: Number(/le="([^"]+)"/.exec(m[1])![1]), count: Number(m[2]) }))
    .sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  if (!total) return null;
  const hit = buckets.find((b) => b.count >= 0.99 * total)!;
  return Number.isFinite(hit.le) ? hit.le * 1000 : null;
}

async function main(): Promise<void> {
  const bench = await startRealNodeBench('bench:node', { gpus: 8, pool: POOL, ns: NS });
  const { synth, cp, node, agent } = bench;
  console.log(`control plane started in ${(cp.startMs / 1000).toFixed(1)} s, node in ${(node.startMs / 1000).toFixed(1)} s`);
  try {
    if (WITH_DRA) await cp.kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'dra.yaml', draInstall(bench.ctl.namespace))]);
    /** Sets the pool for `kind`, and waits until the webhook admits a pod that way (a server dry run) and, for DRA, the node's slice. */
    const delivery = async (kind: Exclude<Kind, 'plain'>) => {
      await cp.kubectlOk([
        'apply',
        '--server-side',
        '-f',
        writeYaml(synth.dir, `pool-${kind}.yaml`, [renderGpuPool(POOL, { tflopsOversellRatio: 100, ...POOL_SETTINGS[kind] })]),
      ]);
      await waitFor(
        `webhook admits ${kind} pods`,
        async () => {
          const probe = JSON.parse(
            await cp.kubectlOk(['create', '--dry-run=server', '-o', 'json', '-f', '-'], { input: JSON.stringify(pods(kind, 99)[0]) }),
          );
          const resource = probe.spec.containers[0].resources?.limits?.[SHARE_RESOURCE] !== undefined;
          return resource === (kind === 'gpu') && (probe.spec.resourceClaims !== undefined) === (kind === 'dra');
        },
        60_000,
        500,
      );
      // The agent looks at its pool's delivery every 30 s.
      if (kind === 'dra')
        await waitFor(
          `${NODE_NAME}'s ResourceSlice`,
          async () => (await cp.kubectl(['get', 'resourceslices', '-o', 'name'])).stdout.includes(NODE_NAME),
          120_000,
          500,
        );
    };

    const list = async (kind: string): Promise<Obj[]> =>
      JSON.parse(await cp.kubectlOk(['get', 'pods', '-n', NS, '-l', `bench=${kind}`, '-o', 'json'])).items;
    /** Seconds from the start of `kubectl create` until it returns, until every pod is bound, and until every container runs. */
    const round = async (kind: Kind, r: number): Promise<{ created: number; bound: number; running: number }> => {
      if (kind !== 'plain') await delivery(kind);
      const file = writeYaml(synth.dir, `${kind}-${r}.yaml`, pods(kind, r));
      const started = Date.now();
      let bound = 0;
      await cp.kubectlOk(['create', '-f', file]);
      const created = (Date.now() - started) / 1000;
      await waitFor(
        `${PODS} ${kind} pods running`,
        async () => {
          const items = await list(kind);
          if (!bound && items.length === PODS && items.every((p) => p.spec.nodeName)) bound = (Date.now() - started) / 1000;
          return items.length === PODS && items.every((p) => p.status.containerStatuses?.every((c: Obj) => c.state.running));
        },
        600_000,
        200,
      );
      const running = (Date.now() - started) / 1000;
      await cp.kubectlOk(['delete', 'pods', '-n', NS, '-l', `bench=${kind}`, '--grace-period=0', '--wait=false']);
      await waitFor(`${kind} pods gone`, async () => (await list(kind)).length === 0, 600_000, 500);
      console.log(
        `  round ${r} ${kind}: ${PODS} pods created in ${created.toFixed(1)} s, bound in ${bound.toFixed(1)} s, running in ${running.toFixed(1)} s`,
      );
      return { created, bound, running };
    };
    const times: Record<Kind, { created: number; bound: number; running: number }[]> = { gpu: [], shared: [], plain: [], dra: [] };
    const kinds: Kind[] = ['plain', 'shared', 'gpu', ...(WITH_DRA ? (['dra'] as const) : [])];
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of r % 2 === 0 ? kinds : [...kinds].reverse()) times[kind].push(await round(kind, r));
    }
    const agentPod = JSON.parse(await cp.kubectlOk(['get', 'pods', '-n', agent.namespace, '-o', 'json'])).items[0] as Obj;
    const exposition = (await httpGet(`http://${agentPod.status.podIP}:${AGENT_DEFAULTS.port}/metrics`)).body;
    const allocateP99Ms = p99Ms(exposition, 'Allocate');
    const preStartP99Ms = p99Ms(exposition, 'PreStartContainer');
    console.log(`agent answers (p99, histogram bucket bound): Allocate ${allocateP99Ms} ms, PreStartContainer ${preStartP99Ms} ms`);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const gpu = mean(times.gpu.map((t) => t.running));
    const plain = mean(times.plain.map((t) => t.running));
    const bindToRunning = (k: Kind) => mean(times[k].map((t) => t.running - t.bound));
    console.log(
      `GPU pods ${gpu.toFixed(1)} s, plain pods ${plain.toFixed(1)} s (means of ${ROUNDS}): ratio ${(gpu / plain).toFixed(2)} (goal <= 1.2)`,
    );
    console.log(
      `bind to running: hard ${bindToRunning('gpu').toFixed(1)} s, shared (before) ${bindToRunning('shared').toFixed(1)} s: ratio ${(bindToRunning('gpu') / bindToRunning('shared')).toFixed(2)}`,
    );
    const dra = WITH_DRA
      ? {
          draPodsRunningS: Number(mean(times.dra.map((t) => t.running)).toFixed(2)),
          draOverHardBindToRunning: Number((bindToRunning('dra') / bindToRunning('gpu')).toFixed(3)),
        }
      : {};
    if (WITH_DRA)
      console.log(
        `bind to running: DRA ${bindToRunning('dra').toFixed(1)} s, device plugin (hard) ${bindToRunning('gpu').toFixed(1)} s: ratio ${dra.draOverHardBindToRunning}`,
      );
    console.log(
      JSON.stringify({
        ...dra,
        sharedPodsRunningS: Number(mean(times.shared.map((t) => t.running)).toFixed(2)),
        bindToRunningS: {
          hard: Number(bindToRunning('gpu').toFixed(2)),
          shared: Number(bindToRunning('shared').toFixed(2)),
          plain: Number(bindToRunning('plain').toFixed(2)),
          ...(WITH_DRA ? { dra: Number(bindToRunning('dra').toFixed(2)) } : {}),
        },
        bindToRunningRatio: Number((bindToRunning('gpu') / bindToRunning('shared')).toFixed(3)),
        allocateP99Ms,
        preStartP99Ms,
        gpuPodsRunningS: Number(gpu.toFixed(2)),
        plainPodsRunningS: Number(plain.toFixed(2)),
        nodeStartS: Number((node.startMs / 1000).toFixed(2)),
        ratio: Number((gpu / plain).toFixed(3)),
        pods: PODS,
        rounds: ROUNDS,
        gpuCreatedS: times.gpu.map((t) => t.created),
        plainCreatedS: times.plain.map((t) => t.created),
        gpuBoundS: times.gpu.map((t) => t.bound),
        plainBoundS: times.plain.map((t) => t.bound),
        gpuRunningS: times.gpu.map((t) => t.running),
        plainRunningS: times.plain.map((t) => t.running),
        controlPlaneStartS: Number((cp.startMs / 1000).toFixed(2)),
        meetsGoal: gpu <= 1.2 * plain,
      }),
    );
  } finally {
    await bench.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

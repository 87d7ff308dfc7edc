/**
 * The node side on a real node (test/support/node: kubelet, containerd, runc, inside the test network
 * namespace), with the agent as `TensorFusionController` renders it and the fakes of
 * test/support/node/gpu-agent.ts (nvidia-smi replaying a trace, and nvidia-cuda-mps-control, both
 * static C programs):
 *
 *  - **bypass to kill**: in each of `--bypasses` share pods (one try a pod: a third breach deletes the
 *    pod) a process is started with `kubectl exec` and listed by the fake nvidia-smi as a plain
 *    compute process of the pod's GPU (what a process that points `CUDA_MPS_PIPE_DIRECTORY` elsewhere
 *    shows); timed from the trace listing it to the process's end, by the agent's backstop;
 *  - **agent restart**: `--pods` running share pods, each with an MPS client of its share's daemon (a
 *    fake client process on the host, connected to the pod's pipe folder, which ends when its daemon
 *    does); the agent's pod deleted, and timed until the new agent is ready and until its log says
 *    the last share was adopted; then, once every share's daemon answers with its limits, how many
 *    daemons are the same processes (adopted), how many were started again, and how many clients
 *    are still connected and listed by their daemon.
 *
 * On the test machine the kubelet runs on cgroup v1 (a hybrid host), where runc finds a container's
 * processes through their v1 cgroups: the agent moves each daemon into its share's folder of every v1
 * hierarchy and of the unified one, and the bench counts, before the delete, the daemons that are in
 * no cgroup of the agent's container any more.
 *
 * Each bypass's time is split by the agent's log line of the kill (share/backstop-loop.ts): from the
 * listing to the start of the poll that saw it, that poll's nvidia-smi query, the /proc reads, the
 * daemon's member lists, the re-check before the kill, and from the kill to the process's end.
 *
 * `npm run bench:agent-restart [-- --pods=30 --bypasses=20]`: runs inside the namespaces
 * (scripts/in-netns.ts). Ends with one JSON line.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import * as path from 'node:path';
import { ENABLED_LABEL } from '../lib/model/metadata-keys';
import { podOfPid } from '../lib/runtime/agent/cgroup';
import { mpsCommand } from '../lib/runtime/agent/mps/control';
import { waitFor } from '../test/support/control-plane/process';
import { writeYaml } from '../test/support/control-plane/install';
import { busyboxContainer } from '../test/support/node';
import { FAKE_MPS_CONTROL } from '../test/support/node/gpu-agent';
import { intFlag } from './flags';
import { startRealNodeBench } from './real-node';

const PODS = intFlag('pods', 30);
const BYPASSES = Math.min(intFlag('bypasses', 20, 0), PODS);
const NS = 'bench';
const POOL = 'bench';
const GPUS = 8;

/** Whether every line of `pid`'s /proc cgroup file (v1 hierarchies and the unified one) names the share's folder. */
function outOfContainer(pid: number, share: string): boolean {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').filter(Boolean);
  return lines.length > 0 && lines.every((l) => l.endsWith(`/${share}`));
}

/** Whether a process has ended: gone, or a zombie its parent has not reaped yet. */
function ended(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .startsWith('Z');
  } catch {
    return true;
  }
}

/** One kill's split, from the agent's log line of it. */
interface KillSplit {
  waitMs: number;
  queryMs: number;
  identifyMs: number;
  membersMs: number;
  recheckMs: number;
  killToEndMs: number;
}

type Obj = Record<string, any>;

const sharePods = (): Obj[] =>
  Array.from({ length: PODS }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `share-${i}`,
      namespace: NS,
      labels: { bench: 'share', [ENABLED_LABEL]: 'true' },
      annotations: {
        'tensor-fusion.ai/gpupool': POOL,
        'tensor-fusion.ai/is-local-gpu': 'true',
        'tensor-fusion.ai/tflops-request': '1',
        'tensor-fusion.ai/vram-request': '1Gi',
      },
    },
    spec: { terminationGracePeriodSeconds: 0, containers: [busyboxContainer('main')] },
  }));

const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/** The host pid of the `sleep 600` the bench started in `pod`'s container. */
async function sleeperOf(pod: Obj): Promise<number> {
  let pid = 0;
  await waitFor(
    `the bypassing process of ${pod.metadata.name}`,
    async () => {
      for (const d of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
        const cmd = existsSync(`/proc/${d}/cmdline`) ? readFileSync(`/proc/${d}/cmdline`, 'utf8') : '';
        if (cmd.startsWith('sleep\u0000600') && (await podOfPid('/proc', Number(d)))?.podUid === pod.metadata.uid) pid = Number(d);
      }
      return pid > 0;
    },
    10_000,
    50,
  );
  return pid;
}

async function main(): Promise<void> {
  const bench = await startRealNodeBench('bench:agent-restart', { gpus: GPUS, pool: POOL, ns: NS });
  const { synth, cp, agent: fake } = bench;
  const clients: ChildProcess[] = [];
  try {
    const list = async (): Promise<Obj[]> =>
      JSON.parse(await cp.kubectlOk(['get', 'pods', '-n', NS, '-l', 'bench=share', '-o', 'json'])).items;
    await cp.kubectlOk(['create', '-f', writeYaml(synth.dir, 'shares.yaml', sharePods())]);
    await waitFor(
      `${PODS} share pods running`,
      async () => {
        const items = await list();
        return items.length === PODS && items.every((p) => p.status.containerStatuses?.every((c: Obj) => c.state.running));
      },
      600_000,
      500,
    );
    const pods = await list();
    const dirsOf = (pod: Obj) => ({
      pipeDir: path.join(fake.mpsDir, pod.metadata.uid, 'pipe'),
      logDir: path.join(fake.mpsDir, pod.metadata.uid, 'log'),
    });
    const daemonPid = (pod: Obj) => Number(readFileSync(path.join(dirsOf(pod).pipeDir, 'nvidia-cuda-mps-control.pid'), 'utf8'));
    const gpuOf = (pod: Obj) => Number(JSON.parse(pod.metadata.annotations['tensor-fusion.ai/allocation']).gpuIds[0].split('-').pop());

    // Bypass to kill, one try a pod.
    const killMs: number[] = [];
    const tries: { pid: number; listed: number; gone: number }[] = [];
    for (const pod of pods.slice(0, BYPASSES)) {
      await cp.kubectlOk(['exec', '-n', NS, pod.metadata.name, '--', 'sh', '-c', 'sleep 600 >/dev/null 2>&1 </dev/null & echo started']);
      const pid = await sleeperOf(pod);
      const listed = Date.now();
      fake.trace([{ pid, gpu: gpuOf(pod), mib: 1024, sm: 20 }]);
      await waitFor(`process ${pid} killed`, async () => ended(pid), 30_000, 5);
      const gone = Date.now();
      killMs.push(gone - listed);
      tries.push({ pid, listed, gone });
      fake.trace([]);
    }
    // The agent's kill lines (pino, epoch ms), for the split of each try.
    const agentLog = await cp.kubectlOk(['logs', '-n', fake.namespace, '-l', `app.kubernetes.io/component=node-agent`, '--tail=-1']);
    const killLines = agentLog
      .split('\n')
      .filter((l) => l.includes('"pollStartedAt"'))
      .map((l) => JSON.parse(l) as { msg: string; time: number } & Omit<KillSplit, 'waitMs' | 'killToEndMs'> & { pollStartedAt: number });
    const splits = tries.map(({ pid, listed, gone }): KillSplit | null => {
      const k = killLines.find((l) => l.msg.startsWith(`process ${pid} `));
      return k
        ? {
            waitMs: k.pollStartedAt - listed,
            queryMs: k.queryMs,
            identifyMs: k.identifyMs,
            membersMs: k.membersMs,
            recheckMs: k.recheckMs,
            killToEndMs: gone - k.time,
          }
        : null;
    });
    for (const [i, sp] of splits.entries()) if (sp) console.log(`bypass ${i}: ${killMs[i]} ms = ${JSON.stringify(sp)}`);
    if (killMs.length)
      console.log(`bypass to kill: p50 ${percentile(killMs, 50)} ms, p99 ${percentile(killMs, 99)} ms over ${killMs.length} tries`);

    // One MPS client per share, as a pod's process would hold.
    for (const pod of pods) {
      const c = spawn(FAKE_MPS_CONTROL, ['client', '0'], {
        env: { ...process.env, CUDA_MPS_PIPE_DIRECTORY: dirsOf(pod).pipeDir, CUDA_MPS_LOG_DIRECTORY: dirsOf(pod).logDir },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      clients.push(c);
      await new Promise<void>((res, rej) => {
        c.stdout!.once('data', () => res());
        c.once('exit', (code) => rej(new Error(`client of ${pod.metadata.name} exited with ${code}`)));
      });
    }
    const before = new Map(pods.map((p) => [p.metadata.uid as string, daemonPid(p)]));
    const daemonsOutOfContainer = [...before].filter(([uid, pid]) => outOfContainer(pid, uid)).length;

    // The agent's pod deleted under them.
    const agentPods = async (): Promise<Obj[]> =>
      (JSON.parse(await cp.kubectlOk(['get', 'pods', '-n', fake.namespace, '-o', 'json'])).items as Obj[]).filter(
        (p) => !p.metadata.deletionTimestamp,
      );
    const [old] = await agentPods();
    const deleted = Date.now();
    await cp.kubectlOk(['delete', 'pod', '-n', fake.namespace, old.metadata.name, '--wait=false']);
    await waitFor(
      'a new agent ready',
      async () => (await agentPods()).some((p) => p.metadata.uid !== old.metadata.uid && p.status.containerStatuses?.[0]?.ready),
      180_000,
      100,
    );
    const readyS = (Date.now() - deleted) / 1000;
    const [fresh] = (await agentPods()).filter((p) => p.metadata.uid !== old.metadata.uid);
    const answering = new Set<string>();
    await waitFor(
      "every share's daemon answering with its limits",
      async () => {
        for (const pod of pods.filter((p) => !answering.has(p.metadata.uid))) {
          const pct = await mpsCommand(FAKE_MPS_CONTROL, dirsOf(pod), ['get_default_active_thread_percentage'], 2_000).catch(() => '');
          if (pct.trim() === `${pod.metadata.annotations['tensor-fusion.ai/mps-thread-percentage']}.0`) answering.add(pod.metadata.uid);
        }
        return answering.size === pods.length;
      },
      300_000,
      100,
    );
    const allAnsweringS = (Date.now() - deleted) / 1000;
    const adopted = pods.filter((p) => daemonPid(p) === before.get(p.metadata.uid)).length;
    // When the new agent took each share over: its log's `MPS daemon adopted` lines (pino, epoch ms).
    const log = await cp.kubectlOk(['logs', '-n', fake.namespace, fresh.metadata.name]);
    const adoptedAt = log
      .split('\n')
      .filter((l) => l.includes('"MPS daemon adopted"'))
      .map((l) => (JSON.parse(l) as { time: number }).time);
    const adoptedS = adoptedAt.length ? (Math.max(...adoptedAt) - deleted) / 1000 : null;
    let clientsListed = 0;
    for (const [i, pod] of pods.entries()) {
      if (clients[i].exitCode !== null || clients[i].signalCode !== null) continue;
      const servers = (await mpsCommand(FAKE_MPS_CONTROL, dirsOf(pod), ['get_server_list'], 2_000)).trim().split('\n').filter(Boolean);
      const listed = await mpsCommand(
        FAKE_MPS_CONTROL,
        dirsOf(pod),
        servers.map((s) => `get_client_list ${s}`),
        2_000,
      );
      if (listed.split('\n').includes(String(clients[i].pid))) clientsListed++;
    }
    const podsRunning = (await list()).filter(
      (p) => p.status.phase === 'Running' && p.status.containerStatuses?.[0]?.restartCount === 0,
    ).length;
    console.log(
      `${daemonsOutOfContainer} of ${PODS} daemons out of the agent container's cgroups before the delete; agent restart under ${PODS} pods: new agent ready in ${readyS.toFixed(1)} s, every share adopted ${adoptedS?.toFixed(1)} s after the delete (${adoptedAt.length} logged), the bench's check of every daemon done in ${allAnsweringS.toFixed(1)} s; ` +
        `${adopted} daemons adopted (same process), ${PODS - adopted} started again; ${clientsListed} clients still connected and listed`,
    );
    console.log(
      JSON.stringify({
        bypassKillP50Ms: killMs.length ? percentile(killMs, 50) : null,
        bypassKillP99Ms: killMs.length ? percentile(killMs, 99) : null,
        bypassKillMaxMs: killMs.length ? Math.max(...killMs) : null,
        bypassTries: killMs.length,
        bypassKillMs: killMs,
        pods: PODS,
        agentReadyS: Number(readyS.toFixed(2)),
        adoptedS: adoptedS === null ? null : Number(adoptedS.toFixed(2)),
        adoptedLogged: adoptedAt.length,
        allDaemonsCheckedS: Number(allAnsweringS.toFixed(2)),
        daemonsAdopted: adopted,
        daemonsStartedAgain: PODS - adopted,
        clientsSurvived: clientsListed,
        podsRunningWithoutRestart: podsRunning,
        bypassKillSplit: splits,
        daemonsOutOfContainer,
        daemonCgroup: fake.daemonCgroup ?? null,
        loadAverage1m: Number(loadavg()[0].toFixed(1)),
      }),
    );
  } finally {
    for (const c of clients) c.kill('SIGKILL');
    await bench.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

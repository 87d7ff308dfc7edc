/**
 * Faults on a real node, with GPU pods running on it: the kubelet restarted and containerd restarted
 * (pods keep running; nothing re-admitted, re-placed, lost or doubled), a container that fails is
 * restarted by the kubelet and keeps its share, and a pod deleted with a grace period holds its share
 * until its containers are gone, so the next pod waits for them.
 */
import { parseQuantity } from '../../../lib/k8s/quantity';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL } from '../../../lib/model/metadata-keys';
import { renderGpuNode } from '../../../lib/render/gpu-node';
import { renderGpuPool } from '../../../lib/render/gpu-pool';
import { controllerSuite, installWithPool, type Obj, RunningController } from '../../support/e2e';
import { busyboxContainer, defaultServiceAccount, describeRealNode, NODE_NAME, SLEEP_SCRIPT } from '../../support/node';
import { eventually } from '../../runtime/fixtures';

const { synth, user } = controllerSuite(300_000);

const NS = 'faults';
const POOL = 'faults';
const GiB = 2 ** 30;

/** An opted-in pod of `vram` on the node's one 80 GiB GPU, running `script` in busybox. */
function gpuPod(name: string, vram: string, script = SLEEP_SCRIPT, grace = 1): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NS,
      labels: { [ENABLED_LABEL]: 'true', app: name },
      annotations: {
        'tensor-fusion.ai/gpupool': POOL,
        'tensor-fusion.ai/is-local-gpu': 'true',
        'tensor-fusion.ai/tflops-request': '10',
        'tensor-fusion.ai/vram-request': vram,
      },
    },
    spec: { containers: [busyboxContainer('main', script)], terminationGracePeriodSeconds: grace },
  };
}

describeRealNode('faults on a real node', { controllerManager: true, users: [user] }, {}, (h) => {
  let ctl: RunningController;
  const cp = () => h().cp;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
  const pod = (name: string) => get(['pod', '-n', NS, name]);
  const create = (o: Obj) => cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(o) });
  const runningPod = async (name: string): Promise<Obj> => {
    let p: Obj = {};
    await eventually(
      async () => {
        p = await pod(name);
        expect(p.status.phase).toBe('Running');
        expect(p.status.containerStatuses?.[0]?.state?.running).toBeTruthy();
      },
      120_000,
      500,
    );
    return p;
  };
  /** The GPU's free VRAM as the controller reports it, once it matches `expected`. */
  const gpuAvailableVram = async (expected: number): Promise<void> => {
    await eventually(
      async () => {
        const gpus = (await get(['gpus'])).items as Obj[];
        expect(gpus).toHaveLength(1);
        expect(parseQuantity(gpus[0].status.available.vram)).toBe(expected);
      },
      60_000,
      500,
    );
  };
  /** What a running pod's share and containers are: must not change across node faults. */
  const fingerprint = (p: Obj) => ({
    uid: p.metadata.uid,
    node: p.spec.nodeName,
    allocation: p.metadata.annotations[ALLOCATION_ANNOTATION],
    containerID: p.status.containerStatuses[0].containerID,
    restarts: p.status.containerStatuses[0].restartCount,
  });
  const scheduledEvents = async (name: string) =>
    ((await get(['events', '-n', NS, '--field-selector', `involvedObject.name=${name},reason=Scheduled`])).items as Obj[]).length;

  beforeAll(async () => {
    const docs = [
      renderGpuNode({ nodeName: NODE_NAME, pools: [POOL], gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 1, memory: '80Gi' } }),
      // Shared isolation: hard isolation's node side (the agent's device plugin) is test/e2e/node/isolation.test.ts.
      renderGpuPool(POOL, { tflopsOversellRatio: 100, isolation: 'shared' }),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    ];
    ctl = await installWithPool(cp(), synth, 'faults.yaml', docs, POOL, { totalNodes: 1, totalGPUs: 1 }, { intervalMs: 500 });
    await defaultServiceAccount(cp(), NS);
    await create(gpuPod('steady', '10Gi'));
    await runningPod('steady');
    await gpuAvailableVram(70 * GiB);
  }, 240_000);

  afterAll(async () => {
    await ctl?.stop();
  });

  test('the kubelet restarted: the pod keeps running with the same container and share; nothing is re-admitted or re-placed', async () => {
    const before = fingerprint(await pod('steady'));
    await h().node.restartKubelet();
    // Give the restarted kubelet a few syncs of the pod (syncFrequency 10 s) to do anything it would do.
    await new Promise((r) => setTimeout(r, 12_000));
    const after = await runningPod('steady');
    expect(fingerprint(after)).toEqual(before);
    expect(await scheduledEvents('steady')).toBe(1);
    await gpuAvailableVram(70 * GiB);
  });

  test('containerd restarted: the pod keeps running with the same container and share', async () => {
    const before = fingerprint(await pod('steady'));
    await h().node.restartContainerd();
    await new Promise((r) => setTimeout(r, 12_000));
    const after = await runningPod('steady');
    expect(fingerprint(after)).toEqual(before);
    expect((await h().cp.kubectlOk(['exec', '-n', NS, 'steady', '--', 'echo', 'alive'])).trim()).toBe('alive');
    expect(await scheduledEvents('steady')).toBe(1);
    await gpuAvailableVram(70 * GiB);
  });

  test('a container that exits with an error is restarted by the kubelet and keeps its share', async () => {
    await create(gpuPod('flaky', '5Gi', 'sleep 2; exit 3'));
    let first: Obj | undefined;
    await eventually(
      async () => {
        const p = await pod('flaky');
        first ??= p.metadata.annotations?.[ALLOCATION_ANNOTATION] ? p : undefined;
        const s = p.status.containerStatuses?.[0];
        expect(s?.restartCount).toBeGreaterThanOrEqual(2);
        expect(s.lastState.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
      },
      120_000,
      1_000,
    );
    const p = await pod('flaky');
    expect(p.metadata.uid).toBe(first!.metadata.uid);
    expect(p.metadata.annotations[ALLOCATION_ANNOTATION]).toBe(first!.metadata.annotations[ALLOCATION_ANNOTATION]);
    expect(await scheduledEvents('flaky')).toBe(1);
    await gpuAvailableVram(65 * GiB);
    await cp().kubectlOk(['delete', 'pod', '-n', NS, 'flaky', '--grace-period=0']);
    await gpuAvailableVram(70 * GiB);
  });

  test('a pod deleted with a grace period keeps its share until its containers are gone; the pod that needs the room waits for them', async () => {
    // Ignores SIGTERM for 8 s, then exits: the kubelet waits for it (grace period 30 s).
    await create(gpuPod('slow-exit', '50Gi', 'trap "sleep 8; exit 0" TERM; sleep 3600 & wait', 30));
    await runningPod('slow-exit');
    await gpuAvailableVram(20 * GiB);
    const deleted = Date.now();
    await cp().kubectlOk(['delete', 'pod', '-n', NS, 'slow-exit', '--wait=false']);
    // 50 GiB are asked for and 20 GiB are free until slow-exit's container has exited.
    await create(gpuPod('next', '50Gi'));
    await eventually(
      async () => {
        const cond = (((await pod('next')).status.conditions as Obj[]) ?? []).find((c) => c.type === 'PodScheduled');
        expect(cond?.reason).toBe('Unschedulable');
      },
      60_000,
      500,
    );
    const waiting = await pod('slow-exit');
    expect(waiting.metadata.deletionTimestamp).toBeTruthy();
    expect(waiting.status.containerStatuses[0].state.running).toBeTruthy();
    const next = await runningPod('next');
    const bound = Date.parse((next.status.conditions as Obj[]).find((c) => c.type === 'PodScheduled')!.lastTransitionTime);
    // Bound only after the container stopped (its 8 s trap), never while it could still use the GPU.
    expect(bound - deleted).toBeGreaterThanOrEqual(7_000);
    await eventually(async () => expect((await cp().kubectl(['get', 'pod', '-n', NS, 'slow-exit'])).code).not.toBe(0), 60_000, 500);
    await gpuAvailableVram(20 * GiB);
  });
});

/**
 * autoSetRequests/autoSetLimits acting on the real control plane with KWOK GPU nodes: two bound pods of
 * one workload share a GPU; once the workload's status holds a recommendation, the replica whose
 * extender the scheduler calls resizes one share in place (record and MPS annotations patched), the
 * other stays with a condition saying the GPU has no room, no GPU is over-committed, and a new pod is
 * admitted with the recommendation and a warning kubectl prints.
 */
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, PLACEMENT_ANNOTATIONS, SHARE_ANNOTATION } from '../../lib/model/metadata-keys';
import { SCHEDULER_NAME } from '../../lib/contract/object-names';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { RESIZE_ANNOTATIONS } from '../../lib/render/controller/write-limits';
import { RESIZE_CONDITION } from '../../lib/runtime/autoscale/resize';
import { LIMITS_VOLUME } from '../../lib/runtime/shared/pod-share/limits-volume';
import { describeControlPlane } from '../support/control-plane';
import { a100Labels, controllerSuite, installWithPool, kwokNode, type Obj, RunningController } from '../support/e2e';
import { eventually } from '../runtime/fixtures';

const { synth, user } = controllerSuite(240_000);

const POOL = 'resize';
const NS = 'resize-apps';
const GiB = 2 ** 30;

/** A pod of workload `web` with autoscaled requests and limits: 10 TFLOPS (limit 20) and 30 GiB. */
function webPod(name: string): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NS,
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: {
        'tensor-fusion.ai/gpupool': POOL,
        'tensor-fusion.ai/is-local-gpu': 'true',
        'tensor-fusion.ai/workload': 'web',
        'tensor-fusion.ai/tflops-request': '10',
        'tensor-fusion.ai/tflops-limit': '20',
        'tensor-fusion.ai/vram-request': '30Gi',
        'tensor-fusion.ai/auto-requests': 'true',
        'tensor-fusion.ai/auto-limits': 'true',
      },
    },
    spec: { containers: [{ name: 'main', image: 'example.io/app:1' }] },
  };
}

describeControlPlane('in-place resize of GPU shares', { controllerManager: true, kwok: true, users: [user] }, (cp) => {
  let ctl: RunningController;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
  const record = (p: Obj) =>
    JSON.parse(p.metadata.annotations[ALLOCATION_ANNOTATION]) as {
      gpuIds: string[];
      vramRequest: number;
      tflopsRequest: number;
      tflopsLimit: number;
    };
  let pokes = 0;
  /** A pod of our scheduler without a share: kube-scheduler calls the extender for it, keeping it the active one. */
  const poke = () =>
    cp().kubectl(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `poke-${pokes++}`, namespace: NS },
        spec: { schedulerName: SCHEDULER_NAME, containers: [{ name: 'c', image: 'example.io/app:1' }] },
      }),
    });

  beforeAll(async () => {
    const docs = [
      // Shared isolation: this suite checks the limit files the kubelet refreshes after a resize.
      renderGpuPool(POOL, { tflopsOversellRatio: 100, isolation: 'shared' }),
      kwokNode({ name: 'gpu-r', cpu: '8', labels: a100Labels(POOL, 1) }),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    ];
    ctl = await installWithPool(cp(), synth, 'resize.yaml', docs, POOL, { totalNodes: 1, totalGPUs: 1 });
  }, 180_000);

  afterAll(async () => {
    await ctl?.stop();
  });

  test('one bound share grows to the recommendation, the other waits for room with a condition, no GPU is over-committed', async () => {
    for (const name of ['a', 'b'])
      expect((await cp().kubectl(['create', '-f', '-'], { input: JSON.stringify(webPod(name)) })).code).toBe(0);
    const pods: Record<string, Obj> = {};
    await eventually(async () => {
      for (const name of ['a', 'b']) {
        pods[name] = await get(['pod', '-n', NS, name]);
        expect(pods[name].metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeTruthy();
      }
    }, 60_000);
    expect(record(pods.a).gpuIds).toEqual(record(pods.b).gpuIds);
    for (const p of Object.values(pods)) {
      expect(p.spec.volumes.map((v: Obj) => v.name)).toContain(LIMITS_VOLUME);
      expect(p.metadata.annotations[PLACEMENT_ANNOTATIONS.mpsMemoryLimit]).toBe('0=30720M');
    }
    // The recommendation as the leader's loop writes it (here by hand: this suite runs no Prometheus).
    await eventually(
      async () => expect((await get(['tensorfusionworkload', '-n', NS, 'web'])).spec.autoScalingConfig).toBeTruthy(),
      60_000,
    );
    const recommendation = { requests: { tflops: '15', vram: '45Gi' }, limits: { tflops: '25', vram: '45Gi' } };
    await cp().kubectlOk([
      'patch',
      'tensorfusionworkload',
      '-n',
      NS,
      'web',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { autoscaling: { recommendation } } }),
    ]);

    let grown: string | undefined;
    const deadline = Date.now() + 120_000;
    for (;;) {
      await poke();
      const [a, b] = await Promise.all(['a', 'b'].map((n) => get(['pod', '-n', NS, n])));
      const sizes = [record(a).vramRequest, record(b).vramRequest];
      const wl = await get(['tensorfusionworkload', '-n', NS, 'web']);
      const cond = (wl.status?.conditions ?? []).find((c: Obj) => c.type === RESIZE_CONDITION);
      if (sizes.includes(45 * GiB) && cond) {
        // 45 GiB + 30 GiB on the 80 GiB GPU: the second 45 GiB does not fit.
        expect(sizes.sort()).toEqual([30 * GiB, 45 * GiB]);
        grown = record(a).vramRequest === 45 * GiB ? 'a' : 'b';
        const other = grown === 'a' ? 'b' : 'a';
        expect(cond).toMatchObject({
          status: 'False',
          reason: 'NoRoomOnGpu',
          message: `the recommendation stays in status for 1 pod(s) whose GPUs have no room: pod ${other} on gpu-r: 1 GPU: not enough free VRAM`,
        });
        const resized = grown === 'a' ? a : b;
        expect(record(resized)).toMatchObject({ tflopsRequest: 15, tflopsLimit: 25, vramRequest: 45 * GiB });
        expect(resized.metadata.annotations[PLACEMENT_ANNOTATIONS.mpsMemoryLimit]).toBe('0=46080M');
        // The recommendation stays in status.
        expect(wl.status.autoscaling.recommendation).toEqual(recommendation);
        break;
      }
      if (Date.now() > deadline) throw new Error(`no resize within 120 s: ${JSON.stringify({ sizes, cond })}`);
      await new Promise((r) => setTimeout(r, 5_000));
    }
    const events = await get(['events', '-n', NS, '--field-selector', `involvedObject.name=${grown},reason=ShareResized`]);
    expect(events.items[0]?.message).toMatch(
      /^GPU share resized in place on gpu-r \(.+\): tensor-fusion\.ai\/tflops-request 10 -> 15, tensor-fusion\.ai\/tflops-limit 20 -> 25, tensor-fusion\.ai\/vram-request 30Gi -> 45Gi, tensor-fusion\.ai\/vram-limit 30Gi -> 45Gi; /,
    );

    // A new pod of the workload is admitted with the recommendation; it needs 45 GiB, and 5 GiB are free.
    const c = await cp().kubectl(['create', '-f', '-'], { input: JSON.stringify(webPod('c')) });
    expect(c.code).toBe(0);
    expect(c.stderr).toContain(
      'Warning: tensor-fusion.ai/tflops-request: 10 became 15, tensor-fusion.ai/tflops-limit: 20 became 25, tensor-fusion.ai/vram-request: 30Gi became 45Gi ' +
        `and tensor-fusion.ai/vram-limit: 30Gi became 45Gi, the recommendation in the status of TensorFusionWorkload ${NS}/web (autoSetRequests, autoSetLimits)`,
    );
    const cPod = await get(['pod', '-n', NS, 'c']);
    expect(JSON.parse(cPod.metadata.annotations[SHARE_ANNOTATION])).toMatchObject({
      tflopsRequest: 15,
      tflopsLimit: 25,
      vramRequest: 45 * GiB,
      vramLimit: 45 * GiB,
    });
    await eventually(async () => {
      const cond = (((await get(['pod', '-n', NS, 'c'])).status.conditions as Obj[]) ?? []).find((x) => x.type === 'PodScheduled');
      expect(cond?.reason).toBe('Unschedulable');
    }, 60_000);

    // No GPU over-committed: the shares recorded on bound pods fit the GPU's 80 GiB and 312 TFLOPS.
    const bound = ((await get(['pods', '-n', NS])).items as Obj[]).filter(
      (p) => p.spec.nodeName && p.metadata.annotations?.[ALLOCATION_ANNOTATION],
    );
    expect(bound.map((p) => p.metadata.name).sort()).toEqual(['a', 'b']);
    const sum = bound.reduce((s, p) => ({ vram: s.vram + record(p).vramRequest, tflops: s.tflops + record(p).tflopsRequest }), {
      vram: 0,
      tflops: 0,
    });
    expect(sum).toEqual({ vram: 75 * GiB, tflops: 25 });

    // The controller's patch right is for the resize only: any other change to a pod is refused.
    const other = await cp().kubectl(['label', 'pod', '-n', NS, 'a', 'x=y'], { user: user.name });
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain(
      `the tensor-fusion controller may change only the annotations ${RESIZE_ANNOTATIONS.join(', ')} of a pod, and only of one that holds a GPU allocation (an in-place resize)`,
    );
  });
});

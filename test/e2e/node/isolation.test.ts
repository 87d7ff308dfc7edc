/**
 * Hard isolation on a real node: the node agent as the DaemonSet `TensorFusionController` renders,
 * serving the share resource to the real kubelet (device-plugin API) and running a fake
 * nvidia-cuda-mps-control (test/support/fake-mps-control.js, which answers as the real one does)
 * per share. A pod in a Pod Security "baseline" namespace gets, through the kubelet alone, its GPU
 * device nodes (fake character devices here), its share's MPS pipe folder and its limits; a pod
 * without a share gets none of them; the agent restarted under a running pod takes its share over
 * with the same limits; a process that bypasses its daemon is stopped by the backstop; a deleted
 * pod's daemon is ended; each GPU reports IsolationReady.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ENABLED_LABEL, GPU_ISOLATION_CONDITION, SHARE_RESOURCE } from '../../../lib/model/metadata-keys';
import { renderGpuNode } from '../../../lib/render/gpu-node';
import { podOfPid } from '../../../lib/runtime/agent/cgroup';
import { mpsCommand } from '../../../lib/runtime/agent/mps/control';
import { controllerSuite, installController, type Obj, RunningController, writeYaml } from '../../support/e2e';
import { waitFor } from '../../support/control-plane';
import { busyboxContainer, defaultServiceAccount, describeRealNode, NODE_NAME } from '../../support/node';
import { FAKE_MPS_CONTROL, FakeGpuAgent, installFakeGpuAgent } from '../../support/node/gpu-agent';
import { eventually } from '../../runtime/fixtures';

const { synth, user } = controllerSuite(240_000);
const NS = 'baseline-apps';
const GPUS = [
  { index: 0, uuid: 'GPU-0d1c5a7e-3b2f-4c6d-8e9a-1f2b3c4d5e6f', name: 'NVIDIA A100-SXM4-80GB' },
  { index: 1, uuid: 'GPU-9e8d7c6b-5a4f-4e3d-2c1b-0a9f8e7d6c5b', name: 'NVIDIA A100-SXM4-80GB' },
];
const GPU_NODE = renderGpuNode({
  nodeName: NODE_NAME,
  pools: ['default-pool'],
  gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 2, memory: '80Gi' },
});
/** Seed 002's share: 20 TFLOPS of an A100's 312 (7 %), 4Gi. */
const SHARE_ANNOTATIONS = {
  'tensor-fusion.ai/is-local-gpu': 'true',
  'tensor-fusion.ai/tflops-request': '10',
  'tensor-fusion.ai/tflops-limit': '20',
  'tensor-fusion.ai/vram-request': '4Gi',
  'tensor-fusion.ai/vram-limit': '4Gi',
};

describeRealNode(
  'hard isolation on a real node: devices, MPS daemon and limits through the kubelet',
  { controllerManager: true, scheduler: true, users: [user] },
  {},
  (h) => {
    const cp = () => h().cp;
    const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
    const exec = (pod: string, script: string) => cp().kubectlOk(['exec', '-n', NS, pod, '--', 'sh', '-c', script]);
    let agent: FakeGpuAgent;
    let ctl: RunningController;

    const agentPod = async (): Promise<Obj> => {
      let pod: Obj = {};
      await eventually(
        async () => {
          const pods = ((await get(['pods', '-n', agent.namespace])).items as Obj[]).filter((p) => !p.metadata.deletionTimestamp);
          expect(pods.map((p) => [p.status.phase, p.status.containerStatuses?.[0]?.ready])).toEqual([['Running', true]]);
          pod = pods[0];
        },
        120_000,
        500,
      );
      return pod;
    };
    const gpuPod = (name: string, extra: Obj = {}): Obj => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS, labels: { [ENABLED_LABEL]: 'true' }, annotations: SHARE_ANNOTATIONS },
      spec: { terminationGracePeriodSeconds: 1, containers: [busyboxContainer('main')], ...extra },
    });
    const running = async (name: string): Promise<Obj> => {
      let pod: Obj = {};
      await eventually(
        async () => {
          pod = await get(['pod', '-n', NS, name]);
          expect(pod.status.phase).toBe('Running');
        },
        120_000,
        500,
      );
      return pod;
    };
    const daemonOf = (uid: string) => ({ pipeDir: path.join(agent.mpsDir, uid, 'pipe'), logDir: path.join(agent.mpsDir, uid, 'log') });

    beforeAll(async () => {
      ctl = await installController(cp(), synth.controller, synth.dir, { replicas: 1, schedulers: true });
      const platform = synth.platform.filter((o) => o.kind === 'GPUPool');
      await cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'isolation.yaml', [GPU_NODE, ...platform])]);
      await cp().kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } },
        }),
      });
      await defaultServiceAccount(cp(), NS);
      await waitFor('controller ready', () => ctl.replicas[0].ready(), 60_000, 200);
      agent = await installFakeGpuAgent(cp(), GPUS, (what, check) => waitFor(what, check, 120_000, 500));
      await agentPod();
    }, 240_000);

    afterAll(async () => {
      await ctl?.stop();
      agent?.cleanUp();
    });

    test("each GPU reports IsolationReady (its control daemon probe answered), kept by the controller's status writes", async () => {
      await eventually(
        async () => {
          for (const i of [0, 1]) {
            const gpu = await get(['gpu', `${NODE_NAME}-gpu-${i}`]);
            expect(gpu.status.conditions).toEqual([
              expect.objectContaining({ type: GPU_ISOLATION_CONDITION, status: 'True', reason: 'MpsReady' }),
            ]);
            expect(gpu.status.phase).toBe('Running');
          }
        },
        90_000,
        1_000,
      );
    });

    test('a pod in a baseline namespace gets its GPU devices, its own MPS daemon with its limits and its variables from the kubelet; a pod without a share gets none', async () => {
      await cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(gpuPod('trainer')) });
      await cp().kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify({ ...gpuPod('plain'), metadata: { name: 'plain', namespace: NS } }),
      });
      const pod = await running('trainer');
      // Nothing privileged in the pod as stored: the devices and folders came from the kubelet.
      expect(JSON.stringify(pod.spec)).not.toMatch(/hostPath|hostIPC|privileged/);
      expect(pod.spec.containers[0].resources.limits[SHARE_RESOURCE]).toBe('1');
      const gpu = JSON.parse(pod.metadata.annotations['tensor-fusion.ai/allocation']).gpuIds[0] as string;
      const uuid = GPUS[Number(gpu.split('-').pop())].uuid;
      const pipe = daemonOf(pod.metadata.uid).pipeDir;

      const seen = await exec(
        'trainer',
        'ls /dev | grep nvidia | LC_ALL=C sort | xargs; env | grep -E "^(CUDA_MPS|NVIDIA_VISIBLE)" | sort; test -S "$CUDA_MPS_PIPE_DIRECTORY/control" && echo control-socket; test -S /tmp/nvidia-mps/control && echo default-path-socket',
      );
      expect(seen.trim().split('\n')).toEqual([
        `nvidia-uvm nvidia${gpu.split('-').pop()} nvidiactl`,
        'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=7',
        'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M',
        `CUDA_MPS_PIPE_DIRECTORY=${pipe}`,
        `NVIDIA_VISIBLE_DEVICES=${uuid}`,
        'control-socket',
        // A process that unsets CUDA_MPS_PIPE_DIRECTORY finds the same daemon at CUDA's default folder.
        'default-path-socket',
      ]);
      // The daemon holds the limits, whatever the container's variables say.
      expect(
        await mpsCommand(
          FAKE_MPS_CONTROL,
          daemonOf(pod.metadata.uid),
          ['get_default_active_thread_percentage', 'get_default_device_pinned_mem_limit 0'],
          3_000,
        ),
      ).toBe('7.0\n4096M');

      await running('plain');
      expect(
        await exec('plain', 'ls /dev | grep -c nvidia; env | grep -c -E "^(CUDA_MPS|NVIDIA_)"; ls /run/tensor-fusion 2>&1 | head -1'),
      ).toMatch(/^0\n0\nls: \/run\/tensor-fusion: No such file or directory\n$/);
    });

    test('the backstop: a process of the pod that runs outside its MPS daemon is stopped within a round, with an Event on the pod', async () => {
      const pod = await running('trainer');
      await exec('trainer', 'sleep 600 >/dev/null 2>&1 </dev/null & echo started');
      const containerId = pod.status.containerStatuses[0].containerID.replace(/^containerd:\/\//, '');
      let pid = 0;
      await eventually(
        async () => {
          for (const d of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
            const owner = await podOfPid('/proc', Number(d));
            const cmd = existsSync(`/proc/${d}/cmdline`) ? readFileSync(`/proc/${d}/cmdline`, 'utf8') : '';
            if (owner && owner.podUid === pod.metadata.uid && owner.containerId === containerId && cmd.startsWith('sleep\u0000600'))
              pid = Number(d);
          }
          expect(pid).toBeGreaterThan(0);
        },
        10_000,
        200,
      );
      const gpu = Number(JSON.parse(pod.metadata.annotations['tensor-fusion.ai/allocation']).gpuIds[0].split('-').pop());
      // nvidia-smi shows it as a plain compute process (type C): it reached the GPU without MPS.
      agent.trace([{ pid, gpu, mib: 1024, sm: 20 }]);
      try {
        await eventually(
          async () => {
            expect(existsSync(`/proc/${pid}`)).toBe(false);
            const events = (await get(['events', '-n', NS, '--field-selector', `involvedObject.name=trainer,reason=MpsBypassed`]))
              .items as Obj[];
            expect(events.map((e) => e.message)).toEqual([
              `process ${pid} of ${NS}/trainer uses GPU ${GPUS[gpu].uuid} outside its MPS daemon (CUDA_MPS_PIPE_DIRECTORY changed?), where no limit binds it; it was stopped`,
            ]);
          },
          60_000,
          1_000,
        );
      } finally {
        agent.trace([]);
      }
      expect((await get(['pod', '-n', NS, 'trainer'])).status.containerStatuses[0].restartCount).toBe(0);
    });

    test('the agent restarted under a running pod takes its share over: the pod keeps running and its daemon answers with the same limits', async () => {
      const pod = await running('trainer');
      const old = await agentPod();
      await cp().kubectlOk(['delete', 'pod', '-n', agent.namespace, old.metadata.name, '--wait=true']);
      const fresh = await agentPod();
      expect(fresh.metadata.uid).not.toBe(old.metadata.uid);
      await eventually(
        async () => {
          expect(await mpsCommand(FAKE_MPS_CONTROL, daemonOf(pod.metadata.uid), ['get_default_active_thread_percentage'], 3_000)).toBe(
            '7.0',
          );
        },
        60_000,
        1_000,
      );
      const after = await get(['pod', '-n', NS, 'trainer']);
      expect(after.status.phase).toBe('Running');
      expect(after.status.containerStatuses[0].restartCount).toBe(0);
      expect((await exec('trainer', 'test -S "$CUDA_MPS_PIPE_DIRECTORY/control" && echo ok')).trim()).toBe('ok');
    });

    test("a deleted pod's share is ended through its daemon and its folder removed", async () => {
      const pod = await running('trainer');
      await cp().kubectlOk(['delete', 'pod', '-n', NS, 'trainer', 'plain', '--wait=true']);
      await eventually(async () => expect(existsSync(path.join(agent.mpsDir, pod.metadata.uid))).toBe(false), 60_000, 1_000);
    });
  },
);

/**
 * Hard isolation on a real node: the node agent as the DaemonSet `TensorFusionController` renders,
 * serving the share resource to the real kubelet (device-plugin API, PreStartContainer, PodResources)
 * and containerd 2 (CDI), and running a fake nvidia-cuda-mps-control (test/support/fake-mps-control.c,
 * which answers as the real one does) per share. A pod in a Pod Security "baseline" namespace gets,
 * through the kubelet and the runtime alone, its GPU device node by its real minor (fake character
 * devices here, minors the reverse of the indexes), its share's MPS pipe folder, the driver's
 * libraries and its limits; a pod without a share gets none of them; pods admitted in another order
 * than they were bound, written to between bind and admission, started across an agent restart, or
 * restarted by the kubelet each end on their own daemon; after a reboot none runs without its daemon; a process that bypasses its daemon is stopped by the
 * backstop; a deleted pod's daemon lives until its containers exit; each GPU reports IsolationReady.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { ENABLED_LABEL, GPU_ISOLATION_CONDITION, SHARE_RESOURCE } from '../../../lib/model/metadata-keys';
import { renderGpuNode } from '../../../lib/render/gpu-node';
import { podOfPid } from '../../../lib/runtime/agent/cgroup';
import { mpsCommand } from '../../../lib/runtime/agent/mps/control';
import { controllerSuite, installController, type Obj, RunningController, writeYaml } from '../../support/e2e';
import { waitFor } from '../../support/control-plane';
import { busyboxContainer, defaultServiceAccount, describeRealNode, NODE_NAME } from '../../support/node';
import { FAKE_DRIVER_LIBRARIES, FAKE_MPS_CONTROL, FakeGpuAgent, fakeMinor, installFakeGpuAgent } from '../../support/node/gpu-agent';
import { eventually } from '../../runtime/fixtures';

const { synth, user } = controllerSuite(240_000);
const NS = 'baseline-apps';
/** The agent's device-plugin socket, in the kubelet's fixed folder. */
const PLUGIN_SOCKET = '/var/lib/kubelet/device-plugins/tensor-fusion-share.sock';
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

    const create = (pod: Obj) => cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(pod) });
    /** A share pod whose compute limit (so its daemon's thread percentage) tells it from the others. */
    const sharePod = (name: string, tflopsLimit: number, extra: Obj = {}): Obj => {
      const pod = gpuPod(name, extra);
      pod.metadata.annotations = { ...SHARE_ANNOTATIONS, 'tensor-fusion.ai/tflops-limit': String(tflopsLimit) };
      return pod;
    };
    const boundHere = (name: string) =>
      eventually(async () => expect((await get(['pod', '-n', NS, name])).spec.nodeName).toBe(NODE_NAME), 60_000, 250);
    /** {@link shareSeen} once the container answers (it may be starting again). */
    const eventuallySeen = async (name: string, ms = 120_000): Promise<string[]> => {
      let seen: string[] = [];
      try {
        await eventually(
          async () => {
            seen = await shareSeen(name);
          },
          ms,
          1_000,
        );
      } catch (err) {
        // Say why: the pod's phase and the end of the agent's log.
        const logs = await cp().kubectl(['logs', '-n', agent.namespace, '-l', 'app.kubernetes.io/component=node-agent', '--tail=40']);
        const phase = await cp().kubectl(['get', 'pod', '-n', NS, name, '-o', 'jsonpath={.status.phase} {.metadata.uid}']);
        throw new Error(`pod ${name} (${phase.stdout}): ${(err as Error).message}\n${logs.stdout}${logs.stderr}`);
      }
      return seen;
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
          // The container's state and the pod's Events in the message, when it does not run.
          const why =
            pod.status.phase === 'Running'
              ? ''
              : JSON.stringify([
                  pod.status.containerStatuses?.map((c: Obj) => c.state),
                  await cp()
                    .kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`])
                    .then((r) => r.stdout.split('\n').slice(-4)),
                ]);
          expect(`${pod.status.phase} ${why}`.trim()).toBe('Running');
        },
        120_000,
        500,
      );
      return pod;
    };
    const daemonOf = (uid: string) => ({ pipeDir: path.join(agent.mpsDir, uid, 'pipe'), logDir: path.join(agent.mpsDir, uid, 'log') });
    const gpuOf = (pod: Obj) => Number(JSON.parse(pod.metadata.annotations['tensor-fusion.ai/allocation']).gpuIds[0].split('-').pop());
    const minorOf = (pod: Obj) => fakeMinor(GPUS, { index: gpuOf(pod) });
    /** What a pod's container sees of its share: its pipe folder and GPU node, and its daemon's compute limit. */
    const shareSeen = async (name: string): Promise<string[]> => {
      const inside = await exec(name, 'echo "$CUDA_MPS_PIPE_DIRECTORY"; ls /dev | grep -E "^nvidia[0-9]" | xargs');
      const pipe = inside.trim().split('\n')[0];
      const limit = await mpsCommand(
        FAKE_MPS_CONTROL,
        { pipeDir: pipe, logDir: path.join(path.dirname(pipe), 'log') },
        ['get_default_active_thread_percentage'],
        3_000,
      );
      return [...inside.trim().split('\n'), limit.trim()];
    };
    /** What a pod's container must see of its own share: its own pipe folder, its own GPU's node and its own limit. */
    const ownShare = (pod: Obj): string[] => [
      daemonOf(pod.metadata.uid).pipeDir,
      `nvidia${minorOf(pod)}`,
      `${pod.metadata.annotations['tensor-fusion.ai/mps-thread-percentage']}.0`,
    ];

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
      await agent.runningPod();
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
      const pipe = daemonOf(pod.metadata.uid).pipeDir;

      const seen = await exec(
        'trainer',
        'ls /dev | grep nvidia | LC_ALL=C sort | xargs; env | grep -E "^(CUDA_MPS|NVIDIA_VISIBLE)" | sort; test -S "$CUDA_MPS_PIPE_DIRECTORY/control" && echo control-socket; test -S /tmp/nvidia-mps/control && echo default-path-socket; ls /usr/local/nvidia/lib64 | LC_ALL=C sort | xargs',
      );
      expect(seen.trim().split('\n')).toEqual([
        // The share's GPU by its device minor, not its index.
        `nvidia-uvm nvidia${minorOf(pod)} nvidiactl`,
        'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=7',
        'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M',
        `CUDA_MPS_PIPE_DIRECTORY=${pipe}`,
        // Where the NVIDIA toolkit is the runtime, it adds no GPU of its own.
        'NVIDIA_VISIBLE_DEVICES=void',
        'control-socket',
        // A process that unsets CUDA_MPS_PIPE_DIRECTORY finds the same daemon at CUDA's default folder.
        'default-path-socket',
        // The driver's libraries, by full version and soname, without the toolkit.
        FAKE_DRIVER_LIBRARIES.flatMap((l) => [l.replace(/\.so\..*/, '.so.1'), l])
          .sort()
          .join(' '),
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
      // The daemon left the agent's container for a cgroup of its own (where this machine has cgroup v2).
      if (agent.daemonCgroup) {
        const daemonPid = readFileSync(path.join(pipe, 'nvidia-cuda-mps-control.pid'), 'utf8').trim();
        expect(readFileSync(path.join(agent.daemonCgroup, pod.metadata.uid, 'cgroup.procs'), 'utf8').split('\n')).toContain(daemonPid);
      }

      await running('plain');
      expect(
        await exec('plain', 'ls /dev | grep -c nvidia; env | grep -c -E "^(CUDA_MPS|NVIDIA_)"; ls /run/tensor-fusion 2>&1 | head -1'),
      ).toMatch(/^0\n0\nls: \/run\/tensor-fusion: No such file or directory\n$/);
    });

    test("the backstop: a process of the pod that is no client of its share's daemon is killed, with an Event on the pod", async () => {
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
              `process ${pid} (sleep) of ${NS}/trainer on GPU ${GPUS[gpu].uuid} is no client of its share's MPS daemon (CUDA_MPS_PIPE_DIRECTORY pointed elsewhere, or a daemon of its own), so no limit binds it; it was killed`,
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
      const old = await agent.runningPod();
      await cp().kubectlOk(['delete', 'pod', '-n', agent.namespace, old.metadata.name, '--wait=true']);
      const fresh = await agent.runningPod();
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

    test('pods admitted in creation order rather than bind order, and a pod written to between its bind and its admission, each run on their own daemon', async () => {
      const node = h().node;
      // Ready: the agent (restarted by the test before) has registered, so the kubelet started again
      // below meets a plugin that registers again at once, not one still on its first try.
      await agent.runningPod();
      await node.stopKubelet();
      try {
        // The oldest pod waits (a scheduling gate, as a pod waiting for room) and is bound last.
        await create(sharePod('b1-old', 20, { schedulingGates: [{ name: 'tensor-fusion.ai/test-hold' }] }));
        await new Promise((r) => setTimeout(r, 1_100)); // creation times are whole seconds
        await create(sharePod('b1-young', 40));
        await boundHere('b1-young');
        await create(sharePod('b1-written', 60));
        await boundHere('b1-written');
        await cp().kubectlOk(['patch', 'pod', '-n', NS, 'b1-old', '--type=json', '-p', '[{"op":"remove","path":"/spec/schedulingGates"}]']);
        await boundHere('b1-old');
        // A write after its bind: its resourceVersion no longer orders the binds.
        await cp().kubectlOk(['label', 'pod', '-n', NS, 'b1-young', 'touched=after-bind']);
      } finally {
        await node.resumeKubelet();
      }
      for (const name of ['b1-old', 'b1-young', 'b1-written']) expect(await eventuallySeen(name)).toEqual(ownShare(await running(name)));
    });

    test('the agent restarted while a pod runs its init container: it and a pod admitted meanwhile each run on their own daemon', async () => {
      await create(sharePod('init-wait', 20, { initContainers: [busyboxContainer('prepare', 'sleep 15')] }));
      await eventually(
        async () => expect((await get(['pod', '-n', NS, 'init-wait'])).status.initContainerStatuses?.[0]?.state?.running).toBeDefined(),
        60_000,
        500,
      );
      const old = await agent.runningPod();
      const deleted = Date.now();
      await cp().kubectlOk(['delete', 'pod', '-n', agent.namespace, old.metadata.name, '--wait=false']);
      await agent.runningPod();
      // A pod admitted while no plugin is registered fails at admission (the kubelet's rule, for any
      // device plugin): the next pod comes once the new agent's socket is served and registered.
      await eventually(async () => expect(statSync(PLUGIN_SOCKET).ctimeMs).toBeGreaterThan(deleted), 60_000, 250);
      await new Promise((r) => setTimeout(r, 1_000));
      await create(sharePod('meanwhile', 40));
      for (const name of ['init-wait', 'meanwhile']) expect(await eventuallySeen(name)).toEqual(ownShare(await running(name)));
    });

    test('a pod with an emptyDir at /dev/shm still reaches its daemon', async () => {
      await create(
        sharePod('shm', 20, {
          volumes: [{ name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } }],
          containers: [{ ...busyboxContainer('main'), volumeMounts: [{ name: 'shm', mountPath: '/dev/shm' }] }],
        }),
      );
      const pod = await running('shm');
      expect(await eventuallySeen('shm')).toEqual(ownShare(pod));
      expect(await exec('shm', 'test -S /tmp/nvidia-mps/control && echo default-path-socket')).toBe('default-path-socket\n');
    });

    test('a container restarted by the kubelet goes through PreStartContainer again and keeps its own daemon', async () => {
      // The exec may end with the container (137): its answer is not the point.
      await cp().kubectl(['exec', '-n', NS, 'shm', '--', 'sh', '-c', 'kill -TERM 1']);
      let pod: Obj = {};
      await eventually(
        async () => {
          pod = await get(['pod', '-n', NS, 'shm']);
          expect(pod.status.containerStatuses[0].restartCount).toBe(1);
          expect(pod.status.containerStatuses[0].state.running).toBeDefined();
        },
        60_000,
        500,
      );
      expect(await eventuallySeen('shm')).toEqual(ownShare(pod));
    });

    test("a reboot (everything on tmpfs gone, the kubelet's checkpoint kept): no share pod runs without its own daemon and limits; a Deployment's pods run again on their own", async () => {
      const template = sharePod('replica', 20);
      await create({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'rebooted', namespace: NS },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'rebooted' } },
          template: {
            metadata: { labels: { app: 'rebooted', [ENABLED_LABEL]: 'true' }, annotations: template.metadata.annotations },
            spec: template.spec,
          },
        },
      });
      const replicas = async () =>
        ((await get(['pods', '-n', NS, '-l', 'app=rebooted'])).items as Obj[]).filter((p) => !p.metadata.deletionTimestamp);
      await eventually(async () => expect((await replicas()).map((p) => p.status.phase)).toEqual(['Running', 'Running']), 120_000, 1_000);
      const bare = ((await get(['pods', '-n', NS])).items as Obj[])
        .filter((p) => !p.metadata.labels?.app && p.metadata.labels?.[ENABLED_LABEL] === 'true')
        .map((p) => p.metadata.name as string);
      // The shares' folders stand for /run/tensor-fusion here: wiped with the rest.
      const rebootAt = Math.floor(Date.now() / 1000) * 1000;
      await h().node.reboot([agent.mpsDir]);
      await agent.runningPod();
      // The kubelet admits its pods again before the agent (a pod itself) registers: a bare pod that
      // holds devices fails admission then, as with any device plugin, and never runs without its
      // daemon. The Deployment replaces its pods, which run on their own daemons.
      // Replicas made after the reboot: the old ones' status may still say Running until the kubelet writes it.
      const fresh = async () =>
        (await replicas()).filter((p) => p.status.phase === 'Running' && Date.parse(p.metadata.creationTimestamp) >= rebootAt);
      await eventually(async () => expect((await fresh()).length).toBe(2), 240_000, 1_000);
      for (const p of await fresh()) expect(await eventuallySeen(p.metadata.name)).toEqual(ownShare(p));
      for (const name of bare) {
        const p = await get(['pod', '-n', NS, name]);
        if (p.status.phase === 'Running') expect(await eventuallySeen(name)).toEqual(ownShare(p));
        else expect([p.status.phase, p.status.reason]).toEqual(['Failed', 'UnexpectedAdmissionError']);
      }
    }, 480_000);

    test('graceful delete: the share lives while the container runs its SIGTERM handler, and ends once it exits', async () => {
      await create(
        sharePod('graceful', 20, {
          terminationGracePeriodSeconds: 60,
          containers: [busyboxContainer('main', 'trap "sleep 12; exit 0" TERM; sleep 3600 & wait')],
        }),
      );
      const pod = await running('graceful');
      await cp().kubectlOk(['delete', 'pod', '-n', NS, 'graceful', '--wait=false']);
      // Longer than a supervision round: a share released at deletionTimestamp would be gone by now.
      await new Promise((r) => setTimeout(r, 8_000));
      const deleting = await get(['pod', '-n', NS, 'graceful']);
      expect(deleting.metadata.deletionTimestamp).toBeDefined();
      expect(deleting.status.containerStatuses[0].state.running).toBeDefined();
      expect(await mpsCommand(FAKE_MPS_CONTROL, daemonOf(pod.metadata.uid), ['get_default_active_thread_percentage'], 3_000)).toBe(
        `${pod.metadata.annotations['tensor-fusion.ai/mps-thread-percentage']}.0`,
      );
      await eventually(async () => expect(existsSync(path.join(agent.mpsDir, pod.metadata.uid))).toBe(false), 60_000, 1_000);
    });

    test("deleted pods' shares are ended through their daemons, and their folders and CDI specs removed", async () => {
      await cp().kubectlOk(['delete', 'deployment', '-n', NS, '--all', '--wait=true']);
      const pods = ((await get(['pods', '-n', NS])).items as Obj[]).map((p) => p.metadata);
      await cp().kubectlOk(['delete', 'pod', '-n', NS, '--all', '--wait=true']);
      await eventually(
        async () => {
          for (const m of pods) expect(existsSync(path.join(agent.mpsDir, m.uid))).toBe(false);
          expect(readdirSync('/run/cdi').filter((f) => f.startsWith('tensor-fusion.ai-share_'))).toEqual([]);
        },
        60_000,
        1_000,
      );
    });
  },
);

/**
 * Issue 53 on a real node: the node agent's DRA door serving the real kubelet (plugin registration,
 * DRA v1 NodePrepareResources / NodeUnprepareResources) and containerd 2 (CDI). Seed 002's Deployment
 * in a pool that delivers by DRA gets, through its claim alone, its GPU device node, its own MPS
 * daemon holding its limits and its variables; two pods on one GPU each get their own daemon; a
 * kubelet restart, and an agent restart (the new agent adopts their daemons), leave them running on
 * their daemons; after a reboot the same pods run again on daemons the new agent starts when the
 * kubelet prepares their claims again; deleting them unprepares their claims, which ends their
 * shares and removes their CDI specs.
 */
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { DRA_DEVICE_CLASS, DRA_POD_CLAIM } from '../../../lib/model/dra';
import { ENABLED_LABEL, SHARE_RESOURCE } from '../../../lib/model/metadata-keys';
import { renderGpuNode } from '../../../lib/render/gpu-node';
import { mpsCommand } from '../../../lib/runtime/agent/mps/control';
import { claimDevice } from '../../../lib/runtime/agent/dra/door';
import { controllerSuite, installController, type Obj, RunningController, writeYaml } from '../../support/e2e';
import { waitFor } from '../../support/control-plane';
import { busyboxContainer, defaultServiceAccount, describeRealNode, NODE_NAME } from '../../support/node';
import { FAKE_MPS_CONTROL, FakeGpuAgent, fakeMinor, installFakeGpuAgent } from '../../support/node/gpu-agent';
import { SEED_002_ANNOTATIONS } from '../../support/seed';
import { draInstall } from '../../support/dra';
import { eventually } from '../../runtime/fixtures';

const { synth, namespace, user } = controllerSuite(240_000);
const NS = 'ml';
const POOL = SEED_002_ANNOTATIONS['tensor-fusion.ai/gpupool'];
const GPUS = [
  { index: 0, uuid: 'GPU-0d1c5a7e-3b2f-4c6d-8e9a-1f2b3c4d5e6f', name: 'NVIDIA A100-SXM4-80GB' },
  { index: 1, uuid: 'GPU-9e8d7c6b-5a4f-4e3d-2c1b-0a9f8e7d6c5b', name: 'NVIDIA A100-SXM4-80GB' },
];
const GPU_NODE = renderGpuNode({ nodeName: NODE_NAME, pools: [POOL], gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 2, memory: '80Gi' } });
/** The CDI specs the agent writes (containerd reads /run/cdi). */
const CDI_DIR = '/run/cdi';

/** Seed 002's Deployment (TensorFusion's documented example), its app container on the node's busybox image. */
function seedDeployment(): Obj {
  const d = structuredClone(synth.platform.find((o) => o.kind === 'Deployment' && o.metadata.name === 'pytorch-example')!);
  d.spec.template.spec.containers = [busyboxContainer('python')];
  d.spec.template.spec.terminationGracePeriodSeconds = 1;
  return d;
}

describeRealNode(
  'DRA delivery on a real node: the kubelet prepares claims through the agent',
  { controllerManager: true, scheduler: true, users: [user] },
  {},
  (h) => {
    const cp = () => h().cp;
    const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
    const exec = (pod: string, script: string) => cp().kubectlOk(['exec', '-n', NS, pod, '--', 'sh', '-c', script]);
    const create = (o: Obj) => cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(o) });
    let agent: FakeGpuAgent;
    let ctl: RunningController;

    /** Says why a pod does not run: its phase, its containers' states, its Events and the end of the agent's log. */
    const why = async (pod: Obj): Promise<string> => {
      const events = await cp().kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${pod.metadata.name}`]);
      const logs = await cp().kubectl(['logs', '-n', agent.namespace, '-l', 'app.kubernetes.io/component=node-agent', '--tail=20']);
      return (
        JSON.stringify([pod.status.phase, pod.status.containerStatuses?.map((c: Obj) => c.state)]) +
        `\n${events.stdout}\n${logs.stdout}${logs.stderr}`
      );
    };
    /** The pods of a selector (or the named pod) once they all run. */
    const running = async (selector: string, count = 1): Promise<Obj[]> => {
      let pods: Obj[] = [];
      await eventually(
        async () => {
          pods = ((await get(['pods', '-n', NS, ...(selector.includes('=') ? ['-l', selector] : [])])).items as Obj[]).filter(
            (p) => !p.metadata.deletionTimestamp && (selector.includes('=') || p.metadata.name === selector),
          );
          expect(pods).toHaveLength(count);
          for (const p of pods) if (p.status.phase !== 'Running') throw new Error(await why(p));
        },
        180_000,
        1_000,
      );
      return pods;
    };
    const claimOf = async (pod: Obj): Promise<Obj> => {
      const name = (pod.status.resourceClaimStatuses as Obj[]).find((s) => s.name === DRA_POD_CLAIM)!.resourceClaimName;
      return get(['resourceclaim', '-n', NS, name]);
    };
    /** What a pod's container sees of its share: its GPU nodes, its pipe folder, and its daemon's limits. */
    const shareSeen = async (pod: string): Promise<{ devices: string; pipe: string; limits: string }> => {
      const [devices, pipe] = (await exec(pod, 'ls /dev | grep -E "^nvidia[0-9]" | xargs; echo "$CUDA_MPS_PIPE_DIRECTORY"'))
        .trim()
        .split('\n');
      const limits = await mpsCommand(
        FAKE_MPS_CONTROL,
        { pipeDir: pipe, logDir: path.join(path.dirname(pipe), 'log') },
        ['get_default_active_thread_percentage', 'get_default_device_pinned_mem_limit 0'],
        3_000,
      );
      return { devices, pipe, limits };
    };
    const sharePod = (name: string, tflopsLimit: number): Obj => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: NS,
        labels: { [ENABLED_LABEL]: 'true', app: 'pair' },
        annotations: {
          'tensor-fusion.ai/gpupool': POOL,
          'tensor-fusion.ai/is-local-gpu': 'true',
          'tensor-fusion.ai/gpu-indices': '1',
          'tensor-fusion.ai/tflops-request': '10',
          'tensor-fusion.ai/tflops-limit': String(tflopsLimit),
          'tensor-fusion.ai/vram-request': '2Gi',
          'tensor-fusion.ai/vram-limit': '2Gi',
        },
      },
      spec: { terminationGracePeriodSeconds: 1, containers: [busyboxContainer('main')] },
    });

    beforeAll(async () => {
      ctl = await installController(cp(), synth.controller, synth.dir, { replicas: 1, schedulers: true });
      // The install's DRA side (`dra: true`): the DeviceClass, the agent's and the controller's rules, the policies.
      const dra = draInstall(namespace);
      // Seed 002's namespace, profile and pool, the pool delivering by DRA.
      const platform = synth.platform
        .filter((o) => ['Namespace', 'GPUPool', 'WorkloadProfile'].includes(o.kind))
        .map((o) => structuredClone(o));
      for (const pool of platform.filter((o) => o.kind === 'GPUPool')) pool.spec.nodeManagerConfig.shareDelivery = 'DRA';
      await cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'dra-node.yaml', [...dra, ...platform, GPU_NODE])]);
      await defaultServiceAccount(cp(), NS);
      await waitFor('controller ready', () => ctl.replicas[0].ready(), 60_000, 200);
      agent = await installFakeGpuAgent(cp(), GPUS, (what, check) => waitFor(what, check, 120_000, 500));
      await waitFor(
        `the agent publishes ${NODE_NAME}'s ResourceSlice`,
        async () => (await cp().kubectl(['get', 'resourceslices', '-o', 'name'])).stdout.includes(NODE_NAME),
        120_000,
        500,
      );
    }, 300_000);

    afterAll(async () => {
      await ctl?.stop();
      agent?.cleanUp();
    });

    test("seed 002's Deployment in a DRA pool runs: its claim brings its GPU, its own MPS daemon with its limits, and its variables", async () => {
      await cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'seed-002.yaml', [seedDeployment()])]);
      const [pod] = await running('app=pytorch-example');
      // Its share came through its claim, not the device plugin's resource.
      expect(pod.spec.resourceClaims).toEqual([{ name: DRA_POD_CLAIM, resourceClaimTemplateName: expect.stringMatching(/^tf-/) }]);
      expect(pod.spec.containers[0].resources.claims).toEqual([{ name: DRA_POD_CLAIM }]);
      expect(JSON.stringify(pod.spec.containers[0].resources.limits ?? {})).not.toContain(SHARE_RESOURCE);
      const claim = await claimOf(pod);
      const [result] = claim.status.allocation.devices.results as Obj[];
      expect(result).toMatchObject({ driver: DRA_DEVICE_CLASS, pool: NODE_NAME, device: expect.stringMatching(/^gpu-[01]$/) });
      const gpu = Number(result.device.split('-')[1]);

      const env = (await exec(pod.metadata.name, 'env | grep -E "^(CUDA_MPS|NVIDIA_VISIBLE)" | sort')).trim().split('\n');
      const seen = await shareSeen(pod.metadata.name);
      expect(env).toEqual([
        // 20 TFLOPS of an A100's 312 -> 7 %; 4Gi -> 4096 MiB.
        'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=7',
        'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M',
        `CUDA_MPS_PIPE_DIRECTORY=${seen.pipe}`,
        'NVIDIA_VISIBLE_DEVICES=void',
      ]);
      expect(seen.pipe.startsWith(`${agent.mpsDir}/`)).toBe(true);
      // The claim's GPU by its device minor; the daemon holds the limits.
      expect(seen.devices).toBe(`nvidia${fakeMinor(GPUS, { index: gpu })}`);
      expect(seen.limits).toBe('7.0\n4096M');
      expect(existsSync(path.join(CDI_DIR, cdiFile(claim.metadata.uid)))).toBe(true);
    });

    test('two pods on one GPU each get their own daemon with their own limits', async () => {
      await create(sharePod('pair-a', 20));
      await create(sharePod('pair-b', 60));
      const pods = await running('app=pair', 2);
      const claims = await Promise.all(pods.map(claimOf));
      expect(claims.map((c) => c.status.allocation.devices.results.map((r: Obj) => r.device))).toEqual([['gpu-1'], ['gpu-1']]);
      const seen = await Promise.all(pods.map((p) => shareSeen(p.metadata.name)));
      expect(seen[0].pipe).not.toBe(seen[1].pipe);
      const byName = Object.fromEntries(pods.map((p, i) => [p.metadata.name, seen[i]]));
      // 20 and 60 TFLOPS of 312 -> 7 % and 20 %; 2Gi -> 2048 MiB; GPU 1's minor is 0.
      expect(byName['pair-a']).toEqual({ devices: 'nvidia0', pipe: byName['pair-a'].pipe, limits: '7.0\n2048M' });
      expect(byName['pair-b']).toEqual({ devices: 'nvidia0', pipe: byName['pair-b'].pipe, limits: '20.0\n2048M' });
    });

    test('a kubelet restart leaves the pods running on their own daemons', async () => {
      const before = [...(await running('app=pytorch-example')), ...(await running('app=pair', 2))];
      const seenBefore = await Promise.all(before.map((p) => shareSeen(p.metadata.name)));
      await h().node.restartKubelet();
      // The kubelet has its claims prepared again (from its checkpoint) before it runs anything new.
      await create(sharePod('after-restart', 40));
      await running('after-restart');
      for (const [i, p] of before.entries()) {
        const now = await get(['pod', '-n', NS, p.metadata.name]);
        expect([now.metadata.uid, now.status.phase, now.status.containerStatuses[0].restartCount]).toEqual([p.metadata.uid, 'Running', 0]);
        expect(await shareSeen(p.metadata.name)).toEqual(seenBefore[i]);
      }
      expect((await shareSeen('after-restart')).limits).toBe('13.0\n2048M');
    });

    /** Every share pod of the suite, running, with what each sees of its share and its claim's UID. */
    const sharePods = async (): Promise<{ pods: Obj[]; seen: Awaited<ReturnType<typeof shareSeen>>[]; claims: string[] }> => {
      // pair-a, pair-b and after-restart are labelled app=pair.
      const pods = [...(await running('app=pytorch-example')), ...(await running('app=pair', 3))];
      const seen = await Promise.all(pods.map((p) => shareSeen(p.metadata.name)));
      const claims = await Promise.all(pods.map(async (p) => (await claimOf(p)).metadata.uid as string));
      return { pods, seen, claims };
    };

    test('an agent restart (its pod deleted) leaves the pods running on their daemons, which the new agent adopts; it prepares new claims', async () => {
      const before = await sharePods();
      const old = await agent.runningPod();
      await cp().kubectlOk(['delete', 'pod', '-n', agent.namespace, old.metadata.name, '--wait=true']);
      const fresh = await agent.runningPod();
      expect(fresh.metadata.uid).not.toBe(old.metadata.uid);
      // The new agent adopts each running pod's daemon from its record on the host: the daemons outlive
      // the old agent's container, moved out of its cgroups (test/support/node/gpu-agent.ts). The kubelet
      // prepares nothing again (its cache says prepared).
      const adopted = async () =>
        (await cp().kubectlOk(['logs', '-n', agent.namespace, fresh.metadata.name]))
          .split('\n')
          .filter((l) => l.includes('"MPS daemon adopted"'))
          .map((l) => (JSON.parse(l) as Obj).share as string)
          .sort();
      await eventually(async () => expect(await adopted()).toEqual(before.pods.map((p) => p.metadata.uid).sort()), 60_000, 1_000).catch(
        async (err: Error) => {
          const log = await cp().kubectl(['logs', '-n', agent.namespace, fresh.metadata.name, '--tail=30']);
          throw new Error(`${err.message}\n${log.stdout}${log.stderr}`);
        },
      );
      for (const [i, p] of before.pods.entries()) {
        const now = await get(['pod', '-n', NS, p.metadata.name]);
        expect([now.metadata.uid, now.status.phase, now.status.containerStatuses[0].restartCount]).toEqual([p.metadata.uid, 'Running', 0]);
        expect(await shareSeen(p.metadata.name)).toEqual(before.seen[i]);
      }
      // The new agent registered with the kubelet: a new claim is prepared, on its own daemon.
      await create(sharePod('after-agent', 80));
      await running('after-agent');
      expect((await shareSeen('after-agent')).limits).toBe('26.0\n2048M');
      await cp().kubectlOk(['delete', 'pod', '-n', NS, 'after-agent', '--wait=true']);
    });

    test("a reboot (the node's tmpfs wiped, the kubelet's checkpoint kept): the same pods run again, each on its own daemon with its limits", async () => {
      const before = await sharePods();
      await h().node.reboot([agent.mpsDir]);
      await agent.runningPod();
      // Unlike a device-plugin pod (refused at the kubelet's admission while no plugin is registered),
      // a DRA pod is admitted and waits: the kubelet prepares its claim once the new agent registers,
      // which starts its daemon and writes its CDI spec again, and then starts its containers.
      for (const [i, p] of before.pods.entries()) {
        await eventually(
          async () => {
            const now = await get(['pod', '-n', NS, p.metadata.name]);
            expect([now.metadata.uid, now.status.phase]).toEqual([p.metadata.uid, 'Running']);
            expect(await shareSeen(p.metadata.name)).toEqual(before.seen[i]);
          },
          240_000,
          1_000,
        );
        expect((await claimOf(p)).metadata.uid).toBe(before.claims[i]);
        expect(existsSync(path.join(CDI_DIR, cdiFile(before.claims[i])))).toBe(true);
      }
    }, 480_000);

    test("deleting the pods unprepares their claims: each share's daemon ends and its CDI spec is removed", async () => {
      const pods = ((await get(['pods', '-n', NS])).items as Obj[]).filter(
        (p) => p.metadata.labels?.[ENABLED_LABEL] === 'true' || p.metadata.labels?.app,
      );
      const claims = await Promise.all(pods.map(claimOf));
      const pipes = await Promise.all(pods.map((p) => shareSeen(p.metadata.name).then((s) => s.pipe)));
      await cp().kubectlOk(['delete', 'deployment', '-n', NS, '--all', '--wait=true']);
      await cp().kubectlOk(['delete', 'pod', '-n', NS, '--all', '--wait=true']);
      await eventually(
        async () => {
          expect(pipes.filter((p) => existsSync(path.dirname(p)))).toEqual([]);
          expect(readdirSync(CDI_DIR).filter((f) => claims.some((c) => f === cdiFile(c.metadata.uid)))).toEqual([]);
        },
        90_000,
        1_000,
      );
    });
  },
);

/** The file of a claim's CDI spec (lib/runtime/agent/cdi/writer.ts). */
function cdiFile(claimUid: string): string {
  return `tensor-fusion.ai-share_${claimDevice(claimUid)}.json`;
}

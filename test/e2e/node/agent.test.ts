/**
 * The node agent as the DaemonSet `TensorFusionController` renders (`nodeAgent: true`) on a real node:
 * its pod gets its ServiceAccount token and reaches kube-apiserver through the `kubernetes` Service
 * (kube-proxy), shares the host PID namespace, and attributes GPU processes to namespace, pod and
 * container through the kubelet's real cgroup layout. nvidia-smi is a fake (no GPU here) that reports,
 * in the format of the H100 driver 580 output, the host pids of real processes in real test
 * containers; the real Prometheus scrapes the agent's pod IP.
 */
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { IMAGE_REFS } from '../../envtest/images';
import { builtFake } from '../../support/built-fake';
import { onTestMachine, removeDaemonCgroup, testDaemonCgroup } from '../../support/node/gpu-agent';
import { loadControllerBundle } from '../../../lib/contract/bundle-loader';
import { agentNamespace, renderController } from '../../../lib/render/controller';
import { CONTROLLER_DEFAULTS } from '../../../lib/render/controller/props';
import { AGENT_METRICS } from '../../../lib/contract/agent';
import { podOfPid } from '../../../lib/runtime/agent/cgroup';
import { writeYaml } from '../../support/control-plane/install';
import { busyboxContainer, defaultServiceAccount, describeRealNode, NODE_NAME } from '../../support/node';
import { prometheusAvailable, RunningPrometheus, startPrometheus } from '../../support/prometheus';
import { eventually } from '../../runtime/fixtures';

jest.setTimeout(240_000);

type Obj = Record<string, any>;

const NS = 'gpu-users';
const H100 = { index: 0, uuid: 'GPU-2a5e6c3f-8d4b-4f0e-9c1a-7b3d5e9f1a2c', name: 'NVIDIA H100 80GB HBM3' };
const FAKE_SMI = builtFake('fake-nvidia-smi');

/** Host pids of the processes in one container, found through their cgroups as the agent finds them. */
async function containerPids(podUid: string, containerId: string): Promise<number[]> {
  const out: number[] = [];
  for (const d of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    const pc = await podOfPid('/proc', Number(d));
    if (pc?.podUid === podUid && pc.containerId === containerId) out.push(Number(d));
  }
  return out;
}

// Without prometheus the file skips with one line (fails under CI), as the autoscaling suites do.
if (prometheusAvailable('test/e2e/node/agent.test.ts'))
  describeRealNode('the node agent as a DaemonSet pod on a real node', { controllerManager: true, scheduler: true }, {}, (h) => {
    const cp = () => h().cp;
    const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
    const smiDir = mkdtempSync(path.join(tmpdir(), 'tf-fake-smi-'));
    const daemonCgroup = testDaemonCgroup();
    let prometheus: RunningPrometheus | undefined;

    beforeAll(async () => {
      // The fake (a static binary), and an empty trace until the test knows the pids.
      copyFileSync(FAKE_SMI, path.join(smiDir, 'nvidia-smi'));
      writeFileSync(path.join(smiDir, 'trace.json'), JSON.stringify({ gpus: [H100], steps: [{ apps: [] }] }));
      writeFileSync(path.join(smiDir, 'step'), '0');
      chmodSync(smiDir, 0o755);
      const docs = renderController(
        { nodeAgent: true, nodeImage: IMAGE_REFS.node, nodeAgentImage: IMAGE_REFS.node },
        loadControllerBundle(),
      ) as Obj[];
      // Test-only changes to the rendered DaemonSet: the fake nvidia-smi from a hostPath folder, no mount propagation.
      for (const d of docs) {
        if (d.kind !== 'DaemonSet') continue;
        const spec = (d as Obj).spec.template.spec;
        spec.volumes = [...(spec.volumes ?? []), { name: 'fake-smi', hostPath: { path: smiDir, type: 'Directory' } }];
        const c = spec.containers[0];
        onTestMachine(spec, daemonCgroup);
        c.volumeMounts = [...c.volumeMounts, { name: 'fake-smi', mountPath: '/opt/fake-smi', readOnly: true }];
        c.env = [
          ...c.env,
          { name: 'NVIDIA_SMI', value: '/opt/fake-smi/nvidia-smi' },
          { name: 'FAKE_SMI_TRACE', value: '/opt/fake-smi/trace.json' },
          { name: 'FAKE_SMI_STEP_FILE', value: '/opt/fake-smi/step' },
        ];
      }
      // The install without the controller Deployment and its webhook: this suite is about the agent alone.
      const install = docs.filter((d) => d.kind !== 'MutatingWebhookConfiguration' && d.kind !== 'Deployment');
      await cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(smiDir, 'controller.yaml', install)]);
      await cp().kubectlOk(['label', 'node', NODE_NAME, 'nvidia.com/gpu.present=true']);
      await cp().kubectlOk(['create', 'namespace', NS]);
      await defaultServiceAccount(cp(), NS);
    }, 180_000);

    afterAll(async () => {
      await prometheus?.stop();
      rmSync(smiDir, { recursive: true, force: true });
      removeDaemonCgroup(daemonCgroup);
    });

    test('the agent attributes the pids nvidia-smi reports to the right namespace, pod and container; Prometheus scrapes it', async () => {
      const ns = agentNamespace({ namespace: CONTROLLER_DEFAULTS.namespace });
      let agent: Obj = {};
      await eventually(
        async () => {
          const pods = (await get(['pods', '-n', ns])).items as Obj[];
          expect(pods.map((p) => [p.spec.nodeName, p.status.phase, p.status.containerStatuses?.[0]?.ready])).toEqual([
            [NODE_NAME, 'Running', true],
          ]);
          agent = pods[0];
        },
        120_000,
        500,
      );

      // Two containers of one pod, each with a process that "uses the GPU".
      await cp().kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'trainer', namespace: NS },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: ['main', 'side'].map((name) => busyboxContainer(name)),
          },
        }),
      });
      let trainer: Obj = {};
      await eventually(
        async () => {
          trainer = await get(['pod', '-n', NS, 'trainer']);
          expect(trainer.status.containerStatuses?.every((s: Obj) => s.state.running)).toBe(true);
        },
        120_000,
        500,
      );
      const ids = Object.fromEntries(
        (trainer.status.containerStatuses as Obj[]).map((s) => [s.name, s.containerID.replace(/^containerd:\/\//, '')]),
      );
      const pids = { main: await containerPids(trainer.metadata.uid, ids.main), side: await containerPids(trainer.metadata.uid, ids.side) };
      expect(pids.main.length).toBeGreaterThan(0);
      expect(pids.side.length).toBeGreaterThan(0);
      // Without MPS: each process shows its own memory and SM %.
      writeFileSync(
        path.join(smiDir, 'trace.json'),
        JSON.stringify({
          gpus: [H100],
          steps: [
            {
              apps: [
                { pid: pids.main[0], gpu: 0, mib: 2048, sm: 30 },
                { pid: pids.side[0], gpu: 0, mib: 512, sm: 10 },
              ],
            },
          ],
        }),
      );

      prometheus = await startPrometheus([`${agent.status.podIP}:9410`]);
      const query = async (q: string): Promise<Obj[]> => {
        const res = await fetch(`${prometheus!.url}/api/v1/query?query=${encodeURIComponent(q)}`);
        return ((await res.json()) as Obj).data.result as Obj[];
      };
      await eventually(
        async () => {
          const series = await query(AGENT_METRICS.vramUsed);
          const byContainer = Object.fromEntries(
            series.map((s) => [`${s.metric.namespace}/${s.metric.pod}/${s.metric.container}`, Number(s.value[1])]),
          );
          expect(byContainer).toEqual({ [`${NS}/trainer/main`]: 2048 * 2 ** 20, [`${NS}/trainer/side`]: 512 * 2 ** 20 });
          for (const s of series) expect(s.metric).toMatchObject({ pod_uid: trainer.metadata.uid, gpu_uuid: H100.uuid });
        },
        90_000,
        1_000,
      );
      const unattributed = await query(AGENT_METRICS.unattributed);
      expect(unattributed.map((s) => Number(s.value[1]))).toEqual([0]);
    });
  });

/**
 * The node agent as `TensorFusionController` renders it (`nodeAgent: true`), on the real node, with
 * fakes where the machine has no GPU: nvidia-smi (test/support/fake-nvidia-smi.c, replaying a trace
 * the caller writes), nvidia-cuda-mps-control (test/support/fake-mps-control.c), both static binaries, character devices
 * standing for the GPUs (/dev/null's numbers) and the driver's per-GPU folders, whose device minors
 * are the reverse of the nvidia-smi indexes (as on hosts where they differ). The agent's folders are
 * at the same paths inside its container as on the host, since the CDI specs it writes name host paths.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { IMAGE_REFS } from '../../envtest/images';
import { loadControllerBundle } from '../../../lib/contract/bundle-loader';
import { SHARE_RESOURCE } from '../../../lib/model/metadata-keys';
import { AGENT_NAMES, agentNamespace, renderController } from '../../../lib/render/controller';
import { CONTROLLER_DEFAULTS } from '../../../lib/render/controller/props';
import { AGENT_DEFAULTS, AGENT_ENV } from '../../../lib/contract/agent';
import type { SmiGpu } from '../../../lib/runtime/agent/nvidia-smi';
import type { ControlPlane } from '../control-plane';
import { NODE_NAME } from '../control-plane/control-plane';
import { writeYaml } from '../control-plane/install';
import { builtFake } from '../built-fake';
import { fakeMpsControl } from '../fake-mps-control';
import { cgroupV1Hierarchies, parseMountinfo } from '../../../lib/runtime/agent/mps/cgroup-mounts';
import { eventually } from '../poll';

type Obj = Record<string, any>;

/** The fake nvidia-cuda-mps-control, built. */
export const FAKE_MPS_CONTROL = fakeMpsControl();
/** The fake nvidia-smi, built: C, as cheap to start as the real one (the backstop runs it every 200 ms). */
const FAKE_SMI = builtFake('fake-nvidia-smi');

export interface FakeGpuAgent {
  /** The agent's namespace. */
  readonly namespace: string;
  /** Host folder of the shares' MPS folders. */
  readonly mpsDir: string;
  /** The daemons' cgroup folder ({@link onTestMachine}); undefined where the machine has no cgroup v2. */
  readonly daemonCgroup?: string;
  /** Replaces the fake nvidia-smi's trace (what it reports from now on). */
  trace(apps: readonly { pid: number; gpu: number; mib: number; sm: number | null; mps?: 'server' | 'client' }[]): void;
  /** The agent's one pod, once it runs and is ready: its device plugin registered with the kubelet (a deleted one gone). */
  runningPod(): Promise<Obj>;
  /** Removes the fakes' folder (after the control plane stopped). */
  cleanUp(): void;
}

/**
 * The agent's pod spec as this machine can serve it (changed in place):
 *  - its mounts are private, so none propagates from the host (a real node's / is shared, and the
 *    driver root's does);
 *  - the daemons' cgroup is `daemonCgroup` ({@link testDaemonCgroup}): a folder of the machine's
 *    cgroup v2 hierarchy, so the agent's move and its read-back run for real. Here that is the
 *    unified hierarchy of a hybrid host (the kubelet runs on cgroup v1, `failCgroupV1: false`), with
 *    no memory controller (no limit); the agent's moves into the folder of the same name in each v1
 *    hierarchy (the host's /sys/fs/cgroup, mounted as rendered) run for real too, and take the
 *    daemons out of the container's v1 cgroups, through which runc finds its processes. Without a
 *    cgroup v2 hierarchy the folders are left out (the daemons stay in the agent's container).
 */
export function onTestMachine(spec: Obj, daemonCgroup: string | undefined): void {
  const c = spec.containers[0];
  c.volumeMounts = (c.volumeMounts as Obj[]).map((m) => (m.mountPropagation ? { ...m, mountPropagation: 'None' } : m));
  spec.volumes = (spec.volumes as Obj[]).flatMap((v) =>
    v.name !== 'daemon-cgroup' ? [v] : daemonCgroup ? [{ ...v, hostPath: { path: daemonCgroup, type: 'DirectoryOrCreate' } }] : [],
  );
  c.env = (c.env as Obj[]).map((e) =>
    e.name === AGENT_ENV.mpsDaemonCgroupName && daemonCgroup ? { ...e, value: path.basename(daemonCgroup) } : e,
  );
  if (daemonCgroup) return;
  const cgroupVolumes = ['daemon-cgroup', 'host-cgroup'];
  spec.volumes = (spec.volumes as Obj[]).filter((v) => !cgroupVolumes.includes(v.name));
  c.volumeMounts = (c.volumeMounts as Obj[]).filter((m) => !cgroupVolumes.includes(m.name));
  const cgroupEnv: string[] = [AGENT_ENV.mpsDaemonCgroup, AGENT_ENV.hostCgroup, AGENT_ENV.mpsDaemonCgroupName];
  c.env = (c.env as Obj[]).filter((e) => !cgroupEnv.includes(e.name));
}

/** This machine's cgroup v2 hierarchy: /sys/fs/cgroup (a v2 host), /sys/fs/cgroup/unified (hybrid), or none. */
function cgroup2Root(): string | undefined {
  return ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].find((d) => existsSync(path.join(d, 'cgroup.controllers')));
}

/** A daemon cgroup folder for one suite (not made yet: the kubelet makes it), or undefined without cgroup v2. */
export function testDaemonCgroup(): string | undefined {
  const root = cgroup2Root();
  return root && path.join(root, `tf-mps-test-${process.pid}-${Date.now()}`);
}

/**
 * Removes a suite's daemon cgroup and the shares' cgroups in it, and the folders of the same name in
 * this machine's cgroup v1 hierarchies, killing the daemons still there (the node's cleanup may not
 * have reached them yet); throws when one cannot be removed within 5 s.
 */
export function removeDaemonCgroup(dir: string | undefined): void {
  if (!dir) return;
  const v1 = cgroupV1Hierarchies(parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8')), '/sys/fs/cgroup');
  for (const top of [dir, ...v1.map((h) => path.join(h, path.basename(dir)))]) if (existsSync(top)) removeCgroupTree(top);
}

function removeCgroupTree(dir: string): void {
  const shares = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => path.join(dir, e.name));
  for (const cg of [...shares, dir]) {
    for (const until = Date.now() + 5_000; ;) {
      for (const pid of readFileSync(path.join(cg, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      try {
        rmdirSync(cg);
        break;
      } catch (err) {
        if (Date.now() > until) throw new Error(`removing the test daemon cgroup ${cg}: ${(err as Error).message}`);
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
      }
    }
  }
}

/** The driver libraries of the fake driver root (files of text: nothing loads them). */
export const FAKE_DRIVER_LIBRARIES = ['libcuda.so.580.159.04', 'libnvidia-ml.so.580.159.04', 'libnvidia-ptxjitcompiler.so.580.159.04'];

/** The device minor the fake driver gives a GPU: the reverse of its index. */
export function fakeMinor(gpus: readonly SmiGpu[], gpu: Pick<SmiGpu, 'index'>): number {
  return gpus.length - 1 - gpu.index;
}

/**
 * Applies the agent's objects with the fakes for `gpus`, labels the node a GPU node, and resolves
 * once the kubelet lists the share resource (a resource no plugin registered is dropped by the
 * kubelet's admission, so a GPU pod created before would start without its devices).
 */
export async function installFakeGpuAgent(
  cp: ControlPlane,
  gpus: readonly SmiGpu[],
  waitFor: (what: string, check: () => Promise<boolean>) => Promise<void>,
): Promise<FakeGpuAgent> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-gpu-agent-'));
  const fakes = path.join(dir, 'bin');
  const devRoot = path.join(dir, 'dev');
  const mpsDir = path.join(dir, 'mps');
  for (const d of [fakes, devRoot, mpsDir]) mkdirSync(d, { recursive: true });
  copyFileSync(FAKE_SMI, path.join(fakes, 'nvidia-smi'));
  copyFileSync(FAKE_MPS_CONTROL, path.join(fakes, 'nvidia-cuda-mps-control'));
  const trace = (apps: Parameters<FakeGpuAgent['trace']>[0]) =>
    writeFileSync(path.join(fakes, 'trace.json'), JSON.stringify({ gpus, steps: [{ apps }] }));
  trace([]);
  writeFileSync(path.join(fakes, 'step'), '0');
  for (const n of ['nvidiactl', 'nvidia-uvm', ...gpus.map((g) => `nvidia${fakeMinor(gpus, g)}`)])
    execFileSync('mknod', ['-m', '666', path.join(devRoot, n), 'c', '1', '3']);
  // A driver root with the libraries a share's CDI spec mounts (the host's / in production).
  const driverRoot = path.join(dir, 'driver-root');
  mkdirSync(path.join(driverRoot, 'usr', 'lib64'), { recursive: true });
  for (const lib of FAKE_DRIVER_LIBRARIES) writeFileSync(path.join(driverRoot, 'usr', 'lib64', lib), `fake ${lib}\n`);
  const procDir = path.join(dir, 'proc-driver-nvidia-gpus');
  for (const g of gpus) {
    const bus = path.join(procDir, `0000:${String(g.index + 1).padStart(2, '0')}:00.0`);
    mkdirSync(bus, { recursive: true });
    writeFileSync(path.join(bus, 'information'), `Model: \t\t ${g.name}\nGPU UUID: \t ${g.uuid}\nDevice Minor: \t ${fakeMinor(gpus, g)}\n`);
  }
  chmodSync(dir, 0o755);

  const namespace = agentNamespace({ namespace: CONTROLLER_DEFAULTS.namespace });
  const daemonCgroup = testDaemonCgroup();
  const docs = renderController(
    { nodeAgent: true, nodeImage: IMAGE_REFS.node, nodeAgentImage: IMAGE_REFS.node },
    loadControllerBundle(),
  ) as Obj[];
  for (const d of docs.filter((x) => x.kind === 'DaemonSet')) {
    const spec = d.spec.template.spec;
    spec.volumes = spec.volumes.map((v: Obj) =>
      v.name === 'mps'
        ? { name: 'mps', hostPath: { path: mpsDir, type: 'Directory' } }
        : v.name === 'driver-root'
          ? { name: 'driver-root', hostPath: { path: driverRoot, type: 'Directory' } }
          : v,
    );
    spec.volumes.push({ name: 'fakes', hostPath: { path: dir, type: 'Directory' } });
    onTestMachine(spec, daemonCgroup);
    const c = spec.containers[0];
    c.volumeMounts = [
      ...c.volumeMounts.map((m: Obj) => (m.name === 'mps' ? { ...m, mountPath: mpsDir } : m)),
      { name: 'fakes', mountPath: dir },
    ];
    c.env = [
      ...c.env.filter((e: Obj) => e.name !== 'MPS_DIR' && e.name !== 'DRIVER_ROOT'),
      { name: 'DRIVER_ROOT', value: driverRoot },
      { name: 'MPS_DIR', value: mpsDir },
      { name: 'DEV_ROOT', value: devRoot },
      { name: 'NVIDIA_PROC_DIR', value: procDir },
      { name: 'NVIDIA_SMI', value: path.join(fakes, 'nvidia-smi') },
      { name: 'MPS_CONTROL', value: path.join(fakes, 'nvidia-cuda-mps-control') },
      // The node image has no util-linux: each fake daemon shares the agent's /dev/shm.
      { name: 'MPS_SHM_ISOLATION', value: 'false' },
      { name: 'FAKE_SMI_TRACE', value: path.join(fakes, 'trace.json') },
      { name: 'FAKE_SMI_STEP_FILE', value: path.join(fakes, 'step') },
    ];
  }
  // Only the agent's objects: the controller runs as processes of the harness (installController).
  const agentDocs = docs.filter(
    (d) => d.metadata.namespace === namespace || d.metadata.name === namespace || d.metadata.name === AGENT_NAMES.agent,
  );
  await cp.kubectlOk(['apply', '--server-side', '-f', writeYaml(dir, 'agent.yaml', agentDocs)]);
  await cp.kubectlOk(['label', 'node', NODE_NAME, 'nvidia.com/gpu.present=true', '--overwrite']);
  const slots = String(gpus.length * AGENT_DEFAULTS.slotsPerGpu);
  try {
    await waitFor(`the kubelet lists ${SHARE_RESOURCE}`, async () => {
      const r = await cp.kubectl(['get', 'node', NODE_NAME, '-o', `jsonpath={.status.allocatable.tensor-fusion\\.ai/share}`]);
      return r.stdout.trim() === slots;
    });
  } catch (err) {
    // Say why: the agent's pod and the end of its log.
    const pods = await cp.kubectl(['get', 'pods', '-n', namespace, '-o', 'wide']);
    const logs = await cp.kubectl(['logs', '-n', namespace, '-l', 'app.kubernetes.io/component=node-agent', '--tail=30']);
    const events = await cp.kubectl(['get', 'events', '-n', namespace]);
    throw new Error(`${(err as Error).message}\n${pods.stdout}${logs.stdout}${logs.stderr}\n${events.stdout}`);
  }
  return {
    namespace,
    mpsDir,
    daemonCgroup,
    trace,
    runningPod: async () => {
      let pod: Obj = {};
      await eventually(
        async () => {
          const pods = (JSON.parse(await cp.kubectlOk(['get', 'pods', '-n', namespace, '-o', 'json'])).items as Obj[]).filter(
            (p) => !p.metadata.deletionTimestamp,
          );
          expect(pods.map((p) => [p.status.phase, p.status.containerStatuses?.[0]?.ready])).toEqual([['Running', true]]);
          pod = pods[0];
        },
        120_000,
        500,
      );
      return pod;
    },
    cleanUp: () => {
      removeDaemonCgroup(daemonCgroup);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

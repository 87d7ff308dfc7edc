/** The node agent against a fake nvidia-smi replaying a known trace, a fake /proc, over HTTP on 127.0.0.1. */
import { parseCgroup } from '../../../lib/runtime/agent/cgroup';
import { AGENT_METRICS } from '../../../lib/contract/agent';
import { readAgentEnv, startAgent, Agent } from '../../../lib/runtime/agent/agent-server';
import { mpsEstimates } from '../../../lib/runtime/agent/collector';
import { isMpsClient, isMpsServer, parseComputeApps, parseGpus, parsePmon } from '../../../lib/runtime/agent/nvidia-smi';
import { containerIdOf, indexPods, NodePodResolver } from '../../../lib/runtime/agent/pods';
import type { Cluster, K8sObject } from '../../../lib/runtime/kube/cluster';
import { fakeNode, FakeNode, MPS_TRACE, POD_A, POD_B, Trace, TRACE } from './fixtures';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Real nvidia-smi output of an H100 (driver 580), copied into the repo's fixtures (test/fixtures/gpu). */
const H100_FIXTURES = join(__dirname, '../../fixtures/gpu/h100-driver-580');

const MIB = 2 ** 20;

describe('parsers', () => {
  it('reads the compute-apps CSV in bytes, tolerating [N/A] and the no-process line', () => {
    expect(parseComputeApps('101, 1024, GPU-a\n202, [N/A], GPU-b\nNo running processes found\n')).toEqual([
      { pid: 101, usedBytes: 1024 * MIB, gpuUuid: 'GPU-a' },
      { pid: 202, usedBytes: 0, gpuUuid: 'GPU-b' },
    ]);
  });
  it('reads the GPU list, names with commas included', () => {
    expect(parseGpus('0, GPU-a, NVIDIA A100-SXM4-80GB\n')).toEqual([{ index: 0, uuid: 'GPU-a', name: 'NVIDIA A100-SXM4-80GB' }]);
  });
  it('reads pmon by its header, `-` as no sample and idle GPUs skipped', () => {
    const text =
      '# gpu pid type sm mem enc dec command\n# Idx # C/G % % % % name\n 0 101 C 45 3 - - python\n 1 - - - - - - -\n 0 102 C - - - - python\n';
    expect(parsePmon(text)).toEqual([
      { gpuIndex: 0, pid: 101, sm: 0.45, type: 'C', command: 'python' },
      { gpuIndex: 0, pid: 102, sm: 0, type: 'C', command: 'python' },
    ]);
  });
  it("reads a real H100's output (driver 580) with and without MPS: the server by name, its clients by type M+C", () => {
    const real = (f: string) => readFileSync(join(H100_FIXTURES, f), 'utf8');
    const gpu = parseGpus(real('query-gpu.txt'));
    expect(gpu).toEqual([{ index: 0, uuid: 'GPU-b452f3e7-0de2-2394-680b-5428231b7179', name: 'NVIDIA H100 80GB HBM3' }]);
    const plain = parsePmon(real('pmon-no-mps.txt'));
    expect(plain.map((r) => [r.pid, r.sm, isMpsClient(r), isMpsServer(r)])).toEqual([
      [505, 0.55, false, false],
      [506, 0.44, false, false],
    ]);
    const mps = parsePmon(real('pmon-mps.txt'));
    expect(mps.map((r) => [r.pid, r.sm, isMpsClient(r), isMpsServer(r)])).toEqual([
      [782, 0.99, false, true],
      [869, 0, true, false],
      [870, 0, true, false],
    ]);
    expect(parseComputeApps(real('query-compute-apps-mps.txt')).map((a) => [a.pid, a.usedBytes / MIB])).toEqual([
      [782, 66],
      [869, 2806],
      [870, 3830],
    ]);
  });
  it('attributes cgroup v1 and v2 paths to the pod UID and container id; others to nothing', () => {
    expect(
      parseCgroup(`0::/kubepods.slice/kubepods-pod${POD_A.uid.replace(/-/g, '_')}.slice/cri-containerd-${POD_A.containerId}.scope`),
    ).toEqual({ podUid: POD_A.uid, containerId: POD_A.containerId });
    expect(parseCgroup(`4:pids:/kubepods/pod${POD_B.uid}/${POD_B.containerId}`)).toEqual({
      podUid: POD_B.uid,
      containerId: POD_B.containerId,
    });
    expect(parseCgroup('0::/user.slice/user-1000.slice/session-1.scope')).toBeUndefined();
  });
  it('indexes pods by UID with container ids from their statuses', () => {
    const index = indexPods([
      {
        metadata: { uid: 'u1', name: 'p', namespace: 'n' },
        status: { containerStatuses: [{ name: 'c', containerID: 'containerd://abc' }] },
      },
    ]);
    expect(index.get('u1')).toEqual({ namespace: 'n', pod: 'p', containers: new Map([['abc', 'c']]) });
    expect(containerIdOf(undefined)).toBeUndefined();
  });
});

describe('agent environment', () => {
  it('names every bad variable', () => {
    expect(() =>
      readAgentEnv({ AGENT_PORT: '70000', NODE_ISOLATION: 'yes', MPS_SHM_ISOLATION: '0', MPS_DAEMON_CGROUP: 'sys/fs/cgroup/tf' }),
    ).toThrow(
      'agent environment: NODE_NAME: got nothing, expected the node name (downward API spec.nodeName)\nAGENT_PORT: got "70000", expected a port number from 0 to 65535' +
        '\nNODE_ISOLATION: got "yes", expected "on" or "off"\nMPS_SHM_ISOLATION: got "0", expected "true" or "false"' +
        '\nMPS_DAEMON_CGROUP: got "sys/fs/cgroup/tf", expected an absolute path (a cgroup v2 folder), or unset',
    );
    expect(() => readAgentEnv({ NODE_NAME: 'gpu-1', HOST_CGROUP: 'host-cgroup', MPS_DAEMON_CGROUP_NAME: '..' })).toThrow(
      'agent environment: HOST_CGROUP: got "host-cgroup", expected an absolute path (the host\'s /sys/fs/cgroup, mounted), or unset' +
        '\nMPS_DAEMON_CGROUP_NAME: got "..", expected one folder name (letters, digits, ".", "_", "-"), or unset',
    );
    expect(() => readAgentEnv({ NODE_NAME: 'gpu-1', MPS_DAEMON_CGROUP_NAME: 'a/b' })).toThrow(
      'agent environment: MPS_DAEMON_CGROUP_NAME: got "a/b", expected one folder name (letters, digits, ".", "_", "-"), or unset',
    );
    expect(readAgentEnv({ NODE_NAME: 'gpu-1' })).toEqual({
      nodeName: 'gpu-1',
      port: 9410,
      nvidiaSmi: 'nvidia-smi',
      procRoot: '/proc',
      logLevel: 'info',
      isolation: true,
      mpsShmIsolation: true,
      mpsControl: 'nvidia-cuda-mps-control',
      mpsDir: '/run/tensor-fusion/mps',
      pluginDir: '/var/lib/kubelet/device-plugins',
      pluginRegistryDir: '/var/lib/kubelet/plugins_registry',
      draPluginDir: '/var/lib/kubelet/plugins/gpu.tensor-fusion.ai',
      devRoot: '/dev',
      cdiDir: '/var/run/cdi',
      podResourcesSocket: '/var/lib/kubelet/pod-resources/kubelet.sock',
      nvidiaProcDir: '/proc/driver/nvidia/gpus',
      driverRoot: '/',
      driverRootMount: '/driver-root',
    });
    expect(readAgentEnv({ NODE_NAME: 'gpu-1' }).mpsDaemonCgroup).toBeUndefined();
    expect(
      readAgentEnv({
        NODE_NAME: 'gpu-1',
        NODE_ISOLATION: 'off',
        MPS_SHM_ISOLATION: 'false',
        MPS_DAEMON_CGROUP: '/daemon-cgroup',
        HOST_CGROUP: '/host-cgroup',
        MPS_DAEMON_CGROUP_NAME: 'tensor-fusion-mps',
      }),
    ).toMatchObject({
      isolation: false,
      mpsShmIsolation: false,
      mpsDaemonCgroup: '/daemon-cgroup',
      hostCgroup: '/host-cgroup',
      mpsDaemonCgroupName: 'tensor-fusion-mps',
    });
  });
});

/** An agent on 127.0.0.1 over a fake node showing `trace`, started before the describe's tests and stopped after. */
function agentOnFakeNode(trace?: Trace): { node: FakeNode; agent: Agent } {
  const on = {} as { node: FakeNode; agent: Agent };
  beforeAll(async () => {
    on.node = fakeNode(undefined, trace);
    on.agent = await startAgent(
      { nodeName: 'gpu-1', port: 0, nvidiaSmi: on.node.nvidiaSmi, procRoot: on.node.procRoot, logLevel: 'silent' },
      on.node.resolver,
      '127.0.0.1',
    );
  });
  afterAll(async () => {
    await on.agent.stop();
    on.node.cleanup();
  });
  return on;
}

describe('agent over HTTP with a fake nvidia-smi', () => {
  const on = agentOnFakeNode();

  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${on.agent.server.port}/metrics`);
    expect(res.status).toBe(200);
    return res.text();
  };
  const series = (text: string, name: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${name}{`))
      .map((l) => l.replace(/ [^ ]+$/, (v) => ` ${Number(v).toFixed(4)}`))
      .sort();

  it('exports per pod, container and GPU: VRAM bytes, SM ratio and TFLOPS from the catalog (A100: 312)', async () => {
    on.node.setStep(0);
    const text = await scrape();
    const [g0, g1] = TRACE.gpus.map((g) => g.uuid);
    const a = `namespace="ml",pod="train-0",container="python",pod_uid="${POD_A.uid}",gpu_uuid="${g0}",gpu_model="A100",node="gpu-1"`;
    const b = `namespace="ml",pod="infer-0",container="server",pod_uid="${POD_B.uid}",gpu_uuid="${g1}",gpu_model="A100",node="gpu-1"`;
    expect(series(text, AGENT_METRICS.vramUsed)).toEqual([
      `${AGENT_METRICS.vramUsed}{${b}} ${(4096 * MIB).toFixed(4)}`,
      `${AGENT_METRICS.vramUsed}{${a}} ${(1536 * MIB).toFixed(4)}`,
    ]);
    expect(series(text, AGENT_METRICS.smUtilization)).toEqual([
      `${AGENT_METRICS.smUtilization}{${b}} 0.5000`,
      `${AGENT_METRICS.smUtilization}{${a}} 0.3000`,
    ]);
    expect(series(text, AGENT_METRICS.computeUsed)).toEqual([
      `${AGENT_METRICS.computeUsed}{${b}} ${(0.5 * 312).toFixed(4)}`,
      `${AGENT_METRICS.computeUsed}{${a}} ${(0.3 * 312).toFixed(4)}`,
    ]);
    expect(text).toContain(`${AGENT_METRICS.gpuCapacity}{gpu_uuid="${g0}",gpu_model="A100",node="gpu-1"} 312`);
    expect(text).toContain(`${AGENT_METRICS.unattributed}{node="gpu-1"} 1`);
  });

  it('follows the trace: the next step replaces the values, and series of processes that ended disappear', async () => {
    on.node.setStep(1);
    let text = await scrape();
    expect(series(text, AGENT_METRICS.vramUsed).map((l) => l.split(' ')[1])).toEqual([(4096 * MIB).toFixed(4), (2048 * MIB).toFixed(4)]);
    expect(series(text, AGENT_METRICS.smUtilization).map((l) => l.split(' ')[1])).toEqual(['0.0000', '0.4000']);
    on.node.setStep(2);
    text = await scrape();
    expect(series(text, AGENT_METRICS.vramUsed)).toEqual([]);
    expect(text).toContain(`${AGENT_METRICS.unattributed}{node="gpu-1"} 0`);
  });

  it('counts a failing nvidia-smi and keeps serving', async () => {
    on.node.breakSmi(true);
    try {
      const text = await scrape();
      expect(text).toMatch(new RegExp(`${AGENT_METRICS.collectErrors}\\{query="apps",node="gpu-1"\\} [1-9]`));
    } finally {
      on.node.breakSmi(false);
    }
  });
});

describe('agent on an MPS GPU', () => {
  const on = agentOnFakeNode(MPS_TRACE);

  it("reports each client's VRAM exactly, no measured compute for clients, an estimate split by caps, and the server as a server", async () => {
    const text = await (await fetch(`http://127.0.0.1:${on.agent.server.port}/metrics`)).text();
    const value = (name: string, pod: string) =>
      text
        .split('\n')
        .find((l) => l.startsWith(`${name}{`) && l.includes(`pod="${pod}"`))
        ?.split(' ')[1];
    expect([value(AGENT_METRICS.vramUsed, 'train-0'), value(AGENT_METRICS.vramUsed, 'infer-0')].map(Number)).toEqual([
      2806 * MIB,
      3830 * MIB,
    ]);
    // pmon credits the clients' work to the server: no measured per-client figure, and no 0 in its place.
    expect(text).not.toMatch(new RegExp(`^${AGENT_METRICS.computeUsed}\\{`, 'm'));
    expect(text).not.toMatch(new RegExp(`^${AGENT_METRICS.smUtilization}\\{`, 'm'));
    // The server's 60 % of 312 TFLOPS split 25:50 by the caps (78 and 156 TFLOPS): 62.4 and 124.8.
    expect(Number(value(AGENT_METRICS.computeEstimated, 'train-0'))).toBeCloseTo(62.4, 6);
    expect(Number(value(AGENT_METRICS.computeEstimated, 'infer-0'))).toBeCloseTo(124.8, 6);
    expect([value(AGENT_METRICS.computeCap, 'train-0'), value(AGENT_METRICS.computeCap, 'infer-0')].map(Number)).toEqual([78, 156]);
    expect(text).toContain(`${AGENT_METRICS.mpsServers}{gpu_uuid="${TRACE.gpus[0].uuid}",gpu_model="A100",node="gpu-1"} 1`);
    expect(text).toContain(`${AGENT_METRICS.unattributed}{node="gpu-1"} 0`);
  });

  it("caps each estimate at its pod's cap, and splits evenly where caps are unknown", () => {
    const row = (pod: string, capRatio?: number) => ({
      labels: { namespace: 'n', pod, container: 'c', pod_uid: pod, gpu_uuid: 'g', gpu_model: 'A100' },
      bytes: 0,
      sm: 0,
      tflops: 100,
      measured: false,
      mps: true,
      capRatio,
    });
    const capped = mpsEstimates([row('a', 0.1), row('b', 0.9)], new Map([['g', 1]]));
    expect(capped.map(([r, v]) => [r.labels.pod, v])).toEqual([
      ['a', 10],
      ['b', 90],
    ]);
    const low = mpsEstimates([row('a', 0.1), row('b', 0.1)], new Map([['g', 0.8]]));
    expect(low.map(([, v]) => v)).toEqual([10, 10]);
    expect(mpsEstimates([row('a'), row('b')], new Map([['g', 0.5]])).map(([, v]) => v)).toEqual([25, 25]);
  });
});

describe('NodePodResolver', () => {
  /** A cluster whose LIST of pods returns each of `answers` in turn (the last one repeats). */
  const listing = (answers: K8sObject[][]) => {
    let calls = 0;
    const cluster = { list: async () => ({ items: answers[Math.min(calls++, answers.length - 1)], metadata: {} }) } as unknown as Cluster;
    return { cluster, calls: () => calls };
  };
  const pod = (containerID?: string): K8sObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: POD_A.pod, namespace: POD_A.namespace, uid: POD_A.uid },
    status: { containerStatuses: [{ name: POD_A.container, ...(containerID ? { containerID } : {}) }] },
  });

  it('lists again when a known pod shows a container id it has not seen (listed before the kubelet reported it, or restarted)', async () => {
    const api = listing([[pod()], [pod(`containerd://${POD_A.containerId}`)]]);
    const resolver = new NodePodResolver(api.cluster, 'gpu-1', 0);
    await resolver.refresh();
    expect(resolver.resolve(POD_A.uid, POD_A.containerId)).toEqual({ namespace: 'ml', pod: 'train-0', container: undefined });
    await new Promise((r) => setImmediate(r));
    expect(api.calls()).toBe(2);
    expect(resolver.resolve(POD_A.uid, POD_A.containerId)).toEqual({ namespace: 'ml', pod: 'train-0', container: 'python' });
    // Known pod and container: no more lists.
    expect(api.calls()).toBe(2);
  });

  it('lists at most every minRefreshMs', async () => {
    const api = listing([[]]);
    const resolver = new NodePodResolver(api.cluster, 'gpu-1', 60_000);
    await resolver.refresh();
    for (let i = 0; i < 5; i++) expect(resolver.resolve(POD_B.uid, POD_B.containerId)).toBeUndefined();
    expect(api.calls()).toBe(1);
  });

  it('logs a list that failed while resolving, and lists again at the next unknown pod', async () => {
    let calls = 0;
    const cluster = {
      list: async () => {
        if (calls++ === 0) throw new Error('connection refused');
        return { items: [pod()], metadata: {} };
      },
    } as unknown as Cluster;
    const logs: [string, Record<string, unknown> | undefined][] = [];
    const resolver = new NodePodResolver(cluster, 'gpu-1', 0, (msg, fields) => logs.push([msg, fields]));
    expect(resolver.resolve(POD_A.uid)).toBeUndefined();
    await new Promise((r) => setImmediate(r));
    expect(logs).toEqual([['listing the node pods failed; retrying on demand', { err: 'Error: connection refused' }]]);
    resolver.resolve(POD_A.uid);
    await new Promise((r) => setImmediate(r));
    expect(resolver.resolve(POD_A.uid)).toEqual({ namespace: 'ml', pod: 'train-0', container: undefined });
  });
});

describe('agent readiness', () => {
  it("/readyz answers what the agent's parts report: 503 naming the one not ready, then 200", async () => {
    const node = fakeNode();
    let registered = false;
    const agent = await startAgent(
      { nodeName: 'gpu-1', port: 0, nvidiaSmi: node.nvidiaSmi, procRoot: node.procRoot, logLevel: 'silent' },
      node.resolver,
      '127.0.0.1',
      undefined,
      { 'device-plugin': () => registered },
    );
    try {
      const probe = async () => {
        const res = await fetch(`http://127.0.0.1:${agent.server.port}/readyz`);
        return [res.status, await res.text()];
      };
      expect(await probe()).toEqual([503, 'not ready: device-plugin']);
      registered = true;
      expect(await probe()).toEqual([200, 'ok']);
    } finally {
      await agent.stop();
      node.cleanup();
    }
  });
});

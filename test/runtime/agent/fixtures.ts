/** A replayed GPU trace for the node agent: a fake /proc and the fake nvidia-smi's trace file. */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodResolver } from '../../../lib/runtime/agent/collector';
import { CdiWriter } from '../../../lib/runtime/agent/cdi/writer';
import { MpsShare, MpsSupervisor } from '../../../lib/runtime/agent/mps/supervisor';
import { ShareDelivery } from '../../../lib/runtime/agent/share/delivery';
import { fakeMpsControl } from '../../support/fake-mps-control';
import { FakeKubelet, startFakeKubelet } from '../../support/kubelet/fake-kubelet';
import type { ShareMembers } from '../../../lib/runtime/agent/share/members';

export const FAKE_SMI = join(__dirname, '..', '..', 'support', 'fake-nvidia-smi.js');

/** Two pods with their MPS thread percentages (compute caps): 25 % and 50 % of a GPU. */
export const POD_A = {
  uid: '1b4e28ba-2fa1-11d2-883f-0016d3cca427',
  namespace: 'ml',
  pod: 'train-0',
  container: 'python',
  containerId: 'a'.repeat(64),
  threadPercentage: 25,
};
export const POD_B = {
  uid: '6fa459ea-ee8a-3ca4-894e-db77e160355e',
  namespace: 'ml',
  pod: 'infer-0',
  container: 'server',
  containerId: 'b'.repeat(64),
  threadPercentage: 50,
};

/** What the fake nvidia-smi replays (test/support/fake-nvidia-smi.js). */
export interface Trace {
  gpus: { index: number; uuid: string; name: string }[];
  steps: { apps: { pid: number; gpu: number; mib: number; sm: number | null; mps?: 'server' | 'client' }[]; fail?: true }[];
}

/** Two A100s; pod A runs two processes on GPU 0, pod B one on GPU 1, pid 999 is a host process. */
export const TRACE: Trace = {
  gpus: [
    { index: 0, uuid: 'GPU-11111111-2222-3333-4444-555555555555', name: 'NVIDIA A100-SXM4-80GB' },
    { index: 1, uuid: 'GPU-66666666-7777-8888-9999-000000000000', name: 'NVIDIA A100-SXM4-80GB' },
  ],
  steps: [
    {
      apps: [
        { pid: 101, gpu: 0, mib: 1024, sm: 20 },
        { pid: 102, gpu: 0, mib: 512, sm: 10 },
        { pid: 201, gpu: 1, mib: 4096, sm: 50 },
        { pid: 999, gpu: 1, mib: 100, sm: 1 },
      ],
    },
    {
      apps: [
        { pid: 101, gpu: 0, mib: 2048, sm: 40 },
        { pid: 201, gpu: 1, mib: 4096, sm: null },
      ],
    },
    { apps: [] },
  ],
};

/**
 * GPU 0 under MPS, as ../shared/gpu/h100-driver-580 shows it: pid 900 is the MPS server (a host
 * process; pmon puts all SM % on it, 60 %), pods A and B are its clients (M+C, `-` for SM).
 */
export const MPS_TRACE: Trace = {
  gpus: TRACE.gpus,
  steps: [
    {
      apps: [
        { pid: 900, gpu: 0, mib: 66, sm: 60, mps: 'server' },
        { pid: 101, gpu: 0, mib: 2806, sm: null, mps: 'client' },
        { pid: 201, gpu: 0, mib: 3830, sm: null, mps: 'client' },
      ],
    },
  ],
};

export interface FakeNode {
  dir: string;
  /** An `nvidia-smi` script that runs the fake with this node's trace (child processes do not see jest's process.env). */
  nvidiaSmi: string;
  /** Points the script at a missing trace, so every run fails, or back. */
  breakSmi(broken: boolean): void;
  procRoot: string;
  traceFile: string;
  stepFile: string;
  setStep(n: number): void;
  resolver: PodResolver;
  cleanup(): void;
}

/** `stepMs`: the trace advances with time (for a scraping Prometheus) instead of by the step file. */
export function fakeNode(stepMs?: number, trace: Trace = TRACE): FakeNode {
  const dir = mkdtempSync(join(tmpdir(), 'tf-agent-'));
  const procRoot = join(dir, 'proc');
  const cgroup = (pid: number, text: string) => {
    mkdirSync(join(procRoot, String(pid)), { recursive: true });
    writeFileSync(join(procRoot, String(pid), 'cgroup'), text);
  };
  // cgroup v2 with the systemd driver (underscores in the UID) and cgroup v1 with cgroupfs.
  const v2 = (p: typeof POD_A) =>
    `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${p.uid.replace(/-/g, '_')}.slice/cri-containerd-${p.containerId}.scope\n`;
  cgroup(101, v2(POD_A));
  cgroup(102, v2(POD_A));
  cgroup(
    201,
    `12:memory:/kubepods/besteffort/pod${POD_B.uid}/${POD_B.containerId}\n11:cpu:/kubepods/besteffort/pod${POD_B.uid}/${POD_B.containerId}\n`,
  );
  cgroup(999, '0::/system.slice/some-daemon.service\n');
  cgroup(900, '0::/system.slice/nvidia-mps.service\n');
  writeFileSync(join(procRoot, '900', 'comm'), 'nvidia-cuda-mps\n');
  const traceFile = join(dir, 'trace.json');
  writeFileSync(traceFile, JSON.stringify(trace));
  const stepFile = join(dir, 'step');
  writeFileSync(stepFile, '0');
  const nvidiaSmi = join(dir, 'nvidia-smi');
  const startMs = Date.now();
  const writeSmi = (trace: string) =>
    writeFileSync(
      nvidiaSmi,
      `#!/bin/sh\nFAKE_SMI_TRACE='${trace}' ${stepMs ? `FAKE_SMI_START_MS=${startMs} FAKE_SMI_STEP_MS=${stepMs}` : `FAKE_SMI_STEP_FILE='${stepFile}'`} exec '${process.execPath}' '${FAKE_SMI}' "$@"\n`,
      { mode: 0o755 },
    );
  writeSmi(traceFile);
  const pods = new Map([POD_A, POD_B].map((p) => [p.uid, p]));
  return {
    dir,
    procRoot,
    traceFile,
    stepFile,
    nvidiaSmi,
    breakSmi: (broken) => writeSmi(broken ? join(dir, 'missing.json') : traceFile),
    setStep: (n) => writeFileSync(stepFile, String(n)),
    resolver: {
      resolve(uid, containerId) {
        const p = pods.get(uid);
        return (
          p && {
            namespace: p.namespace,
            pod: p.pod,
            container: containerId === p.containerId ? p.container : undefined,
            threadPercentage: p.threadPercentage,
          }
        );
      },
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A /proc/<pid>/stat line with the name and start time (field 22) given. */
export function statLine(pid: number, comm: string, startTicks: number): string {
  return `${pid} (${comm}) S ${Array.from({ length: 19 }, () => '0').join(' ')} ${startTicks} 0 0\n`;
}

/** Rewrites the trace by a rename, so that the fake nvidia-smi never reads half a file. */
export function replaceTrace(node: FakeNode, trace: Trace): void {
  writeFileSync(`${node.traceFile}.new`, JSON.stringify(trace));
  renameSync(`${node.traceFile}.new`, node.traceFile);
}

/** A real process (`sleep`) entered in the fake /proc as a process of pod A named python3. */
export interface Bypasser {
  readonly pid: number;
  readonly child: ChildProcess;
  /** When it exited (Date.now()). */
  readonly exited: Promise<number>;
}

export function spawnBypasser(node: FakeNode, startTicks = 4242): Bypasser {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  const pid = child.pid!;
  mkdirSync(join(node.procRoot, String(pid)), { recursive: true });
  writeFileSync(
    join(node.procRoot, String(pid), 'cgroup'),
    `0::/kubepods.slice/kubepods-burstable-pod${POD_A.uid.replace(/-/g, '_')}.slice/cri-containerd-${POD_A.containerId}.scope\n`,
  );
  writeFileSync(join(node.procRoot, String(pid), 'stat'), statLine(pid, 'python3', startTicks));
  return { pid, child, exited: new Promise((resolve) => child.once('exit', () => resolve(Date.now()))) };
}

/** Pod A's share on GPU 0, and what its daemon lists: server 900 with client 101. */
export const SHARE_A: MpsShare = {
  id: POD_A.uid,
  pod: 'ml/train-0',
  gpuUuids: [TRACE.gpus[0].uuid],
  vramLimitBytes: 2 ** 31,
  threadPercentage: 25,
};
export const MEMBERS_A: ShareMembers = { servers: [900], clients: [{ server: 900, pid: 101 }] };

/** What the query lists: share A's server and client, and `pids` as processes off MPS on GPU 0. */
export function bypassTrace(pids: readonly number[]): Trace {
  return {
    gpus: TRACE.gpus,
    steps: [
      {
        apps: [
          { pid: 900, gpu: 0, mib: 66, sm: 50, mps: 'server' },
          { pid: 101, gpu: 0, mib: 1024, sm: null, mps: 'client' },
          ...pids.map((pid) => ({ pid, gpu: 0, mib: 8192, sm: 99 })),
        ],
      },
      { apps: [], fail: true },
    ],
  };
}

/** Two A100s as nvidia-smi lists them. */
export const TWO_A100 = [
  { index: 0, uuid: 'GPU-a', name: 'NVIDIA A100-SXM4-80GB' },
  { index: 1, uuid: 'GPU-b', name: 'NVIDIA A100-SXM4-80GB' },
];

/**
 * The share machinery of a node with TWO_A100 (GPU-a minor 1, GPU-b minor 0, the reverse of the
 * indexes) over the fake MPS control daemon, with its daemons and CDI specs under `dir`.
 */
export function twoA100Delivery(dir: string, nodeName: string): { sup: MpsSupervisor; cdi: CdiWriter; delivery: ShareDelivery } {
  const sup = new MpsSupervisor({
    controlBin: fakeMpsControl(),
    baseDir: join(dir, 'mps'),
    isolateShm: false,
  });
  const cdi = new CdiWriter(join(dir, 'cdi'));
  const delivery = new ShareDelivery({
    nodeName,
    supervisor: sup,
    cdi,
    gpus: async () => TWO_A100,
    host: () => ({
      minors: new Map([
        ['GPU-a', 1],
        ['GPU-b', 0],
      ]),
      devRoot: '/dev',
      exists: () => true,
      libraries: [],
    }),
  });
  return { sup, cdi, delivery };
}

/** What a front door's test runs against: a fake kubelet and a TWO_A100 node's share machinery in a temporary folder. */
export interface DoorBench {
  readonly kubelet: FakeKubelet;
  readonly dir: string;
  readonly sup: MpsSupervisor;
  readonly cdi: CdiWriter;
  readonly delivery: ShareDelivery;
  /** Stops the daemons and the kubelet and removes the folder (after the door under test stopped). */
  stop(): Promise<void>;
}

export async function startDoorBench(nodeName: string): Promise<DoorBench> {
  const kubelet = await startFakeKubelet();
  const dir = mkdtempSync(join(tmpdir(), 'tf-door-'));
  const { sup, cdi, delivery } = twoA100Delivery(dir, nodeName);
  return {
    kubelet,
    dir,
    sup,
    cdi,
    delivery,
    stop: async () => {
      await sup.stop();
      await kubelet.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface SharePodOptions {
  /** The node it is bound to, and the one its record names. @default 'n' */
  node?: string;
  /** GPU object names of its record. @default [`${node}-gpu-1`] */
  gpus?: string[];
  /** Its MPS thread percentage. @default '7' */
  percent?: string;
  /** Without it, a pod that holds the resource with no share record (as no webhook admitted). @default true */
  record?: boolean;
  /** Containers that hold the share resource (besides a sidecar that does not). @default 1 */
  containers?: number;
  rv?: string;
  phase?: string;
  deleting?: boolean;
}

/** An opted-in pod in namespace `ml`, uid `uid-<name>`, with the share record and MPS limits a bind writes. */
export function sharePod(name: string, o: SharePodOptions = {}) {
  const uid = `uid-${name}`;
  const node = o.node ?? 'n';
  const record = {
    'tensor-fusion.ai/allocation': JSON.stringify({
      id: uid,
      pool: 'p',
      node,
      gpuIds: o.gpus ?? [`${node}-gpu-1`],
      vramLimit: 8 * 2 ** 30,
      tflopsLimit: 20,
    }),
    'tensor-fusion.ai/mps-memory-limit': '0=4096M',
    'tensor-fusion.ai/mps-thread-percentage': o.percent ?? '7',
  };
  const share = { 'tensor-fusion.ai/share': '1' };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ml',
      uid,
      resourceVersion: o.rv ?? '100',
      creationTimestamp: '2026-11-27T10:00:00Z',
      labels: { 'tensor-fusion.ai/enabled': 'true' },
      ...(o.deleting ? { deletionTimestamp: '2026-11-27T10:05:00Z' } : {}),
      annotations: o.record === false ? {} : record,
    },
    spec: {
      nodeName: node,
      containers: Array.from({ length: o.containers ?? 1 }, (_, i) => ({
        name: i === 0 ? 'main' : `c${i}`,
        resources: { limits: share },
      })).concat([{ name: 'side', resources: { limits: {} } } as never]),
    },
    status: { phase: o.phase ?? 'Pending' },
  };
}

/**
 * The agent's VRAM attribution on a real GPU: the real GpuCollector runs the real nvidia-smi, with a
 * /proc in which the check's clients look like containers of two pods.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Gauge } from 'prom-client';
import { GpuCollector, PodResolver } from '../../lib/runtime/agent/collector';
import { AGENT_METRICS } from '../../lib/contract/agent';

/** A client process posing as a pod's container. */
export interface PodProcess {
  readonly pid: number;
  /** The pod UID (the share id). */
  readonly podUid: string;
  /** The pod's name in the metrics. */
  readonly pod: string;
}

export const CHECK_NAMESPACE = 'check-gpu';

/**
 * A /proc under `root` for the collector: every process of the real one linked, except the clients,
 * whose folder holds a kubelet cgroup line of their pod (cgroup v2, systemd driver, containerd) and
 * a link to their real `comm` (the collector reads `cgroup` and `comm` only).
 */
export async function fakeProc(root: string, clients: readonly PodProcess[]): Promise<string> {
  await mkdir(root, { recursive: true });
  const byPid = new Map(clients.map((c) => [String(c.pid), c]));
  for (const name of await readdir('/proc')) {
    if (/^\d+$/.test(name) && !byPid.has(name)) await symlink(join('/proc', name), join(root, name));
  }
  for (const [pid, c] of byPid) {
    const uid = c.podUid.replace(/-/g, '_');
    const line = `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${uid}.slice/cri-containerd-${randomBytes(32).toString('hex')}.scope\n`;
    await mkdir(join(root, pid));
    await writeFile(join(root, pid, 'cgroup'), line);
    await symlink(join('/proc', pid, 'comm'), join(root, pid, 'comm'));
  }
  return root;
}

/** What the collector reported: bytes per pod name, and the GPU's MPS servers. */
export interface AgentView {
  readonly vramBytesPerPod: Record<string, number>;
  readonly mpsServers: number;
}

/**
 * Collects with the real collector until every client's pod has a VRAM series (nvidia-smi may list
 * a fresh client a moment late), at most `tries` times a second apart, and sums the series per pod.
 */
export async function collectVram(nvidiaSmi: string, procRoot: string, clients: readonly PodProcess[], tries = 3): Promise<AgentView> {
  const names = new Map(clients.map((c) => [c.podUid, c.pod]));
  const resolver: PodResolver = {
    resolve: (uid) => (names.has(uid) ? { namespace: CHECK_NAMESPACE, pod: names.get(uid)!, container: 'main' } : undefined),
  };
  const collector = new GpuCollector({ nvidiaSmi, procRoot, resolver });
  const gauge = (name: string) => collector.registry.getSingleMetric(name) as Gauge;
  for (let i = 1; ; i++) {
    await collector.collect();
    const vramBytesPerPod: Record<string, number> = {};
    for (const v of (await gauge(AGENT_METRICS.vramUsed).get()).values) {
      const pod = String(v.labels.pod);
      vramBytesPerPod[pod] = (vramBytesPerPod[pod] ?? 0) + v.value;
    }
    const mpsServers = (await gauge(AGENT_METRICS.mpsServers).get()).values.reduce((n, v) => n + v.value, 0);
    if (i >= tries || clients.every((c) => vramBytesPerPod[c.pod] > 0)) return { vramBytesPerPod, mpsServers };
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

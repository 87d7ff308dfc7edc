/**
 * Attribution of a host pid to a pod: the kubelet puts every container in a cgroup whose path carries
 * the pod UID and the container id, for cgroup v1 and v2, cgroupfs and systemd drivers alike:
 *   v1 cgroupfs:  12:memory:/kubepods/burstable/pod<uid>/<container-id>
 *   v2 systemd:   0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice/cri-containerd-<id>.scope
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface PodCgroup {
  readonly podUid: string;
  /** Container id without the runtime prefix, when present. */
  readonly containerId?: string;
}

const POD_UID = /pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})/;
const CONTAINER_ID = /(?:^|\/|-)([0-9a-f]{64})(?:\.scope)?$/;

/** The pod and container of a /proc/<pid>/cgroup text, or undefined for a process outside any pod. */
export function parseCgroup(text: string): PodCgroup | undefined {
  for (const line of text.split('\n')) {
    const path = line.split(':').slice(2).join(':');
    const pod = POD_UID.exec(path);
    if (!pod) continue;
    const container = CONTAINER_ID.exec(path.trim());
    return { podUid: pod[1].replace(/_/g, '-'), ...(container ? { containerId: container[1] } : {}) };
  }
  return undefined;
}

/** Reads `<procRoot>/<pid>/cgroup`; undefined when the process is gone or in no pod. */
export async function podOfPid(procRoot: string, pid: number): Promise<PodCgroup | undefined> {
  try {
    return parseCgroup(await readFile(join(procRoot, String(pid), 'cgroup'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** What identifies a host process across pid reuse: its pod (by cgroup), its name and its start time. */
export interface ProcessIdentity {
  /** The pod the process belongs to; undefined for a process in no pod. */
  readonly pod?: PodCgroup;
  /** `comm`, the process name (15 characters at most). */
  readonly comm: string;
  /** Start time after boot, in clock ticks (/proc/<pid>/stat field 22): a reused pid has another. */
  readonly startTicks: number;
}

/**
 * The name and start time of a /proc/<pid>/stat text, or undefined when it is not one. The name (field
 * 2) is in parentheses and may hold spaces and parentheses itself, so fields are counted after the last `)`.
 */
export function parseStat(text: string): { comm: string; startTicks: number } | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  // Field 3 (state) is the first after the name: field 22 is the 20th.
  const start = Number(
    text
      .slice(close + 1)
      .trim()
      .split(/\s+/)[19],
  );
  return Number.isInteger(start) ? { comm: text.slice(open + 1, close), startTicks: start } : undefined;
}

/** Reads a process's identity from `<procRoot>/<pid>/`; undefined when it is gone. */
export async function identify(procRoot: string, pid: number): Promise<ProcessIdentity | undefined> {
  try {
    const [stat, cgroup] = await Promise.all([
      readFile(join(procRoot, String(pid), 'stat'), 'utf8'),
      readFile(join(procRoot, String(pid), 'cgroup'), 'utf8'),
    ]);
    const s = parseStat(stat);
    const pod = parseCgroup(cgroup);
    return s && { ...s, ...(pod ? { pod } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * Which cgroup hierarchies a node has, read from a mount table (`/proc/self/mountinfo`): cgroup v2
 * only, v1 only, or both (hybrid). A share daemon outlives the agent's container only once it is out
 * of every hierarchy the container runtime finds the container's processes through: on cgroup v1
 * that is each v1 hierarchy, which a move into a cgroup v2 folder does not change.
 */
import { posix } from 'node:path';

export interface Mount {
  /** Where it is mounted, as the process that read the table sees it. */
  readonly mountPoint: string;
  readonly fsType: string;
  /** `major:minor`: the same for every mount of one hierarchy (one v1 hierarchy may be mounted twice). */
  readonly device: string;
}

/** The mounts of a `/proc/<pid>/mountinfo` text (mount points unescaped: `\040` is a space). */
export function parseMountinfo(text: string): Mount[] {
  return text.split('\n').flatMap((line) => {
    const [left, right] = line.split(' - ');
    if (!right) return [];
    const fields = left.split(' ');
    if (fields.length < 5) return [];
    const mountPoint = fields[4].replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
    return [{ mountPoint, fsType: right.split(' ')[0], device: fields[2] }];
  });
}

/** Whether `path` is `dir` or below it. */
function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/** The mount that holds `path`: the last one mounted at the deepest mount point above it. */
export function mountOf(mounts: readonly Mount[], path: string): Mount | undefined {
  let found: Mount | undefined;
  for (const m of mounts) if (within(path, m.mountPoint) && (!found || m.mountPoint.length >= found.mountPoint.length)) found = m;
  return found;
}

/** Whether `folder` lies in a cgroup v2 hierarchy (not a plain folder, such as one on a v1 host's tmpfs). */
export function inCgroup2(mounts: readonly Mount[], folder: string): boolean {
  return mountOf(mounts, folder)?.fsType === 'cgroup2';
}

/** The mount points of the cgroup v1 hierarchies at or under `root`, one per hierarchy, sorted. */
export function cgroupV1Hierarchies(mounts: readonly Mount[], root: string): string[] {
  const byDevice = new Map<string, string>();
  for (const m of mounts)
    if (m.fsType === 'cgroup' && within(m.mountPoint, posix.normalize(root)) && !byDevice.has(m.device))
      byDevice.set(m.device, m.mountPoint);
  return [...byDevice.values()].sort();
}

/** Where the daemons' cgroups go on this node, as the supervisor takes them. */
export interface DaemonCgroupLayout {
  /** The cgroup v2 folder; undefined where the given one is no cgroup v2 (a v1 host's tmpfs). */
  readonly daemonCgroup?: string;
  /** The v1 hierarchies (none on a cgroup v2 node) and the folder made in each. */
  readonly daemonCgroupsV1?: { readonly hierarchies: readonly string[]; readonly name: string };
}

/**
 * The layout for a mount table: `daemonCgroup` kept where it is cgroup v2, and every v1 hierarchy
 * under `hostCgroup` (the host's /sys/fs/cgroup, mounted in the agent) given a folder `name`.
 */
export function daemonCgroupLayout(
  mounts: readonly Mount[],
  given: { daemonCgroup?: string; hostCgroup?: string; name?: string },
): DaemonCgroupLayout {
  const hierarchies = given.hostCgroup ? cgroupV1Hierarchies(mounts, given.hostCgroup) : [];
  return {
    ...(given.daemonCgroup && inCgroup2(mounts, given.daemonCgroup) ? { daemonCgroup: given.daemonCgroup } : {}),
    ...(hierarchies.length > 0 && given.name ? { daemonCgroupsV1: { hierarchies, name: given.name } } : {}),
  };
}

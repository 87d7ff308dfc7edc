/**
 * A share daemon's own cgroups on a cgroup v1 (or hybrid) node. There runc finds a container's
 * processes through their v1 cgroups, so a daemon moved only into a cgroup v2 folder still dies with
 * the agent's container. Each daemon is moved into `<hierarchy>/<name>/<share id>` of every v1
 * hierarchy the host mounts (reached through the host's cgroup mount the DaemonSet gives the agent),
 * with a memory limit where the hierarchy is the memory controller's; its servers inherit them.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface DaemonCgroupsV1 {
  /** Mount points of the host's cgroup v1 hierarchies, as the agent sees them (see cgroup-mounts.ts). */
  readonly hierarchies: readonly string[];
  /** The folder in each hierarchy under which each share's cgroup is made. */
  readonly name: string;
  /** `memory.limit_in_bytes` of each share's cgroup in the memory hierarchy. */
  readonly memoryBytes: number;
  /** Where `<pid>/cgroup` is read back after the move (unset: not read back, for fake cgroup trees). */
  readonly procRoot?: string;
}

/** The cpuset files a v1 cgroup starts empty, and refuses processes until they are set. */
const CPUSET_FILES = ['cpuset.cpus', 'cpuset.mems'];

/**
 * Moves process `pid` into share `id`'s cgroup of every v1 hierarchy. Resolves with whether a memory
 * limit was set (a memory hierarchy was among them); throws, naming the pid and the folder, when a
 * cgroup cannot be made or the process not moved, or when it is still in a v1 cgroup of another.
 */
export async function moveIntoV1Cgroups(cg: DaemonCgroupsV1, id: string, pid: number): Promise<boolean> {
  let limited = false;
  for (const h of cg.hierarchies) {
    const dir = join(h, cg.name, id);
    try {
      await mkdir(dir, { recursive: true });
      if (existsSync(join(h, 'cpuset.cpus'))) for (const d of [join(h, cg.name), dir]) await inheritCpuset(d);
      if (existsSync(join(h, 'memory.limit_in_bytes'))) {
        await writeFile(join(dir, 'memory.limit_in_bytes'), String(cg.memoryBytes));
        limited = true;
      }
      await writeFile(join(dir, 'cgroup.procs'), String(pid));
    } catch (err) {
      throw new Error(`moving the daemon (pid ${pid}) into ${dir}: ${(err as Error).message.trim()}`);
    }
  }
  if (cg.procRoot) await checkMoved(cg, id, pid);
  return limited;
}

/** Gives a new cpuset cgroup its parent's CPUs and memory nodes where it has none yet. */
async function inheritCpuset(dir: string): Promise<void> {
  for (const f of CPUSET_FILES) {
    // The kernel makes the file with the cgroup (a plain folder of a fake tree has none: empty too).
    if ((await readFile(join(dir, f), 'utf8').catch(() => '')).trim()) continue;
    await writeFile(join(dir, f), (await readFile(join(dir, '..', f), 'utf8')).trim());
  }
}

/** Reads `/proc/<pid>/cgroup` back: every v1 line (`<id>:<controllers>:<path>`) must name the share's cgroup. */
async function checkMoved(cg: DaemonCgroupsV1, id: string, pid: number): Promise<void> {
  const said = await readFile(join(cg.procRoot!, String(pid), 'cgroup'), 'utf8').catch(() => '');
  const left = said
    .split('\n')
    .filter((l) => l && !l.startsWith('0::') && !l.endsWith(`/${cg.name}/${id}`))
    .map((l) => l.trim());
  if (left.length > 0)
    throw new Error(
      `the daemon (pid ${pid}) is still in ${left.join(', ')} after its move into ${cg.name}/${id} of ${cg.hierarchies.join(', ')}: a cgroup v1 hierarchy the host's cgroup mount does not show`,
    );
}

/** Removes share `id`'s cgroups (the daemon gone, they are empty); those already gone or still busy are left. */
export async function removeV1Cgroups(cg: Pick<DaemonCgroupsV1, 'hierarchies' | 'name'>, id: string): Promise<void> {
  await Promise.all(cg.hierarchies.map((h) => rmdir(join(h, cg.name, id)).catch(() => undefined)));
}

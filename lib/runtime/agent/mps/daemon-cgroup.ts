/**
 * A share daemon's own cgroup (cgroup v2). The container runtime ends a container by killing every
 * process of its cgroup, and the kernel's OOM killer (with the kubelet's `memory.oom.group`) ends
 * them all together; so a daemon left in the agent's cgroup dies with the agent, and its servers'
 * memory counts against the agent's limit. Each daemon is moved into `<root>/<share id>`, with a
 * memory limit of its own, before its folder opens; the servers it forks inherit that cgroup.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface DaemonCgroup {
  /** A cgroup v2 folder (the host's, mounted into the agent) under which each share's cgroup is made. */
  readonly root: string;
  /** `memory.max` of each share's cgroup: its daemon and servers together. */
  readonly memoryBytes: number;
  /**
   * The host's cgroup namespace (`/proc/1/ns/cgroup`; the agent shares the host's PID namespace). A
   * container on cgroup v2 has a namespace of its own, and the kernel lets a process move another
   * only between cgroups its namespace reaches (`nsdelegate`): the move is then made from the host's.
   */
  readonly hostNamespace?: string;
  /**
   * Where `<pid>/cgroup` says which cgroup v2 a process is in: the move is read back there, so a
   * folder that is no cgroup v2 (a plain folder on a cgroup v1 host) fails rather than moving nothing.
   */
  readonly procRoot?: string;
}

/**
 * What a share's cgroup holds, on any one node, by default: the daemon (2.4 MiB RSS) and its server
 * (62-67 MiB) as measured on an H200 (bench/README.md, check:gpu), with room for a server that grows.
 */
export const DAEMON_MEMORY_BYTES = 512 * 2 ** 20;

/**
 * Moves process `pid` into share `id`'s cgroup, made with its memory limit where the memory controller
 * reaches `root`. Resolves with whether the limit was set; throws when the cgroup cannot be made or
 * the process not moved (the daemon would die with the agent).
 */
export async function moveIntoCgroup(cg: DaemonCgroup, id: string, pid: number, selfNamespace = '/proc/self/ns/cgroup'): Promise<boolean> {
  const dir = join(cg.root, id);
  await mkdir(dir, { recursive: true });
  const limited = await limitMemory(cg.root, dir, cg.memoryBytes);
  const procs = join(dir, 'cgroup.procs');
  const ns = cg.hostNamespace && (await otherNamespace(cg.hostNamespace, selfNamespace));
  try {
    if (ns) await run('nsenter', [`--cgroup=${ns}`, '--', 'sh', '-c', 'echo "$0" > "$1"', String(pid), procs], { timeout: 5_000 });
    else await writeFile(procs, String(pid));
  } catch (err) {
    throw new Error(`moving the daemon (pid ${pid}) into ${dir}: ${(err as Error).message.trim()}`);
  }
  if (cg.procRoot) {
    const said = await readFile(join(cg.procRoot, String(pid), 'cgroup'), 'utf8').catch(() => '');
    // `0::<path>`, relative to the agent's cgroup namespace: it ends with the share's cgroup once moved.
    const v2 = said.split('\n').find((l) => l.startsWith('0::')) ?? '';
    if (!v2.endsWith(`/${id}`))
      throw new Error(
        `the daemon (pid ${pid}) is not in ${dir} after the move (its cgroup: ${v2 || 'no cgroup v2 line'}): is ${cg.root} a cgroup v2 folder?`,
      );
  }
  return limited;
}

/**
 * `hostNamespace` where it is another cgroup namespace than this process's; undefined where it is the
 * same (cgroup v1 runtimes share the host's) or cannot be read (then the move is tried from here).
 */
export async function otherNamespace(hostNamespace: string, selfNamespace: string): Promise<string | undefined> {
  const [host, self] = await Promise.all([readlink(hostNamespace).catch(() => ''), readlink(selfNamespace).catch(() => '')]);
  return host && host !== self ? hostNamespace : undefined;
}

/**
 * Gives `dir` its `memory.max`: the memory controller is enabled for `root`'s children first (root holds
 * no process, so the kernel allows it). False, and no limit, where `root` has no memory controller
 * (its parent does not pass it down: a hybrid cgroup v1 host, or a folder deeper than the default).
 */
async function limitMemory(root: string, dir: string, bytes: number): Promise<boolean> {
  const controllers = await readFile(join(root, 'cgroup.controllers'), 'utf8').catch(() => '');
  if (!controllers.split(/\s+/).includes('memory')) return false;
  const enabled = await readFile(join(root, 'cgroup.subtree_control'), 'utf8').catch(() => '');
  if (!enabled.split(/\s+/).includes('memory')) await writeFile(join(root, 'cgroup.subtree_control'), '+memory');
  await writeFile(join(dir, 'memory.max'), String(bytes));
  return true;
}

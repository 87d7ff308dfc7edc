/**
 * What a real node changes on the host outside its network namespace, and how it is undone. Inside
 * the test run's own network and mount namespaces (scripts/in-netns.ts) the bridge, veths,
 * iptables chains, net sysctls and every mount vanish with the namespaces; what is left is global to
 * the machine:
 *
 *  - kernel sysctls the kubelet sets (`vm.overcommit_memory`, `kernel.panic`, `kernel.panic_on_oops`):
 *    recorded before the first kubelet starts and written back;
 *  - the `/kubepods` cgroups (every v1 hierarchy and the unified one) with the containers in them:
 *    their processes killed, the groups removed deepest first;
 *  - containerd's shims, which daemonize out of the harness's process groups: killed by the socket
 *    path on their command line;
 *  - mount points made for bind mounts over fixed host paths: removed when they were made here;
 *  - the nodes' own directories (containerd's root, the kubelet's files, logs).
 *
 * The node harness records each change in the machine's one state file ({@link HOST_STATE_FILE})
 * before making it; the harness's stop, the test runner after its command ends (however it ended)
 * and the next node's start all call {@link undoHost}, so a killed run is cleaned up by the next one
 * at the latest. One node runs per machine ({@link takeNodeSlot}): the device-plugin socket path is
 * fixed and the cgroups are the machine's.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, rmSync, rmdirSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/** What the nodes of every run changed and what it was before: fixed, so a killed run's record is found by the next. */
export const HOST_STATE_FILE = path.join(tmpdir(), 'tf-node-host.json');
/** The machine's one node slot: a file naming its holder. */
export const NODE_LOCK_FILE = path.join(tmpdir(), 'tf-real-node.lock');

/** Sysctls the kubelet writes (pkg/kubelet/cm/container_manager_linux.go) that no namespace scopes. */
export const GLOBAL_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
] as const;

/** The cgroup trees the kubelet (cgroupfs driver) and containerd create at each hierarchy's root. */
export const NODE_CGROUPS = ['kubepods', 'k8s.io'] as const;

const CGROUP_ROOT = '/sys/fs/cgroup';

/** What {@link undoHost} undoes, kept in a JSON file. */
export interface HostState {
  /** Original value of each sysctl the kubelet may change. */
  sysctls: Record<string, string>;
  /** Directories created as mount points, removed again (deepest first) when empty. */
  madeDirs: string[];
  /** Strings that identify our daemons' command lines (containerd's socket path). */
  markers: string[];
  /** The nodes' own directories, removed (unless TF_ENVTEST_KEEP is set) once their mounts are gone. */
  workDirs: string[];
}

/** What the state file records (nothing when there is none). */
export function readHostState(file: string): HostState {
  const empty: HostState = { sysctls: {}, madeDirs: [], markers: [], workDirs: [] };
  return existsSync(file) ? { ...empty, ...(JSON.parse(readFileSync(file, 'utf8')) as Partial<HostState>) } : empty;
}

/** Adds to the state file (first record of a sysctl wins: it is the value before any kubelet ran). */
export function recordHost(file: string, add: Partial<HostState>): void {
  const s = readHostState(file);
  for (const [k, v] of Object.entries(add.sysctls ?? {})) if (!(k in s.sysctls)) s.sysctls[k] = v;
  for (const d of add.madeDirs ?? []) if (!s.madeDirs.includes(d)) s.madeDirs.push(d);
  for (const m of add.markers ?? []) if (!s.markers.includes(m)) s.markers.push(m);
  for (const d of add.workDirs ?? []) if (!s.workDirs.includes(d)) s.workDirs.push(d);
  writeFileSync(file, JSON.stringify(s, null, 2));
}

export function readSysctl(name: string): string {
  return readFileSync(path.join('/proc/sys', name), 'utf8').trim();
}

/** The current values of {@link GLOBAL_SYSCTLS}. */
export function globalSysctls(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of GLOBAL_SYSCTLS) if (existsSync(path.join('/proc/sys', s))) out[s] = readSysctl(s);
  return out;
}

function pids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

/** Kills every process whose command line contains one of `markers` (never this process). */
export function killMarked(markers: readonly string[]): number[] {
  if (markers.length === 0) return [];
  const hit = pids().filter((p) => p !== process.pid && markers.some((m) => cmdline(p).includes(m)));
  hit.forEach(kill);
  return hit;
}

/** Every directory of the node cgroup trees, deepest first. */
export function nodeCgroupDirs(root = CGROUP_ROOT): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      // Removed while walked (a container's cgroup as its runtime stops it): nothing left to remove.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const e of entries) if (e.isDirectory()) walk(path.join(dir, e.name));
    out.push(dir);
  };
  if (!existsSync(root)) return out;
  for (const h of readdirSync(root)) {
    const hierarchy = path.join(root, h);
    if (!statSync(hierarchy).isDirectory()) continue;
    for (const tree of NODE_CGROUPS) if (existsSync(path.join(hierarchy, tree))) walk(path.join(hierarchy, tree));
  }
  return out;
}

function procsOf(dir: string): number[] {
  try {
    return readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Kills the processes in the node cgroups and removes the groups; returns what could not be removed. */
export async function removeNodeCgroups(root = CGROUP_ROOT): Promise<string[]> {
  let left: string[] = [];
  for (let attempt = 0; attempt < 50; attempt++) {
    const dirs = nodeCgroupDirs(root);
    for (const d of dirs) procsOf(d).forEach(kill);
    left = [];
    for (const d of dirs) {
      try {
        rmdirSync(d);
      } catch {
        left.push(d);
      }
    }
    if (left.length === 0) return [];
    await new Promise((r) => setTimeout(r, 100));
  }
  return left;
}

/** Mount points at or under `prefixes` in this mount namespace, deepest first. */
export function mountsUnder(prefixes: readonly string[]): string[] {
  const lines = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean);
  // Field 5 is the mount point, with spaces and such escaped as octal.
  const points = lines.map((l) => l.split(' ')[4].replace(/\\(\d{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8))));
  return points.filter((p) => prefixes.some((x) => p === x || p.startsWith(`${x}/`))).sort((a, b) => b.length - a.length);
}

/** Lazily unmounts everything at or under `prefixes`. */
export function unmountUnder(prefixes: readonly string[]): void {
  for (const p of mountsUnder(prefixes)) {
    try {
      execFileSync('umount', ['-l', p], { stdio: 'ignore' });
    } catch {
      /* already gone with its parent */
    }
  }
}

/**
 * Undoes everything the state file records, and the node cgroups: idempotent, safe to call when
 * nothing ran. Returns what it could not undo, for a message.
 */
export async function undoHost(file: string): Promise<string[]> {
  const s = readHostState(file);
  const problems: string[] = [];
  killMarked(s.markers);
  problems.push(...(await removeNodeCgroups()).map((d) => `cgroup ${d} not removed`));
  for (const [k, v] of Object.entries(s.sysctls)) {
    try {
      if (readSysctl(k) !== v) writeFileSync(path.join('/proc/sys', k), v);
    } catch (err) {
      problems.push(`sysctl ${k}=${v}: ${(err as Error).message}`);
    }
  }
  for (const d of s.workDirs) {
    if (!process.env.TF_ENVTEST_KEEP && mountsUnder([d]).length === 0) rmSync(d, { recursive: true, force: true });
  }
  for (const d of [...s.madeDirs].sort((a, b) => b.length - a.length)) {
    try {
      if (existsSync(d) && mountsUnder([d]).length === 0) rmdirSync(d);
    } catch (err) {
      problems.push(`${d}: ${(err as Error).message}`);
    }
  }
  return problems;
}

/** A process's identity that survives pid reuse: its pid and its start time (field 22 of /proc/<pid>/stat). */
function processIdentity(pid: number): string | undefined {
  try {
    // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return `${pid} ${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]}`;
  } catch {
    return undefined;
  }
}

/** The live process holding the node slot, if any (a holder that died, or a reused pid, is none). */
export function nodeSlotHolder(): string | undefined {
  let holder: string;
  try {
    holder = readFileSync(NODE_LOCK_FILE, 'utf8').trim();
  } catch {
    return undefined;
  }
  return holder && processIdentity(Number(holder.split(' ')[0])) === holder ? holder : undefined;
}

/** Waits for the machine's one node slot and takes it; resolves with its release. A dead holder's slot is taken over. */
export async function takeNodeSlot(timeoutMs: number): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  const me = processIdentity(process.pid) ?? String(process.pid);
  for (;;) {
    try {
      const fd = openSync(NODE_LOCK_FILE, 'wx');
      writeSync(fd, me);
      closeSync(fd);
      return () => rmSync(NODE_LOCK_FILE, { force: true });
    } catch {
      const holder = nodeSlotHolder();
      if (!holder) {
        rmSync(NODE_LOCK_FILE, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`real node: ${NODE_LOCK_FILE} held by pid ${holder.split(' ')[0]} for ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

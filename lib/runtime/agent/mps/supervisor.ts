/**
 * The node side of MPS: one control daemon per GPU share (per pod), started before the pod's
 * containers are created, with the share's limits set in the daemon itself.
 *
 * Why one daemon per share rather than one per GPU (measured on an H100, driver 580): limits set in
 * a daemon bind every client of its servers and a client cannot raise them with its own variables,
 * while a client's own variables can only lower them; and two daemons on one GPU run two servers at
 * once, each enforcing its own limits. So a daemon per share holds each pod to its own VRAM and
 * thread limits whatever its environment says, pods of different Linux users never queue behind one
 * another (one server per user is a per-daemon rule), a pod reaches no daemon but its own, and ending
 * a pod's clients touches no other pod's server.
 *
 * No tenant lifts its limits (measured on an H200, ../shared/gpu/h200-driver-580, items 2, 9, 10): a
 * daemon takes settings from root, from its own user and, for a server's own settings, from the uid
 * that server runs as. So each daemon runs with `-M` (multi-user: its servers are root's, and a tenant
 * that is not host root is refused every `set_*`), and every round reads back the defaults and each
 * live server's limits; anything else is put back and reported as a breach (a host-root tenant).
 * A (re)started daemon's pipe folder stays closed (0700) until its limits are set and read back, so
 * no client reaches a server without limits.
 *
 * Daemons outlive the agent: each runs in a session of its own (detached), optionally in a cgroup of
 * its own where its servers' memory is counted, and a new agent adopts it from the share's record
 * on disk once it answers with the share's limits.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, rmdir, writeFile, chmod } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { ShareMembers } from '../share/members';
import { DaemonDirs, daemonEnv, limitCommands, mpsCommand } from './control';
import { defaultsQuery, LimitMismatch, mismatches, REFUSAL_PREFIX, serversIn, serversQuery } from './limits';
import { DAEMON_MEMORY_BYTES, moveIntoCgroup } from './daemon-cgroup';
import { DaemonCgroupsV1, moveIntoV1Cgroups, removeV1Cgroups } from './daemon-cgroup-v1';

/** What a share's daemon enforces. */
export interface MpsShare {
  /** The allocation id (the pod UID). */
  readonly id: string;
  /** `namespace/name` of the pod, for messages. */
  readonly pod: string;
  /** The share's GPUs, in the order the pod sees them (device 0, 1, ...). */
  readonly gpuUuids: readonly string[];
  /** Device memory per client process and device, in bytes. */
  readonly vramLimitBytes: number;
  /** Active thread percentage per client process, 1..100. */
  readonly threadPercentage: number;
  /** Containers of the pod that hold the share (each gets the limits). @default 1 */
  readonly containers?: number;
}

/** Where a share's files live on the host: mounted into the pod's containers by the device plugin. */
export interface ShareDirs extends DaemonDirs {
  /** The share's own /dev/shm, shared by its clients and its server only. */
  readonly shmDir: string;
}

/** Why a GPU's isolation is or is not ready (the GPU condition's reason). */
export type IsolationReason =
  'MpsReady' | 'MpsControlMissing' | 'MpsDaemonNotAnswering' | 'MpsProbeFailed' | 'ComputeModeNotDefault' | 'BackstopUnavailable';

/** A share's daemon held limits that were not the share's (set by a host-root process): put back, to be reported as an Event. */
export interface LimitBreach {
  readonly share: MpsShare;
  /** What was found, per setting; each was set back before this was reported. */
  readonly mismatches: readonly LimitMismatch[];
  /** Clients of the changed servers when it was found: they may hold the raised limits until they end. */
  readonly clients: ShareMembers['clients'];
}

export interface GpuReadiness {
  readonly ready: boolean;
  readonly reason: IsolationReason;
  readonly message: string;
}

export interface SupervisorOptions {
  /** Path of nvidia-cuda-mps-control. */
  readonly controlBin: string;
  /** Host folder of the shares' folders (the same path inside the agent and, per share, in pods). */
  readonly baseDir: string;
  /**
   * Runs the daemon with the share's shm folder as its /dev/shm (a private mount namespace), so that
   * its servers and the pod's clients share memory segments with each other and with no other pod.
   * Off where the agent cannot make mounts (tests with a fake daemon).
   * @default true
   */
  readonly isolateShm?: boolean;
  /** Size of the daemon's private /dev/shm (a tmpfs in its mount namespace), in bytes. @default 64 MiB */
  readonly shmBytes?: number;
  /**
   * A cgroup v2 folder under which each share's daemon is moved into a cgroup of its own
   * (`<dir>/<share id>`, see mps/daemon-cgroup.ts) before its folder opens, so that it and its
   * servers outlive the agent's container and their memory is counted there, not in the agent's.
   * Unset: the daemon stays in the agent's cgroup.
   */
  readonly daemonCgroup?: string;
  /**
   * The node's cgroup v1 hierarchies (a v1 or hybrid node) and the folder in each under which each
   * share's daemon gets a cgroup of its own (see mps/daemon-cgroup-v1.ts), for the same reasons.
   */
  readonly daemonCgroupsV1?: Pick<DaemonCgroupsV1, 'hierarchies' | 'name'>;
  /** `memory.max` (`memory.limit_in_bytes` on v1) of each share's cgroup. @default DAEMON_MEMORY_BYTES */
  readonly daemonMemoryBytes?: number;
  /** The host's cgroup namespace, from which a daemon is moved when the agent's is another. */
  readonly hostCgroupNamespace?: string;
  /** Where a moved daemon's `/proc/<pid>/cgroup` is read back (unset: not read back, for fake cgroup folders). */
  readonly procRoot?: string;
  /** How often a ready GPU's probe daemon and server are started again. @default 60000 */
  readonly probeIntervalMs?: number;
  /** How long a command may wait for an answer. @default 5000 */
  readonly answerTimeoutMs?: number;
  /** Called for each breach found by a check (the agent turns it into an Event). */
  readonly onBreach?: (breach: LimitBreach) => void;
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

interface Daemon {
  readonly share: MpsShare;
  readonly dirs: ShareDirs;
  child?: ChildProcess;
  /** Why the last start or check failed; undefined while the daemon answers. */
  failure?: string;
  /** A start in flight: its limits are not applied yet, so a check would take it for a broken daemon. */
  starting?: Promise<void>;
}

const SHARE_FILE = 'share.json';
const PROBE_PREFIX = '.probe-';
/** The daemon's own output, in its log folder. */
const DAEMON_OUT = 'daemon.out';
/** Where the control daemon writes its pid, in its pipe folder. */
const PID_FILE = 'nvidia-cuda-mps-control.pid';
/** Only root (the agent) may pass while a daemon's limits are not in place; then any uid the pod runs as. */
const PIPE_CLOSED = 0o700;
const PIPE_OPEN = 0o1777;

export class MpsSupervisor {
  private readonly daemons = new Map<string, Daemon>();
  private readonly probes = new Map<string, GpuReadiness & { at: number }>();
  private readonly timeoutMs: number;
  private restartCount = 0;
  /** Whether the log said once that the daemon cgroup has no memory controller. */
  private unlimitedSaid = false;

  constructor(private readonly opts: SupervisorOptions) {
    this.timeoutMs = opts.answerTimeoutMs ?? 5_000;
  }

  /** The folders of share `id` on the host. */
  dirsOf(id: string): ShareDirs {
    const root = join(this.opts.baseDir, id);
    return { pipeDir: join(root, 'pipe'), logDir: join(root, 'log'), shmDir: join(root, 'shm') };
  }

  /** Whether share `id` has a daemon (answering, starting or being replaced). */
  has(id: string): boolean {
    return this.daemons.has(id);
  }

  /** Shares with a daemon (answering or being replaced), by id. */
  shares(): MpsShare[] {
    return [...this.daemons.values()].map((d) => d.share);
  }

  /** Share daemons replaced since the agent started, for the metric (a counter: ended shares' count stays). */
  restarts(): number {
    return this.restartCount;
  }

  /**
   * Starts the share's daemon with its limits, or checks the running one; resolves once it answers
   * with the share's limits. Idempotent: the device plugin calls it once per container of the pod.
   */
  async ensure(share: MpsShare): Promise<ShareDirs> {
    const known = this.daemons.get(share.id);
    if (known?.starting) {
      await known.starting;
      return known.dirs;
    }
    if (known && !known.failure && (await this.healthy(known))) return known.dirs;
    const d = known ?? { share, dirs: this.dirsOf(share.id) };
    this.daemons.set(share.id, d);
    await this.start(d);
    return d.dirs;
  }

  /**
   * Ends a share: every client of its servers is terminated through the daemon (MPS's safe way to end
   * a client; a signal may leave the server in an undefined state), then the daemon quits, taking its
   * servers, and the share's folders are removed.
   */
  async release(id: string): Promise<void> {
    const d = this.daemons.get(id) ?? { share: { id } as MpsShare, dirs: this.dirsOf(id) };
    this.daemons.delete(id);
    await this.quit(d);
    await rm(join(this.opts.baseDir, id), { recursive: true, force: true });
    if (this.opts.daemonCgroup) await rmdir(join(this.opts.daemonCgroup, id)).catch(() => undefined);
    if (this.opts.daemonCgroupsV1) await removeV1Cgroups(this.opts.daemonCgroupsV1, id);
  }

  /**
   * At agent start: shares left on the host by the previous agent, from their records on disk. Those
   * `live` says a pod still holds are taken over (a daemon that answers with the share's limits is
   * kept with its servers and clients; one that died is started again with the share's limits); the
   * rest are ended and removed.
   */
  async adopt(live: (id: string) => boolean): Promise<void> {
    const names = await readdir(this.opts.baseDir).catch(() => [] as string[]);
    for (const id of names) {
      const text = await readFile(join(this.opts.baseDir, id, SHARE_FILE), 'utf8').catch(() => undefined);
      if (id.startsWith(PROBE_PREFIX) || !text || !live(id)) {
        await this.release(id);
        continue;
      }
      const d: Daemon = { share: JSON.parse(text) as MpsShare, dirs: this.dirsOf(id) };
      this.daemons.set(id, d);
      if (await this.healthy(d)) this.opts.log?.('MPS daemon adopted', { share: id, pod: d.share.pod });
      else await this.start(d).catch(() => undefined);
    }
  }

  /**
   * One supervision round: every daemon's defaults and live servers' limits are read back (a changed
   * one is put back and reported to onBreach), and a daemon that died or stopped answering is replaced.
   */
  async check(): Promise<void> {
    await Promise.all(
      [...this.daemons.values()].map(async (d) => {
        if (d.starting || (await this.healthy(d))) return;
        this.restartCount++;
        this.opts.log?.('MPS daemon not answering; replacing it', { share: d.share.id, pod: d.share.pod, why: d.failure });
        await this.start(d).catch(() => undefined);
      }),
    );
  }

  /**
   * Readiness of each GPU: its compute mode is `Default` where `computeModes` names one (two share
   * daemons on a GPU are two contexts, which `Exclusive_Process` refuses; the agent does not change a
   * mode someone else set), the control binary is there, a daemon for the GPU alone starts and runs a
   * real server (probed again every probeIntervalMs), and every share daemon on it answers.
   */
  async readiness(gpuUuids: readonly string[], computeModes?: ReadonlyMap<string, string>): Promise<Map<string, GpuReadiness>> {
    const out = new Map<string, GpuReadiness>();
    for (const uuid of gpuUuids) {
      const mode = computeModes?.get(uuid);
      if (mode !== undefined && !/^default$/i.test(mode)) {
        out.set(uuid, {
          ready: false,
          reason: 'ComputeModeNotDefault',
          message: `compute mode is ${mode}; MPS shares need Default (nvidia-smi -i ${uuid} -c DEFAULT), which the agent does not set itself`,
        });
        continue;
      }
      const failing = [...this.daemons.values()].filter((d) => d.failure && d.share.gpuUuids.includes(uuid));
      if (failing.length > 0) {
        out.set(uuid, {
          ready: false,
          reason: 'MpsDaemonNotAnswering',
          message: failing.map((d) => `${d.share.pod}: ${d.failure}`).join('; '),
        });
        continue;
      }
      let probe = this.probes.get(uuid);
      if (!probe?.ready || Date.now() - probe.at >= (this.opts.probeIntervalMs ?? 60_000))
        this.probes.set(uuid, (probe = { ...(await this.probe(uuid)), at: Date.now() }));
      out.set(uuid, { ready: probe.ready, reason: probe.reason, message: probe.message });
    }
    return out;
  }

  /**
   * The share's servers and their clients, by host pid, as its daemon lists them; undefined when the
   * daemon does not answer.
   */
  async members(id: string): Promise<ShareMembers | undefined> {
    const dirs = this.dirsOf(id);
    try {
      const servers = numbers(await this.command(dirs, ['get_server_list']));
      if (servers.length === 0) return { servers, clients: [] };
      // Every server's client list in one run of the front end (a process start each): the lists,
      // of any length, are told apart by a percentage (`25.0`) asked after each, which no pid looks like.
      const answer = await this.command(
        dirs,
        servers.flatMap((s) => [`get_client_list ${s}`, 'get_default_active_thread_percentage']),
      );
      const clients: { server: number; pid: number }[] = [];
      let at = 0;
      for (const line of answer.split('\n').map((l) => l.trim())) {
        if (line.includes('.')) at++;
        else if (/^\d+$/.test(line) && at < servers.length) clients.push({ server: servers[at], pid: Number(line) });
      }
      return { servers, clients };
    } catch {
      return undefined;
    }
  }

  /**
   * Ends one client of a share through its daemon (`terminate_client`, after which the process may be
   * killed without harm to the server); resolves false when the daemon does not list it.
   */
  async terminateClient(id: string, pid: number): Promise<boolean> {
    const client = (await this.members(id))?.clients.find((c) => c.pid === pid);
    if (!client) return false;
    await this.command(this.dirsOf(id), [`terminate_client ${client.server} ${pid}`]).catch(() => '');
    return true;
  }

  /** Quits every daemon (the check's and the tests' cleanup; an agent that exits leaves them to the next one). */
  async stop(): Promise<void> {
    await Promise.all([...this.daemons.values()].map((d) => this.quit(d)));
    this.daemons.clear();
  }

  /** A command run whose answers must not be a refusal (the agent runs as root: one means a wrong binary or setup). */
  private async command(dirs: DaemonDirs, cmds: readonly string[]): Promise<string> {
    const answer = await mpsCommand(this.opts.controlBin, dirs, cmds, this.timeoutMs);
    const refused = answer.split('\n').find((l) => l.startsWith(REFUSAL_PREFIX));
    if (refused) throw new Error(`${cmds.join('; ')}: ${refused}`);
    return answer;
  }

  /** The share's limits as its daemon holds them: the defaults and each live server's. */
  private async readBack(d: Daemon): Promise<{ found: LimitMismatch[]; servers: number[] }> {
    const devices = d.share.gpuUuids.length;
    const defaults = await this.command(d.dirs, defaultsQuery(devices));
    const servers = serversIn(defaults, devices);
    const perServer = servers.length > 0 ? await this.command(d.dirs, serversQuery(devices, servers)) : '';
    return { found: mismatches({ ...d.share, devices }, defaults, servers, perServer), servers };
  }

  /**
   * Whether the daemon answers with the share's limits. A limit that is not the share's is put back
   * and reported (a breach); false, with `failure` set, when the daemon does not answer or keeps a
   * wrong limit after it was put back.
   */
  private async healthy(d: Daemon): Promise<boolean> {
    if (d.child && d.child.exitCode !== null) {
      d.failure = `daemon exited with ${d.child.exitCode ?? d.child.signalCode}`;
      return false;
    }
    try {
      const { found } = await this.readBack(d);
      if (found.length > 0) await this.putBack(d, found);
      d.failure = undefined;
      return true;
    } catch (err) {
      d.failure = (err as Error).message;
      return false;
    }
  }

  /** Sets `found` back to the share's limits, reads them back, and reports the breach. */
  private async putBack(d: Daemon, found: readonly LimitMismatch[]): Promise<void> {
    const changed = new Set(found.flatMap((m) => (m.server === undefined ? [] : [m.server])));
    const clients = ((await this.members(d.share.id))?.clients ?? []).filter((c) => changed.has(c.server));
    await this.command(
      d.dirs,
      found.map((m) => m.fix),
    );
    this.opts.log?.('MPS limits changed behind the agent; set back', { share: d.share.id, pod: d.share.pod, found });
    this.opts.onBreach?.({ share: d.share, mismatches: found, clients });
    const after = await this.readBack(d);
    if (after.found.length > 0)
      throw new Error(`limits did not hold after they were set back: ${after.found.map((m) => `${m.setting} ${m.found}`).join(', ')}`);
  }

  /** (Re)starts a share's daemon: old one killed, stale socket removed, limits applied before it is handed out. */
  private start(d: Daemon): Promise<void> {
    d.starting ??= this.startNow(d).finally(() => {
      d.starting = undefined;
    });
    return d.starting;
  }

  private async startNow(d: Daemon): Promise<void> {
    const { share, dirs } = d;
    kill(d.child);
    await this.killRecorded(dirs);
    await this.prepare(dirs);
    await writeFile(join(this.opts.baseDir, share.id, SHARE_FILE), JSON.stringify(share));
    d.child = this.spawnDaemon(dirs, share.gpuUuids);
    try {
      await this.intoCgroup(share.id, d.child);
      await this.waitForControl(d);
      await this.command(dirs, limitCommands(share.gpuUuids.length, share.vramLimitBytes, share.threadPercentage));
      // A server started before the limits (a host-root client, past the closed folder) is set too,
      // and its clients, which joined without limits, are ended.
      const { found, servers } = await this.readBack(d);
      if (found.length > 0) await this.putBack(d, found);
      // Only those servers' clients: none to ask for where the read-back listed no server (the usual start).
      const early = servers.length > 0 ? ((await this.members(share.id))?.clients ?? []) : [];
      for (const c of early) if (servers.includes(c.server)) await this.command(dirs, [`terminate_client ${c.server} ${c.pid}`]);
      await chmod(dirs.pipeDir, PIPE_OPEN);
      d.failure = undefined;
      this.opts.log?.('MPS daemon ready', {
        share: share.id,
        pod: share.pod,
        gpus: share.gpuUuids,
        pct: share.threadPercentage,
        vram: share.vramLimitBytes,
      });
    } catch (err) {
      d.failure = (err as Error).message;
      throw new Error(`MPS daemon of ${share.pod}: ${d.failure}`);
    }
  }

  private async prepare(dirs: ShareDirs): Promise<void> {
    // The three folders at once (each a few trips to the thread pool, which a busy node makes slow).
    await Promise.all(
      [dirs.pipeDir, dirs.logDir, dirs.shmDir].map(async (dir) => {
        await mkdir(dir, { recursive: true, mode: 0o755 });
        // Any uid the pod runs as must reach the pipes; the folder reaches no other pod.
        await chmod(dir, dir === dirs.pipeDir ? PIPE_CLOSED : PIPE_OPEN);
      }),
    );
    // A socket left by a daemon that died stops the next one from listening.
    await rm(join(dirs.pipeDir, 'control'), { force: true });
  }

  /**
   * Kills the daemon a pid file records (one a previous agent started), after `graceMs` for one that
   * was told to quit: the pid is taken only while its command line is still the control binary's,
   * so a reused pid is left alone.
   */
  private async killRecorded(dirs: DaemonDirs, graceMs = 0): Promise<void> {
    const pid = Number(await readFile(join(dirs.pipeDir, PID_FILE), 'utf8').catch(() => ''));
    if (!Number.isInteger(pid) || pid <= 0) return;
    const isDaemon = async () => (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).includes(basename(this.opts.controlBin));
    for (const until = Date.now() + graceMs; Date.now() < until && (await isDaemon());) await new Promise((r) => setTimeout(r, 20));
    if (!(await isDaemon())) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }

  private spawnDaemon(dirs: ShareDirs, gpuUuids: readonly string[]): ChildProcess {
    const env = daemonEnv(dirs, gpuUuids);
    // -M: the servers are root's, so no tenant may change their settings (see the file's comment).
    const daemonArgs = ['-f', '-M'];
    const shm = this.opts.shmBytes ?? 64 * 2 ** 20;
    const [cmd, args] =
      this.opts.isolateShm === false
        ? [this.opts.controlBin, daemonArgs]
        : // util-linux unshare: a private mount namespace with a /dev/shm of its own, bounded in size
          // (the servers' and clients' segments need not meet there on driver 580: measured).
          [
            'unshare',
            [
              '--mount',
              '--propagation',
              'private',
              '--',
              'sh',
              '-c',
              'mount -t tmpfs -o "size=$0,mode=1777" tmpfs /dev/shm && exec "$1" "$2" "$3"',
              String(shm),
              this.opts.controlBin,
              ...daemonArgs,
            ],
          ];
    // Its output (usage errors, `mount` failures) goes to a file in its log folder, for the message of a daemon that exits.
    const out = openSync(join(dirs.logDir, DAEMON_OUT), 'a');
    // A session of its own: a signal to the agent's process group does not reach it, and it outlives the agent.
    const child = spawn(cmd, args, { env, stdio: ['ignore', out, out], detached: true });
    closeSync(out);
    child.on('error', (err) => spawnErrors.set(child, err));
    child.unref();
    return child;
  }

  /** Moves a new daemon into its cgroups while its folder is closed, so before any tenant's server starts (servers inherit them). */
  private async intoCgroup(id: string, child: ChildProcess): Promise<void> {
    const { daemonCgroup, daemonCgroupsV1 } = this.opts;
    const v1 = daemonCgroupsV1?.hierarchies.length ? daemonCgroupsV1 : undefined;
    if ((!daemonCgroup && !v1) || child.pid === undefined) return;
    const memoryBytes = this.opts.daemonMemoryBytes ?? DAEMON_MEMORY_BYTES;
    const { procRoot } = this.opts;
    const limited = [
      daemonCgroup &&
        (await moveIntoCgroup({ root: daemonCgroup, memoryBytes, hostNamespace: this.opts.hostCgroupNamespace, procRoot }, id, child.pid)),
      v1 && (await moveIntoV1Cgroups({ ...v1, memoryBytes, procRoot }, id, child.pid)),
    ].some(Boolean);
    if (!limited && !this.unlimitedSaid) {
      this.unlimitedSaid = true;
      this.opts.log?.('no memory controller in the daemon cgroups: daemons run there without a memory limit of their own', {
        cgroup: daemonCgroup,
        v1: v1?.hierarchies,
      });
    }
  }

  private async waitForControl(d: Daemon): Promise<void> {
    const control = join(d.dirs.pipeDir, 'control');
    for (const until = Date.now() + this.timeoutMs; !existsSync(control);) {
      const code = d.child?.exitCode ?? d.child?.signalCode;
      // 127: the shell found no binary; a direct spawn of a missing file fails with ENOENT.
      if (code === 127 || (d.child && (spawnErrors.get(d.child) as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'))
        throw new MissingControl(`${this.opts.controlBin} not found on the node`);
      if (code != null) {
        const said = (await readFile(join(d.dirs.logDir, DAEMON_OUT), 'utf8').catch(() => '')).trim().split('\n').slice(-3).join(' | ');
        throw new Error(`daemon exited with ${code}${said ? `: ${said}` : ''}`);
      }
      if (Date.now() > until) throw new Error(`no control socket within ${this.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private async quit(d: Daemon): Promise<void> {
    const run = (cmds: string[]) => mpsCommand(this.opts.controlBin, d.dirs, cmds, this.timeoutMs).catch(() => '');
    const members = await this.members(d.share.id);
    if (members && members.clients.length > 0) await run(members.clients.map((c) => `terminate_client ${c.server} ${c.pid}`));
    await run(['quit']);
    if (d.child && d.child.exitCode === null) {
      const exited = new Promise((r) => d.child!.once('exit', r));
      await Promise.race([exited, new Promise((r) => setTimeout(r, this.timeoutMs))]);
      kill(d.child);
    } else if (!d.child) await this.killRecorded(d.dirs, this.timeoutMs);
  }

  /** Starts a daemon for one GPU alone, has it start a real server, and quits it. */
  private async probe(uuid: string): Promise<GpuReadiness> {
    const id = `${PROBE_PREFIX}${uuid}`;
    const d: Daemon = {
      share: { id, pod: `probe of ${uuid}`, gpuUuids: [uuid], vramLimitBytes: 0, threadPercentage: 100 },
      dirs: this.dirsOf(id),
    };
    try {
      await mkdir(join(this.opts.baseDir, id), { recursive: true });
      await this.prepare(d.dirs);
      d.child = this.spawnDaemon(d.dirs, [uuid]);
      await this.waitForControl(d);
      let servers = numbers(await this.command(d.dirs, ['start_server -uid 0', 'get_server_list']));
      // A server takes a moment to come up (a CUDA context): listed within the answer timeout.
      for (const until = Date.now() + this.timeoutMs; servers.length === 0 && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 200));
        servers = numbers(await this.command(d.dirs, ['get_server_list']));
      }
      if (servers.length === 0)
        throw new Error(`start_server -uid 0 started no server (get_server_list lists none after ${this.timeoutMs} ms)`);
      return { ready: true, reason: 'MpsReady', message: 'MPS control daemons start and run a server on this GPU' };
    } catch (err) {
      if (err instanceof MissingControl) return { ready: false, reason: 'MpsControlMissing', message: err.message };
      return {
        ready: false,
        reason: 'MpsProbeFailed',
        message: `a control daemon for this GPU did not run a server: ${(err as Error).message}`,
      };
    } finally {
      await this.quit(d);
      await rm(join(this.opts.baseDir, id), { recursive: true, force: true });
    }
  }
}

class MissingControl extends Error {}

const spawnErrors = new WeakMap<ChildProcess, Error>();

function kill(child: ChildProcess | undefined): void {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** The pids in a daemon's answer (one a line). */
function numbers(answer: string): number[] {
  return answer
    .split(/\s+/)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

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
 * The supervisor checks every daemon on an interval: one that died or stopped answering is replaced
 * (stale control socket removed, limits re-applied before any client can connect), and each GPU's
 * readiness says whether its daemons answer.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { DaemonDirs, daemonEnv, limitCommands, mpsCommand } from './control';

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
export type IsolationReason = 'MpsReady' | 'MpsControlMissing' | 'MpsDaemonNotAnswering' | 'MpsProbeFailed';

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
  /** How long a command may wait for an answer. @default 5000 */
  readonly answerTimeoutMs?: number;
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

export class MpsSupervisor {
  private readonly daemons = new Map<string, Daemon>();
  private readonly probes = new Map<string, GpuReadiness>();
  private readonly timeoutMs: number;
  private restartCount = 0;

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
    if (known && !known.failure && (await this.answers(known))) return known.dirs;
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
  }

  /**
   * At agent start: shares left on the host by the previous agent. Those `live` says a pod still holds
   * are taken over (a daemon that still answers is kept; one that died is started again with the
   * share's limits); the rest are ended and removed.
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
      if (!(await this.answers(d))) await this.start(d).catch(() => undefined);
    }
  }

  /** One supervision round: every daemon that died or stopped answering is replaced. */
  async check(): Promise<void> {
    await Promise.all(
      [...this.daemons.values()].map(async (d) => {
        if (d.starting || (await this.answers(d))) return;
        this.restartCount++;
        this.opts.log?.('MPS daemon not answering; replacing it', { share: d.share.id, pod: d.share.pod, why: d.failure });
        await this.start(d).catch(() => undefined);
      }),
    );
  }

  /**
   * Readiness of each GPU: the control binary is there, a daemon for the GPU alone starts and answers
   * (probed once per GPU until it passes), and every share daemon on it answers.
   */
  async readiness(gpuUuids: readonly string[]): Promise<Map<string, GpuReadiness>> {
    const out = new Map<string, GpuReadiness>();
    for (const uuid of gpuUuids) {
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
      if (!probe?.ready) this.probes.set(uuid, (probe = await this.probe(uuid)));
      out.set(uuid, probe);
    }
    return out;
  }

  /**
   * Ends one client of a share through its daemon (`terminate_client`, after which the process may be
   * killed without harm to the server); resolves false when the daemon does not list it.
   */
  async terminateClient(id: string, pid: number): Promise<boolean> {
    const dirs = this.dirsOf(id);
    const run = (cmds: string[]) => mpsCommand(this.opts.controlBin, dirs, cmds, this.timeoutMs).catch(() => '');
    for (const server of (await run(['get_server_list'])).split(/\s+/).filter(Boolean)) {
      if ((await run([`get_client_list ${server}`])).split(/\s+/).includes(String(pid))) {
        await run([`terminate_client ${server} ${pid}`]);
        return true;
      }
    }
    return false;
  }

  /** Quits every daemon (agent shutdown): their servers and clients end with them. */
  async stop(): Promise<void> {
    await Promise.all([...this.daemons.values()].map((d) => this.quit(d)));
    this.daemons.clear();
  }

  private async answers(d: Daemon): Promise<boolean> {
    if (d.child && d.child.exitCode !== null) {
      d.failure = `daemon exited with ${d.child.exitCode ?? d.child.signalCode}`;
      return false;
    }
    try {
      const pct = await mpsCommand(this.opts.controlBin, d.dirs, ['get_default_active_thread_percentage'], this.timeoutMs);
      if (Number(pct) !== d.share.threadPercentage) {
        d.failure = `daemon answers ${pct}% as its thread percentage, not ${d.share.threadPercentage}%`;
        return false;
      }
      d.failure = undefined;
      return true;
    } catch (err) {
      d.failure = (err as Error).message;
      return false;
    }
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
    await this.prepare(dirs);
    await writeFile(join(this.opts.baseDir, share.id, SHARE_FILE), JSON.stringify(share));
    d.child = this.spawnDaemon(dirs, share.gpuUuids);
    try {
      await this.waitForControl(d);
      // The limits and a read-back in one run of the front end (each run is a process start).
      const answers = await mpsCommand(
        this.opts.controlBin,
        dirs,
        [...limitCommands(share.gpuUuids.length, share.vramLimitBytes, share.threadPercentage), 'get_default_active_thread_percentage'],
        this.timeoutMs,
      );
      const pct = answers.split('\n').pop();
      if (Number(pct) !== share.threadPercentage)
        throw new Error(`daemon answers ${pct}% as its thread percentage, not ${share.threadPercentage}%`);
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
    for (const dir of [dirs.pipeDir, dirs.logDir, dirs.shmDir]) {
      await mkdir(dir, { recursive: true, mode: 0o755 });
      // Any uid the pod runs as must reach the pipes and shm; the folder reaches no other pod.
      await chmod(dir, 0o1777);
    }
    // A socket left by a daemon that died stops the next one from listening.
    await rm(join(dirs.pipeDir, 'control'), { force: true });
  }

  private spawnDaemon(dirs: ShareDirs, gpuUuids: readonly string[]): ChildProcess {
    const env = daemonEnv(dirs, gpuUuids);
    const [cmd, args] =
      this.opts.isolateShm === false
        ? [this.opts.controlBin, ['-f']]
        : // util-linux unshare: a private mount namespace whose /dev/shm is the share's folder.
          [
            'unshare',
            [
              '--mount',
              '--propagation',
              'private',
              '--',
              'sh',
              '-c',
              'mount --bind "$0" /dev/shm && exec "$1" -f',
              dirs.shmDir,
              this.opts.controlBin,
            ],
          ];
    const child = spawn(cmd, args, { env, stdio: 'ignore' });
    child.on('error', (err) => spawnErrors.set(child, err));
    return child;
  }

  private async waitForControl(d: Daemon): Promise<void> {
    const control = join(d.dirs.pipeDir, 'control');
    for (const until = Date.now() + this.timeoutMs; !existsSync(control);) {
      const code = d.child?.exitCode ?? d.child?.signalCode;
      // 127: the shell found no binary; a direct spawn of a missing file fails with ENOENT.
      if (code === 127 || (d.child && (spawnErrors.get(d.child) as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'))
        throw new MissingControl(`${this.opts.controlBin} not found on the node`);
      if (code != null) throw new Error(`daemon exited with ${code}`);
      if (Date.now() > until) throw new Error(`no control socket within ${this.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private async quit(d: Daemon): Promise<void> {
    const run = (cmds: string[]) => mpsCommand(this.opts.controlBin, d.dirs, cmds, this.timeoutMs).catch(() => '');
    const servers = (await run(['get_server_list'])).split(/\s+/).filter(Boolean);
    for (const server of servers) {
      const clients = (await run([`get_client_list ${server}`])).split(/\s+/).filter(Boolean);
      if (clients.length > 0) await run(clients.map((c) => `terminate_client ${server} ${c}`));
    }
    await run(['quit']);
    if (d.child && d.child.exitCode === null) {
      const exited = new Promise((r) => d.child!.once('exit', r));
      await Promise.race([exited, new Promise((r) => setTimeout(r, this.timeoutMs))]);
      kill(d.child);
    }
  }

  /** Starts a daemon for one GPU alone, asks it a question, and quits it. */
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
      await mpsCommand(this.opts.controlBin, d.dirs, ['get_default_active_thread_percentage'], this.timeoutMs);
      return { ready: true, reason: 'MpsReady', message: 'MPS control daemons start and answer on this GPU' };
    } catch (err) {
      if (err instanceof MissingControl) return { ready: false, reason: 'MpsControlMissing', message: err.message };
      return { ready: false, reason: 'MpsProbeFailed', message: `a control daemon for this GPU did not answer: ${(err as Error).message}` };
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

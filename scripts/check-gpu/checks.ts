/**
 * The sub-checks of `npm run check:gpu`, on shares served by the real MpsSupervisor (one `-M`
 * control daemon per share in its own mount namespace, its limits set and read back the way the
 * agent does) and clients started as a share's containers (container.ts). Each sub-check records
 * its value, or null and the reason in `errors`, streams it as it ends, and never stops the others;
 * `abort` (a signal, the global deadline) ends the one in flight and skips the rest.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GpuReadiness, LimitBreach, MpsShare, MpsSupervisor, ShareDirs } from '../../lib/runtime/agent/mps/supervisor';
import { mpsCommand } from '../../lib/runtime/agent/mps/control';
import { REFUSAL_PREFIX } from '../../lib/runtime/agent/mps/limits';
import { NVIDIA_ENV } from '../../lib/runtime/shared/pod-share/container-env';
import { collectVram, fakeProc } from './agent';
import { Client, ClientReport, Clients } from './clients';
import { ContainerSpec, shareContainer } from './container';
import { computeApps, serverSm } from './smi';

const MIB = 2 ** 20;
/** The VRAM limit the memory sub-checks hold clients to. */
const LIMIT_MIB = 4096;
/** Where an allocation loop stops when no limit stops it: past the limit, well within the card. */
const ALLOC_MAX_MIB = 8192;
/** Seconds of each compute loop: long enough for a steady rate, short enough for a run of minutes. */
const BURN_S = 3;
/** The kill sub-check's loops, and when one of them is ended. */
const KILL_RUN_S = 4;
const KILL_AFTER_MS = 1_000;
/** A tenant's host uid (a pod with `hostUsers: false`), and a plain non-root uid. */
const TENANT_UID = 100000;
const NOBODY_UID = 65534;

/** The shares the check serves; their names are the pod names in the agent's metrics. */
const SHARES = {
  limited: { vramMiB: LIMIT_MIB, pct: 25 },
  full: { vramMiB: 16384, pct: 100 },
  'share-a': { vramMiB: 8192, pct: 50 },
  'share-b': { vramMiB: 8192, pct: 50 },
} as const;
type ShareName = keyof typeof SHARES;

interface Served {
  readonly name: ShareName;
  readonly share: MpsShare;
  readonly dirs: ShareDirs;
  readonly spec: ContainerSpec;
}

/** The check's values: the JSON line's fields besides the GPU's; null where not measured (the reason is in `errors`). */
export interface CheckValues {
  /** Readiness of the GPU as the agent reports it (compute mode, a probe daemon running a server). */
  isolation: GpuReadiness | null;
  vramLimitHolds: boolean | null;
  /** Clients that drop or raise the limit variables, or drop the pipe folder's, stay under the limit. */
  hostileVramLimitHolds: boolean | null;
  smsAt25Percent: number | null;
  smsTotal: number | null;
  /** A non-root client (uid 65534) gets the share's SMs and VRAM limit. */
  nonRootClientBound: boolean | null;
  /** A tenant of host uid 100000 is refused every `set_*` through the share's pipe folder, and its next client keeps the limits. */
  tenantCannotRaise: boolean | null;
  /** Host root raising its server's limits is found by the next supervision round, set back, and reported. */
  rootRaiseCaught: boolean | null;
  /** fp32 (PTX) or bf16 (PyTorch) TFLOPS of a 100 % share alone. */
  soloTflops: number | null;
  /** A 50 % share alone, and two 50 % shares side by side. */
  halfShareTflops: number | null;
  twoSharesTflops: [number, number] | null;
  /** SM % pmon gives the busy share's server and the idle share's (found through each daemon's server list). */
  perPodSm: { busy: number; idle: number } | null;
  /** A client pointing CUDA_MPS_PIPE_DIRECTORY elsewhere: found (not a member of any share's daemon) and killed, ms from its start. */
  bypassKilledMs: number | null;
  othersSurviveKill: boolean | null;
  /**
   * Informational: SMs of a new client of the ended client's share right after the kill. The H200
   * run's cudaErrorDevicesUnavailable was such a client after a plain SIGKILL mid-kernel, which MPS
   * documents as leaving that client's server in an undefined state; the agent (and this check) ends
   * a client through terminate_client first.
   */
  freshClientAfterKill: number | null;
  agentVramBytesPerPod: Record<string, number> | null;
  /** Host memory (VmRSS, KiB) of one share's control daemon and of its server while a client holds it: what a share costs the node. */
  mpsRssKiB: { daemon: number; server: number } | null;
  /** A share over two GPUs holds its limit on both (null with a reason on a one-GPU machine). */
  multiGpuLimits: boolean | null;
}

export interface CheckContext {
  readonly supervisor: MpsSupervisor;
  readonly clients: Clients;
  /** The GPUs, first one checked; device minors by index. */
  readonly gpus: readonly { readonly uuid: string; readonly minor: number; readonly computeMode?: string }[];
  readonly controlBin: string;
  readonly nvidiaSmi: string;
  /** A folder of the check's own (the agent's fake /proc goes there). */
  readonly workDir: string;
  /** Breaches the supervisor reported (its onBreach). */
  readonly breaches: LimitBreach[];
  readonly note: (msg: string) => void;
}

type Name = keyof CheckValues;

export class GpuCheck {
  readonly details: Record<string, unknown> = {};
  readonly errors: Partial<Record<Name, string>> = {};
  readonly timingsMs: Partial<Record<Name, number>> = {};
  readonly values: CheckValues = {
    isolation: null,
    vramLimitHolds: null,
    hostileVramLimitHolds: null,
    smsAt25Percent: null,
    smsTotal: null,
    nonRootClientBound: null,
    tenantCannotRaise: null,
    rootRaiseCaught: null,
    soloTflops: null,
    halfShareTflops: null,
    twoSharesTflops: null,
    perPodSm: null,
    bypassKilledMs: null,
    othersSurviveKill: null,
    freshClientAfterKill: null,
    agentVramBytesPerPod: null,
    mpsRssKiB: null,
    multiGpuLimits: null,
  };
  private readonly served = new Map<ShareName, Promise<Served>>();
  private stopped?: string;

  constructor(private readonly ctx: CheckContext) {}

  /** Runs every sub-check in turn (they share the GPU, so none run at once); `values` holds what finished. */
  async run(): Promise<CheckValues> {
    const v = this.values;
    const uuid = this.ctx.gpus[0].uuid;
    const modes = new Map(this.ctx.gpus.flatMap((g) => (g.computeMode ? [[g.uuid, g.computeMode] as const] : [])));
    await this.sub('isolation', async () => (await this.ctx.supervisor.readiness([uuid], modes)).get(uuid) ?? null);
    await this.sub('vramLimitHolds', async () =>
      underLimit(this.detail('vramLimitHolds', await this.alloc((await this.share('limited')).spec))),
    );
    await this.sub('hostileVramLimitHolds', async () => {
      const { spec } = await this.share('limited');
      const { [NVIDIA_ENV.mpsMemLimit]: _m, [NVIDIA_ENV.mpsThreads]: _t, ...unsetEnv } = spec.env;
      const { CUDA_MPS_PIPE_DIRECTORY: _p, ...noPipeEnv } = spec.env;
      const unset = await this.alloc({ ...spec, env: unsetEnv });
      const raised = await this.alloc({ ...spec, env: { ...spec.env, [NVIDIA_ENV.mpsMemLimit]: '0=64G', [NVIDIA_ENV.mpsThreads]: '100' } });
      // No pipe folder variable: CUDA's default folder, where the share's folder is mounted too.
      const noPipeVar = await this.alloc({ ...spec, env: noPipeEnv });
      this.detail('hostileVramLimitHolds', { unset, raised, noPipeVar });
      return underLimit(unset) && underLimit(raised) && underLimit(noPipeVar);
    });
    await this.sub('smsAt25Percent', async () => (await this.info('limited')).sms);
    await this.sub('smsTotal', async () => (await this.info('full')).sms);
    await this.sub('nonRootClientBound', async () => {
      const { spec } = await this.share('limited');
      const info = await this.ctx.clients.start(spec, 'info', 0, NOBODY_UID).done;
      const alloc = await this.alloc(spec, NOBODY_UID);
      this.detail('nonRootClientBound', { info, alloc });
      return info.uid === NOBODY_UID && this.quarter(info.sms) && underLimit(alloc);
    });
    await this.sub('tenantCannotRaise', () => this.tenant());
    await this.sub('rootRaiseCaught', () => this.rootRaise());
    await this.sub('soloTflops', async () => (await this.burnAlone('full')).tflops ?? null);
    await this.sub('halfShareTflops', async () => (await this.burnAlone('share-a')).tflops ?? null);
    await this.sub('twoSharesTflops', async () => {
      const [a, b] = await this.burnTogether(BURN_S);
      const [ra, rb] = await Promise.all([a.done, b.done]);
      return ra.tflops !== undefined && rb.tflops !== undefined ? [ra.tflops, rb.tflops] : null;
    });
    await this.sub('perPodSm', () => this.perPodSm());
    await this.sub('bypassKilledMs', () => this.bypass());
    await this.sub('agentVramBytesPerPod', () => this.agent());
    await this.sub('othersSurviveKill', () => this.kill());
    await this.sub(
      'freshClientAfterKill',
      async () => (await this.ctx.clients.start((await this.share('share-a')).spec, 'info', 0, 0, 30_000).done).sms,
    );
    await this.sub('mpsRssKiB', () => this.rss());
    await this.sub('multiGpuLimits', () => this.multiGpu());
    return v;
  }

  /**
   * Ends the run early (a signal, the deadline): running clients are killed, so the sub-check in
   * flight fails fast, and the rest start nothing; the caller stops the daemons afterwards.
   */
  abort(why: string): void {
    this.stopped ??= why;
    this.ctx.clients.close();
  }

  private async sub<K extends Name>(name: K, fn: () => Promise<CheckValues[K]>): Promise<void> {
    const start = Date.now();
    try {
      if (this.stopped) throw new Error(`not run: ${this.stopped}`);
      const value = await fn();
      if (this.stopped) throw new Error(`cut short: ${this.stopped}`);
      this.values[name] = value;
      if (value === null) this.errors[name] ??= 'not measured';
      this.ctx.note(`${name}: ${JSON.stringify(value)}`);
    } catch (err) {
      this.errors[name] = (err as Error).message;
      this.ctx.note(`${name}: null (${this.errors[name]})`);
    } finally {
      this.timingsMs[name] = Date.now() - start;
    }
  }

  private detail<T>(name: string, value: T): T {
    this.details[name] = value;
    return value;
  }

  /** At most 30 % of the 100 % share's SMs (MPS gives whole TPCs: 32 of 132 at 25 %); null until smsTotal is known. */
  private quarter(sms: number): boolean {
    if (this.values.smsTotal === null) throw new Error('smsTotal was not measured, so 25 % cannot be judged');
    return sms <= 0.3 * this.values.smsTotal;
  }

  /** The share's daemon, started once (ensure) with the share's limits. */
  private share(name: ShareName, gpus = 1): Promise<Served> {
    if (this.stopped) return Promise.reject(new Error(this.stopped));
    const key = (gpus > 1 ? `${name}@${gpus}` : name) as ShareName;
    let served = this.served.get(key);
    if (!served) {
      const { vramMiB, pct } = SHARES[name];
      const used = this.ctx.gpus.slice(0, gpus);
      const share: MpsShare = {
        id: randomUUID(),
        pod: `check-gpu/${name}`,
        gpuUuids: used.map((g) => g.uuid),
        vramLimitBytes: vramMiB * MIB,
        threadPercentage: pct,
      };
      served = this.ctx.supervisor.ensure(share).then((dirs) => ({
        name,
        share,
        dirs,
        spec: shareContainer(
          share,
          dirs,
          used.map((g) => g.minor),
        ),
      }));
      // A share whose daemon did not start is tried again by the next sub-check that needs it.
      served.catch(() => this.served.delete(key));
      this.served.set(key, served);
    }
    return served;
  }

  private alloc(spec: ContainerSpec, uid = 0): Promise<ClientReport> {
    return this.ctx.clients.start(spec, 'alloc', ALLOC_MAX_MIB, uid).done;
  }

  private async info(name: ShareName, uid = 0): Promise<ClientReport> {
    return this.ctx.clients.start((await this.share(name)).spec, 'info', 0, uid).done;
  }

  /** A hold client of `name`, and the share's server pid from its daemon once the client is in. */
  private async held(name: ShareName, uid = 0): Promise<{ s: Served; holder: Client; server: number }> {
    const s = await this.share(name);
    const holder = this.ctx.clients.start(s.spec, 'hold', 512, uid);
    await holder.ready;
    const server = (await this.ctx.supervisor.members(s.share.id))?.servers[0];
    if (server === undefined) throw new Error(`the daemon of ${name} lists no server while a client holds it`);
    return { s, holder, server };
  }

  private async release(holder: Client): Promise<void> {
    holder.go();
    await holder.done.catch(() => undefined);
  }

  /** A tenant of host uid 100000, through the pipe folder its pod mounts. */
  private async tenant(): Promise<boolean> {
    const { s, holder, server } = await this.held('limited', TENANT_UID);
    try {
      const tries = [
        'set_default_active_thread_percentage 100',
        `set_active_thread_percentage ${server} 100`,
        `set_device_pinned_mem_limit ${server} 0 8G`,
      ];
      const answers = await asUid(this.ctx.controlBin, s.dirs, tries, TENANT_UID);
      const next = await this.info('limited', TENANT_UID);
      this.detail('tenantCannotRaise', { answers, nextClient: next });
      return answers.length === tries.length && answers.every((a) => a.startsWith(REFUSAL_PREFIX)) && this.quarter(next.sms);
    } finally {
      await this.release(holder);
    }
  }

  /** Host root raises its server's limits; the next supervision round must set them back and report it. */
  private async rootRaise(): Promise<boolean> {
    const { s, holder, server } = await this.held('limited');
    try {
      const before = this.ctx.breaches.length;
      await mpsCommand(
        this.ctx.controlBin,
        s.dirs,
        [`set_active_thread_percentage ${server} 100`, `set_device_pinned_mem_limit ${server} 0 8G`],
        10_000,
      );
      const raised = await this.info('limited');
      await this.ctx.supervisor.check();
      const breach = this.ctx.breaches.slice(before).find((b) => b.share.id === s.share.id);
      const after = await this.info('limited');
      this.detail('rootRaiseCaught', { raisedClientSms: raised.sms, breach: breach?.mismatches ?? null, afterClientSms: after.sms });
      return breach !== undefined && this.quarter(after.sms);
    } finally {
      await this.release(holder);
    }
  }

  /** A burn client of one share, alone on the GPU. */
  private async burnAlone(name: ShareName): Promise<ClientReport> {
    const c = this.ctx.clients.start((await this.share(name)).spec, 'burn', BURN_S);
    const ready = await c.ready;
    this.detail(`${name}Engine`, ready.engine);
    c.go();
    return c.done;
  }

  /** A burn client of share-a and one of share-b, started at the same moment once both are warm. */
  private async burnTogether(seconds: number, only?: 'share-a'): Promise<Client[]> {
    const shares = await Promise.all(only ? [this.share(only)] : [this.share('share-a'), this.share('share-b')]);
    const clients = shares.map((s) => this.ctx.clients.start(s.spec, 'burn', seconds));
    try {
      await Promise.all(clients.map((c) => c.ready));
    } catch (err) {
      for (const c of clients) c.child.kill('SIGKILL');
      throw err;
    }
    for (const c of clients) c.go();
    return clients;
  }

  /** share-a busy and share-b holding memory idle: pmon's SM % for each share's own server. */
  private async perPodSm(): Promise<{ busy: number; idle: number } | null> {
    const idle = await this.held('share-b');
    try {
      const [busy] = await this.burnTogether(BURN_S, 'share-a');
      await new Promise((r) => setTimeout(r, 1_500));
      const busyServers = (await this.ctx.supervisor.members((await this.share('share-a')).share.id))?.servers ?? [];
      const sm = await serverSm(this.ctx.nvidiaSmi);
      await busy.done;
      const pick = (servers: readonly number[]) => servers.reduce((n, pid) => n + (sm.get(pid) ?? 0), 0);
      this.detail('perPodSm', { busyServers, idleServer: idle.server, pmon: Object.fromEntries(sm) });
      if (busyServers.length === 0) throw new Error("share-a's daemon listed no server while its client ran");
      return { busy: pick(busyServers), idle: pick([idle.server]) };
    } finally {
      await this.release(idle.holder);
    }
  }

  /**
   * Beside share-a's active server, a client whose CUDA_MPS_PIPE_DIRECTORY points elsewhere (CUDA
   * then runs it off MPS): polled for in nvidia-smi's process list, found because no share's daemon
   * lists it, and killed. The agent's own fast backstop loop (the backstop engineer's) is what
   * should run here once it is in the agent; this loop stands for it and kills only its own client.
   */
  private async bypass(): Promise<number> {
    const active = await this.held('share-a');
    try {
      const { spec, dirs } = active.s;
      const elsewhere = { ...spec, env: { ...spec.env, CUDA_MPS_PIPE_DIRECTORY: join(dirs.logDir, 'elsewhere') } };
      const started = Date.now();
      const rogue = this.ctx.clients.start(elsewhere, 'hold', 1024);
      const ids = [...this.served.values()];
      for (const until = started + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
        const members = new Set<number>();
        for (const p of ids) {
          const m = await this.ctx.supervisor.members((await p).share.id);
          for (const pid of [...(m?.servers ?? []), ...(m?.clients.map((c) => c.pid) ?? [])]) members.add(pid);
        }
        const outsiders = (await computeApps(this.ctx.nvidiaSmi)).filter((pid) => !members.has(pid));
        if (outsiders.includes(rogue.child.pid!)) {
          const foundMs = Date.now() - started;
          rogue.child.kill('SIGKILL');
          await rogue.done.catch(() => undefined);
          const ready = await rogue.ready.catch((e: Error) => e.message);
          this.detail('bypassKilledMs', {
            foundMs,
            exitedMs: Date.now() - started,
            rogue: ready,
            otherOutsiders: outsiders.filter((p) => p !== rogue.child.pid),
          });
          return foundMs;
        }
      }
      rogue.child.kill('SIGKILL');
      throw new Error('the bypassing client never showed in nvidia-smi as a process outside the shares within 10 s');
    } finally {
      await this.release(active.holder);
    }
  }

  /** A client of share-a is ended (terminate_client through its daemon, then SIGKILL, as the agent ends one) while share-b's runs: share-b's keeps its rate. */
  private async kill(): Promise<boolean> {
    const [victim, survivor] = await this.burnTogether(KILL_RUN_S);
    await new Promise((r) => setTimeout(r, KILL_AFTER_MS));
    const a = await this.share('share-a');
    const terminated = await this.ctx.supervisor.terminateClient(a.share.id, victim.child.pid!);
    victim.child.kill('SIGKILL');
    const killed = await victim.done.then(
      () => 'finished before the kill',
      (err: Error) => err.message,
    );
    const { tflops = 0 } = await survivor.done;
    const floor = (this.values.twoSharesTflops?.[1] ?? 0) / 2;
    this.detail('othersSurviveKill', { terminated, killed, survivorTflops: tflops, floorTflops: floor });
    return tflops > floor;
  }

  /** The collector attributes two shares' clients (512 and 1024 MiB held) to their pods. */
  private async agent(): Promise<Record<string, number>> {
    const shares = await Promise.all([this.share('share-a'), this.share('share-b')]);
    const holders = shares.map((s, i) => this.ctx.clients.start(s.spec, 'hold', 512 * (i + 1)));
    try {
      const ready = await Promise.all(holders.map((h) => h.ready));
      const pods = shares.map((s, i) => ({ pid: ready[i].pid, podUid: s.share.id, pod: s.name }));
      const procRoot = await fakeProc(join(this.ctx.workDir, 'proc'), pods);
      const view = await collectVram(this.ctx.nvidiaSmi, procRoot, pods);
      this.detail('agentVramBytesPerPod', { heldMiB: { 'share-a': 512, 'share-b': 1024 }, mpsServers: view.mpsServers });
      return view.vramBytesPerPod;
    } finally {
      for (const h of holders) h.go();
      await Promise.allSettled(holders.map((h) => h.done));
    }
  }

  private async rss(): Promise<{ daemon: number; server: number }> {
    const { s, holder, server } = await this.held('share-b');
    try {
      const daemon = Number(await readFile(join(s.dirs.pipeDir, 'nvidia-cuda-mps-control.pid'), 'utf8'));
      const kib = async (pid: number) => Number(/^VmRSS:\s*(\d+)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1]);
      return { daemon: await kib(daemon), server: await kib(server) };
    } finally {
      await this.release(holder);
    }
  }

  private async multiGpu(): Promise<boolean> {
    if (this.ctx.gpus.length < 2) throw new Error(`this machine has ${this.ctx.gpus.length} GPU: a share over several GPUs needs two`);
    const s = await this.share('share-a', 2);
    const limits = await mpsCommand(
      this.ctx.controlBin,
      s.dirs,
      ['get_default_device_pinned_mem_limit 0', 'get_default_device_pinned_mem_limit 1'],
      10_000,
    );
    this.detail('multiGpuLimits', limits);
    return limits.split('\n').every((l) => l.trim() === `${SHARES['share-a'].vramMiB}M`);
  }
}

/** The client ran out of memory before the limit (the H100 run measured 3 of 4 GiB: the context takes the rest). */
function underLimit(r: ClientReport): boolean {
  return r.oom === true && (r.allocatedMiB ?? Infinity) < LIMIT_MIB;
}

/** Commands through a share's pipe folder from a process of host `uid`; each answer line. */
async function asUid(controlBin: string, dirs: ShareDirs, cmds: readonly string[], uid: number): Promise<string[]> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    const p = spawn(controlBin, [], {
      env: { ...process.env, CUDA_MPS_PIPE_DIRECTORY: dirs.pipeDir, CUDA_MPS_LOG_DIRECTORY: dirs.logDir },
      uid,
      gid: uid,
      timeout: 10_000,
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('error', reject).on('close', () =>
      resolve(
        out
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean),
      ),
    );
    p.stdin.end(cmds.map((c) => `${c}\n`).join(''));
  });
}

/** Whether the values show the node side's isolation working on this GPU (null is never a pass). */
export function passed(v: CheckValues): boolean {
  const pods = v.agentVramBytesPerPod ?? {};
  const solo = v.soloTflops ?? 0;
  return (
    v.isolation?.ready === true &&
    v.vramLimitHolds === true &&
    v.hostileVramLimitHolds === true &&
    v.nonRootClientBound === true &&
    v.tenantCannotRaise === true &&
    v.rootRaiseCaught === true &&
    v.othersSurviveKill === true &&
    v.smsAt25Percent !== null &&
    v.smsTotal !== null &&
    v.smsAt25Percent <= 0.3 * v.smsTotal &&
    // A 50 % share alone: about half the solo rate, bounded by its SMs, not by contention.
    v.halfShareTflops !== null &&
    v.halfShareTflops <= 0.65 * solo &&
    v.halfShareTflops >= 0.3 * solo &&
    v.twoSharesTflops !== null &&
    v.twoSharesTflops.every((t) => t > 0 && t <= 0.65 * solo) &&
    v.perPodSm !== null &&
    v.perPodSm.busy > v.perPodSm.idle &&
    v.bypassKilledMs !== null &&
    // share-b's client holds twice share-a's: attributed to the right pods, not summed or swapped.
    pods['share-a'] > 0 &&
    pods['share-b'] > pods['share-a']
  );
}

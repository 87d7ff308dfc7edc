/**
 * The sub-checks of `npm run check:gpu`, on shares served by the real MpsSupervisor (one control
 * daemon per share, its limits set in the daemon) and CUDA clients run as a pod's containers would.
 * Each sub-check records its value, or its fallback and an error, and never stops the others.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { GpuReadiness, MpsShare, MpsSupervisor, ShareDirs } from '../../lib/runtime/agent/mps/supervisor';
import { NVIDIA_ENV } from '../../lib/runtime/shared/pod-share/container-env';
import { collectVram, fakeProc } from './agent';
import { Client, ClientReport, Clients, containerEnv } from './clients';

const GIB = 2 ** 30;
/** The VRAM limit the memory sub-checks hold clients to. */
const LIMIT_GIB = 4;
/** Where an allocation loop stops when no limit stops it: past the limit, well within the card. */
const ALLOC_MAX_GIB = 8;
/** Seconds of each matmul loop: long enough for a steady rate, short enough for a run of minutes. */
const MATMUL_S = 3;
/** The kill sub-check's loops, and when one of them is killed. */
const KILL_RUN_S = 4;
const KILL_AFTER_MS = 1_000;

/** The shares the check serves; their names are the pod names in the agent's metrics. */
const SHARES = {
  limited: { vramGiB: LIMIT_GIB, pct: 25 },
  full: { vramGiB: 16, pct: 100 },
  'share-a': { vramGiB: 8, pct: 50 },
  'share-b': { vramGiB: 8, pct: 50 },
} as const;
type ShareName = keyof typeof SHARES;

interface Served {
  readonly name: ShareName;
  readonly share: MpsShare;
  readonly dirs: ShareDirs;
  readonly env: Record<string, string>;
}

/** The check's values: the JSON line's fields besides the GPU's. */
export interface CheckValues {
  /** Readiness of the GPU as the agent reports it (the supervisor's probe daemon). */
  isolation: GpuReadiness | null;
  vramLimitHolds: boolean;
  hostileVramLimitHolds: boolean;
  /** Informational: a client that drops CUDA_MPS_PIPE_DIRECTORY reaches no daemon; did it get past the limit? */
  pipeDirUnsetEscapes: boolean | null;
  smsAt25Percent: number | null;
  smsTotal: number | null;
  twoSharesTflops: [number, number] | null;
  othersSurviveKill: boolean;
  agentVramBytesPerPod: Record<string, number> | null;
}

export interface CheckContext {
  readonly supervisor: MpsSupervisor;
  readonly clients: Clients;
  readonly gpuUuid: string;
  readonly nvidiaSmi: string;
  /** A folder of the check's own (the agent's fake /proc goes there). */
  readonly workDir: string;
  readonly note: (msg: string) => void;
}

export class GpuCheck {
  readonly details: Record<string, unknown> = {};
  readonly errors: Record<string, string> = {};
  readonly timingsMs: Record<string, number> = {};
  private readonly served = new Map<ShareName, Promise<Served>>();
  private aborted = false;

  constructor(private readonly ctx: CheckContext) {}

  /** Runs every sub-check in turn (they share the GPU, so none run at once). */
  async run(): Promise<CheckValues> {
    const { supervisor, gpuUuid } = this.ctx;
    const isolation = await this.sub('isolation', null, async () => (await supervisor.readiness([gpuUuid])).get(gpuUuid) ?? null);
    const vramLimitHolds = await this.sub('vramLimitHolds', false, async () => {
      const s = await this.share('limited');
      return underLimit(this.detail('vramLimitHolds', await this.alloc(s.env)));
    });
    const hostileVramLimitHolds = await this.sub('hostileVramLimitHolds', false, async () => {
      const s = await this.share('limited');
      const unset = await this.alloc({ CUDA_MPS_PIPE_DIRECTORY: s.dirs.pipeDir });
      const raised = await this.alloc({ ...s.env, [NVIDIA_ENV.mpsMemLimit]: '0=64G', [NVIDIA_ENV.mpsThreads]: '100' });
      this.detail('hostileVramLimitHolds', { unset, raised });
      return underLimit(unset) && underLimit(raised);
    });
    const pipeDirUnsetEscapes = await this.sub('pipeDirUnsetEscapes', null, async () => {
      // No pipe folder: CUDA looks for a daemon at its default path, finds none, and runs the client
      // outside MPS, unless the GPU's compute mode refuses a second context (then it fails to start).
      const r = await this.alloc({}).catch((err: Error) => err.message);
      this.detail('pipeDirUnsetEscapes', r);
      return typeof r !== 'string' && !underLimit(r);
    });
    const smsAt25Percent = await this.sub('smsAt25Percent', null, async () => (await this.info('limited')).sms);
    const smsTotal = await this.sub('smsTotal', null, async () => (await this.info('full')).sms);
    const twoSharesTflops = await this.sub('twoSharesTflops', null, async () => {
      const [ca, cb] = await this.matmulTogether(MATMUL_S);
      const [ra, rb] = await Promise.all([ca.done, cb.done]);
      return [ra.tflops ?? 0, rb.tflops ?? 0] as [number, number];
    });
    const agentVramBytesPerPod = await this.sub('agentVramBytesPerPod', null, () => this.agent());
    const othersSurviveKill = await this.sub('othersSurviveKill', false, async () => {
      const [victim, survivor] = await this.matmulTogether(KILL_RUN_S);
      await new Promise((r) => setTimeout(r, KILL_AFTER_MS));
      victim.child.kill('SIGKILL');
      const killed = await victim.done.then(
        () => 'finished before the kill',
        (err: Error) => err.message,
      );
      const { tflops = 0 } = await survivor.done;
      // Sane: at least half of what the same share got while the other share ran all along.
      const floor = (twoSharesTflops?.[1] ?? 0) / 2;
      const fresh = await this.freshClient(await this.share('share-a'));
      this.detail('othersSurviveKill', { killed, survivorTflops: tflops, floorTflops: floor, ...fresh });
      return tflops > floor;
    });
    return {
      isolation,
      vramLimitHolds,
      hostileVramLimitHolds,
      pipeDirUnsetEscapes,
      smsAt25Percent,
      smsTotal,
      twoSharesTflops,
      othersSurviveKill,
      agentVramBytesPerPod,
    };
  }

  /**
   * Ends the run early (a signal): running clients are killed, so the sub-check in flight fails
   * fast, and the rest start nothing; the caller stops the daemons once run() has returned.
   */
  abort(): void {
    this.aborted = true;
    this.ctx.clients.close();
  }

  private async sub<T>(name: string, failed: T, fn: () => Promise<T>): Promise<T> {
    const start = Date.now();
    try {
      if (this.aborted) throw new Error('interrupted');
      const value = await fn();
      this.ctx.note(`${name}: ${JSON.stringify(value)}`);
      return value;
    } catch (err) {
      this.errors[name] = (err as Error).message;
      this.ctx.note(`${name} failed: ${this.errors[name]}`);
      return failed;
    } finally {
      this.timingsMs[name] = Date.now() - start;
    }
  }

  private detail<T>(name: string, value: T): T {
    this.details[name] = value;
    return value;
  }

  /** The share's daemon, started once (ensure) with the share's limits. */
  private share(name: ShareName): Promise<Served> {
    if (this.aborted) return Promise.reject(new Error('interrupted'));
    let served = this.served.get(name);
    if (!served) {
      const { vramGiB, pct } = SHARES[name];
      const share: MpsShare = {
        id: randomUUID(),
        pod: `check-gpu/${name}`,
        gpuUuids: [this.ctx.gpuUuid],
        vramLimitBytes: vramGiB * GIB,
        threadPercentage: pct,
      };
      served = this.ctx.supervisor.ensure(share).then((dirs) => ({ name, share, dirs, env: containerEnv(share, dirs) }));
      // A share whose daemon did not start is tried again by the next sub-check that needs it.
      served.catch(() => this.served.delete(name));
      this.served.set(name, served);
    }
    return served;
  }

  private alloc(env: Record<string, string>): Promise<ClientReport> {
    return this.ctx.clients.start(env, 'alloc', ALLOC_MAX_GIB).done;
  }

  private async info(name: ShareName): Promise<ClientReport> {
    return this.ctx.clients.start((await this.share(name)).env, 'info').done;
  }

  /** A matmul client of share-a and one of share-b, started at the same moment once both are warm. */
  private async matmulTogether(seconds: number): Promise<Client[]> {
    const shares = await Promise.all([this.share('share-a'), this.share('share-b')]);
    const clients = shares.map((s) => this.ctx.clients.start(s.env, 'matmul', seconds));
    try {
      await Promise.all(clients.map((c) => c.ready));
    } catch (err) {
      // The other one would wait for its start until its timeout.
      for (const c of clients) c.child.kill('SIGKILL');
      throw err;
    }
    for (const c of clients) c.go();
    return clients;
  }

  /**
   * After a client was killed: a new client of its share starts after a supervision round (check),
   * or else after the share is released and ensured again.
   */
  private async freshClient(s: Served): Promise<Record<string, unknown>> {
    const start = () => this.ctx.clients.start(s.env, 'info', 0, 30_000).done;
    await this.ctx.supervisor.check();
    try {
      return { newClientVia: 'check', newClientSms: (await start()).sms };
    } catch (err) {
      if (this.aborted) throw err;
      await this.ctx.supervisor.release(s.share.id);
      await this.ctx.supervisor.ensure(s.share);
      return { newClientVia: 'release+ensure', afterCheckError: (err as Error).message, newClientSms: (await start()).sms };
    }
  }

  /** Clients of share-a and share-b hold 1 and 2 GiB while the real collector attributes them. */
  private async agent(): Promise<Record<string, number>> {
    const shares = await Promise.all([this.share('share-a'), this.share('share-b')]);
    const holders = shares.map((s, i) => this.ctx.clients.start(s.env, 'hold', i + 1));
    try {
      const ready = await Promise.all(holders.map((h) => h.ready));
      const pods = shares.map((s, i) => ({ pid: ready[i].pid, podUid: s.share.id, pod: s.name }));
      const procRoot = await fakeProc(join(this.ctx.workDir, 'proc'), pods);
      const view = await collectVram(this.ctx.nvidiaSmi, procRoot, pods);
      this.detail('agentVramBytesPerPod', { heldGiB: { 'share-a': 1, 'share-b': 2 }, mpsServers: view.mpsServers });
      return view.vramBytesPerPod;
    } finally {
      for (const h of holders) h.go();
      await Promise.allSettled(holders.map((h) => h.done));
    }
  }
}

/** The client ran out of memory before the limit (the README measured 3 of 4 GiB: the context takes the rest). */
function underLimit(r: ClientReport): boolean {
  return r.oom === true && (r.allocatedGiB ?? Infinity) < LIMIT_GIB;
}

/** Whether the values show the node side's isolation working on this GPU. */
export function passed(v: CheckValues): boolean {
  const pods = v.agentVramBytesPerPod ?? {};
  return (
    v.vramLimitHolds &&
    v.hostileVramLimitHolds &&
    v.othersSurviveKill &&
    // MPS gives whole TPCs: 32 of 132 SMs at 25 % on an H100.
    v.smsAt25Percent !== null &&
    v.smsTotal !== null &&
    v.smsAt25Percent <= 0.3 * v.smsTotal &&
    v.twoSharesTflops !== null &&
    v.twoSharesTflops.every((t) => t > 0) &&
    // share-b's client holds twice share-a's: attributed to the right pods, not summed or swapped.
    pods['share-a'] > 0 &&
    pods['share-b'] > pods['share-a']
  );
}

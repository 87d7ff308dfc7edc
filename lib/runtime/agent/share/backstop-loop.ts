/**
 * The backstop's fast loop: polls the per-process query (a few hundred ms apart, so a bypass lives
 * under a second), asks a share's daemon for its members only when a process of its pod is new, and
 * kills what `judge` names after re-reading the process's cgroup and start time, so that a pid reused
 * since the query is never hit. Each kill is an Event on the pod; after `escalateAfter` kills the pod
 * is deleted, not evicted: an eviction is refused for as long as a PodDisruptionBudget forbids it, and
 * the tenant writes the budget. It fails closed: while the query fails or stops answering, every GPU
 * is reported not ready, so that no new share is placed where a bypass would go unseen.
 */
import { performance } from 'node:perf_hooks';
import type { ProcessIdentity } from '../cgroup';
import type { MpsShare } from '../mps/supervisor';
import type { SmiApp } from '../nvidia-smi';
import { Bypass, isMember, judge } from './bypass';
import type { ShareMembers } from './members';

/** The backstop's part in a GPU's readiness (the IsolationReady condition when it is not ready). */
export interface BackstopReadiness {
  readonly ready: boolean;
  readonly reason: 'BackstopRunning' | 'BackstopUnavailable';
  readonly message: string;
}

export interface BackstopLoopOptions {
  /** The shares with a daemon on the node. */
  readonly shares: () => readonly MpsShare[];
  /** A share's servers and clients from its daemon; undefined when it does not answer. */
  readonly members: (id: string) => Promise<ShareMembers | undefined>;
  /** The per-process query (nvidia-smi --query-compute-apps); rejects when it fails. */
  readonly query: () => Promise<readonly SmiApp[]>;
  /** A host process's pod, name and start time; undefined when it is gone. */
  readonly identify: (pid: number) => Promise<ProcessIdentity | undefined>;
  /** Kills a host process (SIGKILL); throws when it is gone. */
  readonly kill: (pid: number) => void;
  /** A Warning Event on the share's pod. */
  readonly event: (share: MpsShare, reason: string, message: string) => Promise<void>;
  /** Deletes the share's pod (its owner recreates it). */
  readonly remove: (share: MpsShare, message: string) => Promise<void>;
  /** Called when the readiness of some GPU changed, so that it is written at once. */
  readonly onChange?: () => void;
  /** Pause between polls. @default 200 */
  readonly intervalMs?: number;
  /** Kills of one pod after which it is deleted. @default 3 */
  readonly escalateAfter?: number;
  /** Failed polls in a row after which the GPUs are not ready. @default 3 */
  readonly failAfter?: number;
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** Where one poll's time went: its start (epoch ms) and each step's milliseconds. */
interface PollTiming {
  readonly pollStartedAt: number;
  queryMs: number;
  identifyMs: number;
  membersMs: number;
}

/** The loop's defaults, one home for the figures the docs quote. */
export const BACKSTOP_DEFAULTS = { intervalMs: 200, escalateAfter: 3, failAfter: 3 } as const;

export class BackstopLoop {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private polling: Promise<void> | undefined;
  private failures = 0;
  private lastError = 'the backstop has not run yet';
  private succeeded = false;
  /** pid -> `<share id>/<start ticks>` of processes their daemon listed: not asked about again. */
  private readonly known = new Map<number, string>();
  private unjudged = new Map<string, string>();
  /** Kills per share id, and the shares whose pod was deleted. */
  private readonly kills = new Map<string, number>();
  private readonly removed = new Set<string>();
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly opts: BackstopLoopOptions) {}

  /** Polls once, then on the interval until stop(). */
  async start(): Promise<void> {
    this.running = true;
    await this.poll();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await this.polling;
    await Promise.all(this.pending);
  }

  /** Each GPU's readiness as far as the backstop goes. */
  readiness(gpuUuids: readonly string[]): Map<string, BackstopReadiness> {
    const failing = !this.running || !this.succeeded || this.failures >= (this.opts.failAfter ?? BACKSTOP_DEFAULTS.failAfter);
    const down = `the backstop cannot run (${this.running ? this.lastError : 'stopped'}): processes that bypass MPS would go unseen, so no new share is placed here`;
    return new Map(
      gpuUuids.map((uuid): [string, BackstopReadiness] => {
        if (failing) return [uuid, { ready: false, reason: 'BackstopUnavailable', message: down }];
        const why = this.unjudged.get(uuid);
        if (why)
          return [uuid, { ready: false, reason: 'BackstopUnavailable', message: `the backstop cannot judge processes here: ${why}` }];
        return [uuid, { ready: true, reason: 'BackstopRunning', message: 'every process of a share is checked against its MPS daemon' }];
      }),
    );
  }

  /** One poll: query, judge, kill. Concurrent calls share one run. */
  poll(): Promise<void> {
    this.polling ??= this.pollOnce().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  /** Polls start `intervalMs` apart; a query slower than that is followed at once, so its time is not added twice. */
  private schedule(lastStart = performance.now()): void {
    if (!this.running) return;
    const wait = Math.max(0, lastStart + (this.opts.intervalMs ?? BACKSTOP_DEFAULTS.intervalMs) - performance.now());
    this.timer = setTimeout(() => {
      const start = performance.now();
      // pollOnce logs its own failures; anything past them (a listener that throws) must not end the loop.
      void this.poll()
        .catch((err) => this.opts.log?.('backstop poll failed; polling on', { err: String(err) }))
        .then(() => this.schedule(start));
    }, wait);
    this.timer.unref();
  }

  private async pollOnce(): Promise<void> {
    const before = this.readinessKey();
    try {
      const t: PollTiming = { pollStartedAt: Date.now(), queryMs: 0, identifyMs: 0, membersMs: 0 };
      const start = performance.now();
      const apps = await this.opts.query();
      t.queryMs = Math.round(performance.now() - start);
      await this.enforce(apps, t);
      [this.failures, this.succeeded] = [0, true];
    } catch (err) {
      this.failures++;
      this.lastError = (err as Error).message;
      this.opts.log?.('backstop poll failed', { err: this.lastError, failures: this.failures });
    }
    if (this.readinessKey() !== before) this.opts.onChange?.();
  }

  private readinessKey(): string {
    const failing = this.failures >= (this.opts.failAfter ?? BACKSTOP_DEFAULTS.failAfter) || !this.succeeded;
    return JSON.stringify([failing, [...this.unjudged.keys()].sort()]);
  }

  private async enforce(apps: readonly SmiApp[], t: PollTiming): Promise<void> {
    const shares = this.opts.shares();
    const ids = new Set(shares.map((s) => s.id));
    const pids = [...new Set(apps.map((a) => a.pid))];
    let mark = performance.now();
    const lap = (): number => {
      const [ms, now] = [Math.round(performance.now() - mark), performance.now()];
      mark = now;
      return ms;
    };
    const identities = new Map(await Promise.all(pids.map(async (pid) => [pid, await this.opts.identify(pid)] as const)));
    t.identifyMs = lap();
    for (const pid of this.known.keys()) if (!identities.get(pid)) this.known.delete(pid);
    // Only shares with a process not seen listed before are asked (each question starts the daemon's front end).
    const ask = new Set<string>();
    const settled = new Set<number>();
    for (const [pid, id] of identities) {
      const share = id?.pod?.podUid;
      if (!id || !share || !ids.has(share)) continue;
      if (this.known.get(pid) === `${share}/${id.startTicks}`) settled.add(pid);
      else ask.add(share);
    }
    const members = new Map(
      await Promise.all([...ask].map(async (id) => [id, await this.opts.members(id).catch(() => undefined)] as const)),
    );
    t.membersMs = lap();
    const verdict = judge(
      apps.filter((a) => !settled.has(a.pid)),
      identities,
      shares.filter((s) => ask.has(s.id)),
      members,
    );
    this.unjudged = verdict.unjudged;
    const bad = new Set(verdict.bypasses.map((b) => b.pid));
    for (const [pid, id] of identities) {
      const share = id?.pod?.podUid;
      if (id && share && members.get(share) && !bad.has(pid)) this.known.set(pid, `${share}/${id.startTicks}`);
    }
    for (const b of verdict.bypasses) await this.stop1(b, t);
  }

  /**
   * Kills one process if it is still the one judged (same pod, same start time) and its daemon still
   * does not list it (a client that connected after the first question), then records the Event and escalates.
   */
  private async stop1(b: Bypass, t: PollTiming): Promise<void> {
    const start = performance.now();
    const [now, members] = await Promise.all([this.opts.identify(b.pid), this.opts.members(b.share.id).catch(() => undefined)]);
    const recheckMs = Math.round(performance.now() - start);
    if (!now || now.startTicks !== b.identity.startTicks || now.pod?.podUid !== b.share.id) {
      this.opts.log?.('backstop: process gone or replaced before the kill; left alone', { pid: b.pid, pod: b.share.pod });
      return;
    }
    if (!members || isMember(members, b.pid)) return;
    try {
      this.opts.kill(b.pid);
    } catch {
      return; // gone between the re-check and the kill
    }
    const n = (this.kills.get(b.share.id) ?? 0) + 1;
    this.kills.set(b.share.id, n);
    // Where the time from the process's listing to its kill went (bench:agent-restart reads it).
    this.opts.log?.(b.message, { pod: b.share.pod, reason: b.reason, kills: n, ...t, recheckMs });
    const after = this.opts.escalateAfter ?? BACKSTOP_DEFAULTS.escalateAfter;
    const escalate = n >= after && !this.removed.has(b.share.id);
    if (escalate) this.removed.add(b.share.id);
    this.track(
      (async () => {
        await this.opts.event(b.share, b.reason, b.message);
        if (!escalate) return;
        const message = `${b.share.pod} bypassed its MPS daemon ${n} times (the backstop deletes a pod after ${after}); the pod is deleted`;
        await this.opts.event(b.share, 'MpsBypassRepeated', message);
        await this.opts.remove(b.share, message);
      })(),
    );
  }

  /** Events and deletions run beside the loop, so that an API server slow to answer never delays a kill. */
  private track(p: Promise<void>): void {
    const done = p
      .catch((err) => this.opts.log?.('backstop: recording a bypass failed', { err: String(err) }))
      .finally(() => this.pending.delete(done));
    this.pending.add(done);
  }
}

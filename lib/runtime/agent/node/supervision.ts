/**
 * The node side of `hard` isolation, above its front doors (the device plugin; DRA) and the share
 * machinery they use: one supervision round on an interval. Shares of pods whose containers are all
 * gone (or that finished) are ended through their daemon and their CDI specs removed, daemons that
 * died are replaced, shares over their VRAM lose their newest clients (../backstop.ts; processes that
 * bypass their daemon are the fast backstop's, ../share/backstop-loop.ts), and each GPU's readiness
 * goes to its IsolationReady condition, to the doors' device health and to a metric.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { GPU_ISOLATION_CONDITION } from '../../../model/metadata-keys';
import { lookupGpuTflops } from '../../../model/gpu-catalog';
import { gpuName } from '../../../model/gpu-object';
import type { Cluster, K8sObject } from '../../kube/cluster';
import { RESOURCES } from '../../kube/resources';
import { breaches, GpuProcess } from '../backstop';
import { AGENT_DEFAULTS, AGENT_METRICS } from '../../../contract/agent';
import { GpuReadiness, LimitBreach, MpsSupervisor } from '../mps/supervisor';
import type { BackstopLoop } from '../share/backstop-loop';
import type { SmiGpu } from '../nvidia-smi';
import type { ShareDelivery } from '../share/delivery';
import { podEnded } from '../share/pod-ended';
import { Serial } from '../../shared/serial';

/** A front door: serves the node's shares to the kubelet through one of its APIs. */
export interface Door {
  start(): Promise<void>;
  /** The GPUs or their readiness changed: advertise again. */
  update(): void;
  stop(): Promise<void>;
}

export interface NodeIsolationOptions {
  readonly cluster: Cluster;
  readonly nodeName: string;
  readonly supervisor: MpsSupervisor;
  /** The node's GPUs (nvidia-smi). */
  readonly inventory: () => Promise<SmiGpu[]>;
  /** Each GPU's compute mode by UUID (nvidia-smi); a failure leaves the modes unchecked this round. */
  readonly computeModes?: () => Promise<ReadonlyMap<string, string>>;
  /** The GPU processes with their pods (nvidia-smi and cgroups); undefined when that failed. */
  readonly processes: () => Promise<GpuProcess[] | undefined>;
  /** Stops a host process (SIGKILL by default; the agent shares the host PID namespace). */
  readonly kill?: (pid: number) => void;
  readonly delivery: ShareDelivery;
  /** The fast backstop (../share/backstop-loop.ts): started and stopped with the rounds; a GPU it cannot watch is not ready. */
  readonly backstop?: BackstopLoop;
  readonly registry: Registry;
  /** @default AGENT_DEFAULTS.intervalMs */
  readonly intervalMs?: number;
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export class NodeIsolation {
  private readonly doors: Door[] = [];
  private gpuList: SmiGpu[] = [];
  private ready = new Map<string, GpuReadiness>();
  /** The readiness last written to each GPU object, by object name. */
  private readonly written = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private rounds = 0;
  private round: Promise<void> | undefined;
  private readonly readyGauge: Gauge<'gpu_uuid' | 'gpu_model' | 'reason'>;
  /** Readiness passes one at a time: the rounds and the backstop's changes both ask for them. */
  private readonly readinessPasses = new Serial(() => this.readinessPass());

  constructor(private readonly opts: NodeIsolationOptions) {
    this.readyGauge = new Gauge({
      name: AGENT_METRICS.isolationReady,
      help: "Whether the GPU's MPS isolation is ready (1) or not (0), with the reason",
      labelNames: ['gpu_uuid', 'gpu_model', 'reason'],
      registers: [opts.registry],
    });
    const sup = opts.supervisor;
    new Gauge({
      name: AGENT_METRICS.mpsShares,
      help: 'Shares with an MPS control daemon on the node',
      registers: [opts.registry],
      collect() {
        this.set(sup.shares().length);
      },
    });
    new Counter({
      name: AGENT_METRICS.mpsRestarts,
      help: 'Share MPS daemons replaced after they died or stopped answering',
      registers: [opts.registry],
      collect() {
        this.reset();
        this.inc(sup.restarts());
      },
    });
  }

  /** The node's GPUs, as last listed. */
  gpus(): readonly SmiGpu[] {
    return this.gpuList;
  }

  /** Each GPU's isolation readiness, by UUID, as last checked. */
  readiness(): ReadonlyMap<string, GpuReadiness> {
    return this.ready;
  }

  /**
   * Takes over the shares left by a previous agent, computes readiness, opens the doors, starts the
   * rounds. The doors are served from here on; they read {@link gpus} and {@link readiness}.
   */
  async start(doors: readonly Door[]): Promise<void> {
    this.doors.push(...doors);
    await this.refreshInventory();
    const pods = await this.pods();
    const holding = new Set(pods.filter((p) => !podEnded(p)).map((p) => p.metadata.uid));
    await this.opts.supervisor.adopt((id) => holding.has(id));
    await this.opts.backstop?.start();
    await this.writeReadiness();
    for (const d of this.doors) await d.start();
    this.timer = setInterval(() => {
      this.round ??= this.tick().finally(() => {
        this.round = undefined;
      });
    }, this.opts.intervalMs ?? AGENT_DEFAULTS.intervalMs);
    this.timer.unref();
  }

  /** One supervision round. */
  async tick(): Promise<void> {
    try {
      if (this.gpuList.length === 0) await this.refreshInventory();
      const pods = await this.pods();
      const live = new Map(pods.filter((p) => !podEnded(p)).map((p) => [p.metadata.uid!, p]));
      await Promise.all(
        this.opts.supervisor
          .shares()
          .filter((share) => !live.has(share.id))
          .map((share) => {
            this.opts.log?.('pod gone or its containers ended: its MPS clients are ended through its daemon', { pod: share.pod });
            return this.opts.supervisor.release(share.id);
          }),
      );
      this.opts.delivery.prune((uid) => live.has(uid));
      await this.opts.supervisor.check();
      await this.enforce(live);
      // Now and then the conditions are written again: a GPU object recreated by the controller lacks them.
      if (++this.rounds % 12 === 0) this.written.clear();
      await this.writeReadiness();
    } catch (err) {
      this.opts.log?.('supervision round failed', { err: String(err) });
    }
  }

  /**
   * Shares that hold more VRAM than limit × containers lose their newest clients, with an Event.
   * Processes that bypass their daemon are the fast backstop's (../share/backstop-loop.ts).
   */
  private async enforce(live: ReadonlyMap<string, K8sObject>): Promise<void> {
    const procs = await this.opts.processes();
    if (!procs) return;
    const kill = this.opts.kill ?? ((pid: number) => process.kill(pid, 'SIGKILL'));
    for (const b of breaches(procs, this.opts.supervisor.shares())) {
      if (b.reason !== 'VramLimitExceeded') continue;
      await this.opts.supervisor.terminateClient(b.share.id, b.pid);
      try {
        kill(b.pid);
      } catch {
        /* already gone */
      }
      this.opts.log?.(b.message, { pod: b.share.pod, reason: b.reason });
      const pod = live.get(b.share.id);
      if (pod) await this.opts.cluster.recordEvent(pod, { type: 'Warning', reason: b.reason, message: b.message });
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.round;
    await this.opts.backstop?.stop();
    for (const d of this.doors) await d.stop();
  }

  /** The node's GPUs now (listed again while none is known). */
  async currentGpus(): Promise<readonly SmiGpu[]> {
    if (this.gpuList.length === 0) await this.refreshInventory();
    return this.gpuList;
  }

  /** The node's GPUs; none while nvidia-smi fails (tried again each round), and the doors offer nothing then. */
  private async refreshInventory(): Promise<void> {
    const before = this.gpuList.length;
    this.gpuList = await this.opts.inventory().catch((err) => {
      this.opts.log?.('listing the GPUs failed; trying again next round', { err: String(err) });
      return [];
    });
    if (this.gpuList.length !== before) this.updateDoors();
  }

  private updateDoors(): void {
    for (const d of this.doors) d.update();
  }

  private async pods(): Promise<K8sObject[]> {
    return (await this.opts.cluster.list(RESOURCES.pods, { fieldSelector: `spec.nodeName=${this.opts.nodeName}` })).items;
  }

  /** A daemon's limits were found changed and set back: an Event on the pod. */
  async limitsBreached(b: LimitBreach): Promise<void> {
    const what = b.mismatches
      .map((m) => `${m.setting}${m.server ? ` of server ${m.server}` : ''} ${m.found} (set back to ${m.expected})`)
      .join('; ');
    const message = `the MPS limits of ${b.share.pod} were changed: ${what}; ${b.clients.length} client(s) started meanwhile may hold the changed limits until they end`;
    this.opts.log?.(message, { pod: b.share.pod, reason: 'MpsLimitsChanged' });
    const [namespace, name] = b.share.pod.split('/');
    await this.opts.cluster.recordEvent(
      { apiVersion: 'v1', kind: 'Pod', metadata: { namespace, name, uid: b.share.id } },
      { type: 'Warning', reason: 'MpsLimitsChanged', message },
    );
  }

  /** Readiness of every GPU to the metric, the doors' device health and the GPU objects' condition (when it changed). */
  writeReadiness(): Promise<void> {
    return this.readinessPasses.run();
  }

  private async readinessPass(): Promise<void> {
    const before = this.ready;
    const uuids = this.gpuList.map((g) => g.uuid);
    const modes = await this.opts.computeModes?.().catch(() => undefined);
    this.ready = await this.opts.supervisor.readiness(uuids, modes);
    // A GPU the backstop cannot watch takes no new share: fail closed.
    for (const [uuid, b] of this.opts.backstop?.readiness(uuids) ?? [])
      if (!b.ready && this.ready.get(uuid)?.ready !== false)
        this.ready.set(uuid, { ready: false, reason: 'BackstopUnavailable', message: b.message });
    this.readyGauge.reset();
    for (const g of this.gpuList) {
      const r = this.ready.get(g.uuid)!;
      this.readyGauge.set(
        { gpu_uuid: g.uuid, gpu_model: lookupGpuTflops(g.name.replace(/\s+/g, '-'))?.model ?? g.name, reason: r.reason },
        r.ready ? 1 : 0,
      );
      await this.writeCondition(gpuName(this.opts.nodeName, g.index), r);
    }
    if ([...this.ready].some(([u, r]) => before.get(u)?.ready !== r.ready)) this.updateDoors();
  }

  private async writeCondition(gpu: string, r: GpuReadiness): Promise<void> {
    const key = JSON.stringify(r);
    if (this.written.get(gpu) === key) return;
    const condition = {
      type: GPU_ISOLATION_CONDITION,
      status: r.ready ? 'True' : 'False',
      reason: r.reason,
      message: r.message,
      lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    try {
      await this.opts.cluster.mergePatch(RESOURCES.gpus, { name: gpu }, { status: { conditions: [condition] } }, 'status');
      this.written.set(gpu, key);
    } catch (err) {
      // No GPU object yet (the node is in no pool, or the controller has not made it): tried next round.
      this.opts.log?.('writing the GPU isolation condition failed', { gpu, err: String(err) });
    }
  }
}

/**
 * The node side of `hard` isolation: the MPS supervisor, the device plugin that hands each container
 * its GPU devices, its share's daemon and limits through the kubelet, and one supervision round on an
 * interval: shares of pods that are gone, finished or being deleted are ended through their daemon,
 * daemons that died are replaced, processes that breach their share are stopped (backstop.ts), and
 * each GPU's readiness goes to its IsolationReady condition, to the plugin's device health and to a
 * metric.
 */
import { existsSync } from 'node:fs';
import { Counter, Gauge, Registry } from 'prom-client';
import { GPU_ISOLATION_CONDITION, SHARE_RESOURCE } from '../../model/metadata-keys';
import { lookupGpuTflops } from '../../model/gpu-catalog';
import { gpuName } from '../../model/gpu-object';
import type { Cluster, K8sObject } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';
import { breaches, GpuProcess } from './backstop';
import { AGENT_DEFAULTS, AGENT_METRICS } from '../../contract/agent';
import { Device, HEALTHY, UNHEALTHY } from './device-plugin/api';
import { DevicePluginServer } from './device-plugin/server';
import { GpuReadiness, MpsSupervisor } from './mps/supervisor';
import type { SmiGpu } from './nvidia-smi';
import { containerResponse, mpsShareOf, nextClaim } from './share-claims';

export interface NodeIsolationOptions {
  readonly cluster: Cluster;
  readonly nodeName: string;
  readonly supervisor: MpsSupervisor;
  /** The node's GPUs (nvidia-smi). */
  readonly inventory: () => Promise<SmiGpu[]>;
  /** The GPU processes with their pods (nvidia-smi and cgroups); undefined when that failed. */
  readonly processes: () => Promise<GpuProcess[] | undefined>;
  /** Stops a host process (SIGKILL by default; the agent shares the host PID namespace). */
  readonly kill?: (pid: number) => void;
  readonly pluginDir: string;
  readonly devRoot: string;
  readonly registry: Registry;
  /** @default AGENT_DEFAULTS.intervalMs */
  readonly intervalMs?: number;
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

const SOCKET_NAME = 'tensor-fusion-share.sock';
/** Daemons started ahead of the kubelet's Allocate, per Allocate. */
const PRESTART = 4;

export class NodeIsolation {
  private readonly plugin: DevicePluginServer;
  /** Containers served per pod uid: the kubelet allocates once per container that requests a share. */
  private readonly served = new Map<string, number>();
  private gpus: SmiGpu[] = [];
  private ready = new Map<string, GpuReadiness>();
  /** The readiness last written to each GPU object, by object name. */
  private readonly written = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private rounds = 0;
  private round: Promise<void> | undefined;
  private readonly readyGauge: Gauge<'gpu_uuid' | 'gpu_model' | 'reason'>;

  constructor(private readonly opts: NodeIsolationOptions) {
    this.plugin = new DevicePluginServer({
      pluginDir: opts.pluginDir,
      resourceName: SHARE_RESOURCE,
      socketName: SOCKET_NAME,
      devices: () => this.devices(),
      allocate: (ids) => this.allocate(ids),
      log: opts.log,
    });
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

  /** Takes over the shares left by a previous agent, computes readiness, serves the plugin, starts the rounds. */
  async start(): Promise<void> {
    await this.refreshInventory();
    const pods = await this.pods();
    const holding = new Set(pods.filter((p) => !ended(p)).map((p) => p.metadata.uid));
    await this.opts.supervisor.adopt((id) => holding.has(id));
    // A pod already running was served by the previous agent.
    for (const p of pods)
      if ((p.status as { phase?: string } | undefined)?.phase === 'Running' && p.metadata.uid)
        this.served.set(p.metadata.uid, Number.MAX_SAFE_INTEGER);
    await this.writeReadiness();
    await this.plugin.start();
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
      if (this.gpus.length === 0) await this.refreshInventory();
      const pods = await this.pods();
      const live = new Map(pods.filter((p) => !ended(p)).map((p) => [p.metadata.uid!, p]));
      await Promise.all(
        this.opts.supervisor
          .shares()
          .filter((share) => !live.has(share.id))
          .map((share) => {
            this.opts.log?.('pod gone or ending: its MPS clients are ended through its daemon', { pod: share.pod });
            return this.opts.supervisor.release(share.id);
          }),
      );
      for (const uid of this.served.keys()) if (!pods.some((p) => p.metadata.uid === uid)) this.served.delete(uid);
      await this.opts.supervisor.check();
      await this.enforce(live);
      // Now and then the conditions are written again: a GPU object recreated by the controller lacks them.
      if (++this.rounds % 12 === 0) this.written.clear();
      await this.writeReadiness();
    } catch (err) {
      this.opts.log?.('supervision round failed', { err: String(err) });
    }
  }

  /** The backstop: processes that bypass their share's daemon or take more VRAM than the share are stopped, with an Event. */
  private async enforce(live: ReadonlyMap<string, K8sObject>): Promise<void> {
    const procs = await this.opts.processes();
    if (!procs) return;
    const kill = this.opts.kill ?? ((pid: number) => process.kill(pid, 'SIGKILL'));
    for (const b of breaches(procs, this.opts.supervisor.shares())) {
      if (b.reason === 'VramLimitExceeded') await this.opts.supervisor.terminateClient(b.share.id, b.pid);
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
    await this.plugin.stop();
  }

  /** The node's GPUs; none while nvidia-smi fails (tried again each round), and the plugin offers nothing then. */
  private async refreshInventory(): Promise<void> {
    const before = this.gpus.length;
    this.gpus = await this.opts.inventory().catch((err) => {
      this.opts.log?.('listing the GPUs failed; trying again next round', { err: String(err) });
      return [];
    });
    if (this.gpus.length !== before) this.plugin.update();
  }

  private async pods(): Promise<K8sObject[]> {
    return (await this.opts.cluster.list(RESOURCES.pods, { fieldSelector: `spec.nodeName=${this.opts.nodeName}` })).items;
  }

  private devices(): Device[] {
    return this.gpus.flatMap((g) =>
      Array.from({ length: AGENT_DEFAULTS.slotsPerGpu }, (_, k) => ({
        ID: `gpu${g.index}-${k}`,
        health: this.ready.get(g.uuid)?.ready === false ? UNHEALTHY : HEALTHY,
      })),
    );
  }

  private async allocate(ids: string[]) {
    const pods = await this.pods();
    const pod = nextClaim(pods, this.served);
    if (!pod) throw new Error(`no pod bound to node ${this.opts.nodeName} waits for ${SHARE_RESOURCE} (devices ${ids.join(', ')})`);
    if (this.gpus.length === 0) await this.refreshInventory();
    const share = mpsShareOf(pod, this.gpus);
    const dirs = await this.opts.supervisor.ensure(share);
    this.served.set(share.id, (this.served.get(share.id) ?? 0) + 1);
    this.prestart(pods);
    this.opts.log?.('share allocated', { pod: share.pod, gpus: share.gpuUuids, devices: ids });
    return containerResponse(share, dirs, this.gpus, this.opts.devRoot, existsSync);
  }

  /**
   * Starts the daemons of the other pods waiting here, so that their Allocate finds them ready: the
   * kubelet admits pods one at a time, and a daemon start is most of an Allocate. A few at a time.
   */
  private prestart(pods: readonly K8sObject[]): void {
    const waiting = new Map(this.served);
    for (let i = 0; i < PRESTART; i++) {
      const next = nextClaim(pods, waiting);
      if (!next) return;
      waiting.set(next.metadata.uid!, Number.MAX_SAFE_INTEGER);
      if (this.opts.supervisor.has(next.metadata.uid!)) continue;
      try {
        void this.opts.supervisor.ensure(mpsShareOf(next, this.gpus)).catch(() => undefined); // Allocate retries and reports
      } catch {
        /* no share record yet: Allocate reports it */
      }
    }
  }

  /** Readiness of every GPU to the metric, the plugin's health and the GPU objects' condition (when it changed). */
  private async writeReadiness(): Promise<void> {
    const before = this.ready;
    this.ready = await this.opts.supervisor.readiness(this.gpus.map((g) => g.uuid));
    this.readyGauge.reset();
    for (const g of this.gpus) {
      const r = this.ready.get(g.uuid)!;
      this.readyGauge.set(
        { gpu_uuid: g.uuid, gpu_model: lookupGpuTflops(g.name.replace(/\s+/g, '-'))?.model ?? g.name, reason: r.reason },
        r.ready ? 1 : 0,
      );
      await this.writeCondition(gpuName(this.opts.nodeName, g.index), r);
    }
    if ([...this.ready].some(([u, r]) => before.get(u)?.ready !== r.ready)) this.plugin.update();
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

/** A pod whose share is over: gone from the list, finished, or being deleted. */
function ended(p: K8sObject): boolean {
  const phase = (p.status as { phase?: string } | undefined)?.phase;
  return !!p.metadata.deletionTimestamp || phase === 'Succeeded' || phase === 'Failed';
}

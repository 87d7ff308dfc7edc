/**
 * One collection: runs nvidia-smi (GPUs, compute apps, pmon), attributes each pid to a pod through
 * /proc/<pid>/cgroup, names the pod and container, takes a share's compute from its own MPS server
 * (share/compute.ts), and sets the gauges. Runs on every scrape (a
 * collect hook), so the
 * numbers are as fresh as Prometheus asks and nothing runs when nobody scrapes.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Counter, Gauge, Registry } from 'prom-client';
import { lookupGpuTflops } from '../../model/gpu-catalog';
import type { GpuProcess } from './backstop';
import { podOfPid } from './cgroup';
import { AGENT_METRICS, GPU_LABELS, POD_GPU_LABELS } from '../../contract/agent';
import { isMpsClient, isMpsServer, MPS_SERVER_COMMAND, parseComputeApps, parseGpus, parsePmon, SmiGpu, SmiPmon } from './nvidia-smi';
import { runSmi, SmiQuery } from './nvidia-smi-run';
import { shareCompute, ShareContainer } from './share/compute';
import type { ShareMembers } from './share/members';

/** What a pod UID and container id resolve to. */
export interface ResolvedPod {
  namespace: string;
  pod: string;
  container?: string;
  /** The pod's MPS thread percentage (its compute cap on each of its GPUs), when it holds a share. */
  threadPercentage?: number;
}

/** Names a pod UID and container id; undefined when the pod is not (yet) known. */
export interface PodResolver {
  resolve(podUid: string, containerId?: string): ResolvedPod | undefined;
}

export interface CollectorOptions {
  /** Path of nvidia-smi (a fake script in tests). */
  readonly nvidiaSmi: string;
  /** Root of the host's /proc. */
  readonly procRoot: string;
  readonly resolver: PodResolver;
  /** Per-run timeout of nvidia-smi. @default 10000 */
  readonly timeoutMs?: number;
  /**
   * A share's servers and clients from its own MPS daemon (the share id is the pod UID); undefined when
   * it does not answer. With it, a share's containers get compute measured on their own server.
   */
  readonly members?: (id: string) => Promise<ShareMembers | undefined>;
}

/** The short model name of an nvidia-smi GPU name (`NVIDIA A100-SXM4-80GB` -> A100) and its TFLOPS. */
function gpuModel(gpu: SmiGpu): { model: string; tflops: number } {
  const hit = lookupGpuTflops(gpu.name.replace(/\s+/g, '-'));
  return hit ? { model: hit.model, tflops: hit.tflops } : { model: gpu.name, tflops: 0 };
}

export class GpuCollector {
  readonly registry: Registry;
  private lastCollectS = 0;
  private readonly vram: Gauge<(typeof POD_GPU_LABELS)[number]>;
  private readonly compute: Gauge<(typeof POD_GPU_LABELS)[number]>;
  private readonly sm: Gauge<(typeof POD_GPU_LABELS)[number]>;
  private readonly estimated: Gauge<(typeof POD_GPU_LABELS)[number]>;
  private readonly cap: Gauge<(typeof POD_GPU_LABELS)[number]>;
  private readonly capacity: Gauge<(typeof GPU_LABELS)[number]>;
  private readonly mpsServers: Gauge<(typeof GPU_LABELS)[number]>;
  private readonly unattributed: Gauge;
  private readonly errors: Counter<'query'>;
  private inFlight: Promise<void> | undefined;

  constructor(private readonly opts: CollectorOptions) {
    // prom-client reads all metrics in parallel, so collection runs before the registry is read.
    const collect = () => this.collect();
    this.registry = new (class extends Registry {
      override async metrics(): Promise<string> {
        await collect();
        return super.metrics();
      }
    })();
    const registers = [this.registry];
    const M = AGENT_METRICS;
    const labelNames = POD_GPU_LABELS;
    const lastCollectS = () => this.lastCollectS;
    new Gauge({
      name: M.lastCollect,
      help: 'Unix time of the last collection, seconds.',
      registers,
      collect() {
        this.set(lastCollectS());
      },
    });
    this.vram = new Gauge({ name: M.vramUsed, help: 'Device memory used by the container on the GPU, bytes.', labelNames, registers });
    this.compute = new Gauge({
      name: M.computeUsed,
      help: "SM utilisation of the container on the GPU times the GPU's FP16 TFLOPS (a share's container: its own MPS server's activity × the share's thread percentage).",
      labelNames,
      registers,
    });
    this.sm = new Gauge({ name: M.smUtilization, help: 'SM utilisation of the container on the GPU, 0 to 1.', labelNames, registers });
    this.estimated = new Gauge({
      name: M.computeEstimated,
      help: "ESTIMATE for MPS clients no share's daemon lists: the activity of the GPU's unlisted MPS servers times its TFLOPS, split by the clients' caps.",
      labelNames,
      registers,
    });
    this.cap = new Gauge({
      name: M.computeCap,
      help: "The container's compute cap on the GPU: its pod's MPS thread percentage times the GPU's TFLOPS.",
      labelNames,
      registers,
    });
    this.capacity = new Gauge({
      name: M.gpuCapacity,
      help: 'FP16 TFLOPS of the GPU (0 when its model is not in the catalog).',
      labelNames: GPU_LABELS,
      registers,
    });
    this.mpsServers = new Gauge({ name: M.mpsServers, help: 'MPS server processes on the GPU.', labelNames: GPU_LABELS, registers });
    this.unattributed = new Gauge({ name: M.unattributed, help: 'GPU processes that belong to no known pod.', registers });
    this.errors = new Counter({
      name: M.collectErrors,
      help: 'Failed nvidia-smi runs by query.',
      labelNames: ['query'] as const,
      registers,
    });
  }

  private async smi(query: SmiQuery): Promise<string | undefined> {
    try {
      return await runSmi(this.opts.nvidiaSmi, query, this.opts.timeoutMs ?? 10_000);
    } catch {
      this.errors.inc({ query });
      return undefined;
    }
  }

  /** The node's GPUs, from nvidia-smi; rejects when it fails. */
  async inventory(): Promise<SmiGpu[]> {
    const text = await this.smi('gpus');
    if (text === undefined) throw new Error(`${this.opts.nvidiaSmi} --query-gpu failed`);
    return parseGpus(text);
  }

  /**
   * The GPU processes with their pod (by cgroup) and whether pmon lists them as MPS clients; MPS
   * servers left out. Undefined when nvidia-smi failed (nothing can be said then).
   */
  async processes(): Promise<GpuProcess[] | undefined> {
    const [appText, pmonText] = await Promise.all([this.smi('apps'), this.smi('pmon')]);
    if (appText === undefined || pmonText === undefined) return undefined;
    const rows = parsePmon(pmonText);
    const out: GpuProcess[] = [];
    for (const app of parseComputeApps(appText)) {
      const mine = rows.filter((r) => r.pid === app.pid);
      if (mine.some(isMpsServer) || (mine.length === 0 && (await this.isMpsServer(app.pid)))) continue;
      const owner = await podOfPid(this.opts.procRoot, app.pid);
      out.push({
        pid: app.pid,
        gpuUuid: app.gpuUuid,
        usedBytes: app.usedBytes,
        mpsClient: mine.some(isMpsClient),
        ...(owner ? { podUid: owner.podUid } : {}),
      });
    }
    return out;
  }

  /** Collects once; concurrent scrapes share one run. */
  collect(): Promise<void> {
    this.inFlight ??= this.collectOnce().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async collectOnce(): Promise<void> {
    const [gpuText, appText, pmonText] = await Promise.all([this.smi('gpus'), this.smi('apps'), this.smi('pmon')]);
    // Without the GPU list nothing can be labelled; keep the last values rather than report zeros.
    if (gpuText === undefined || appText === undefined) return;
    const gpus = parseGpus(gpuText);
    const byUuid = new Map(gpus.map((g) => [g.uuid, { gpu: g, ...gpuModel(g) }]));
    const byIndex = new Map(gpus.map((g) => [g.index, g.uuid]));
    // pid on a GPU -> its pmon rows (a process may show once per GPU); none at all when pmon failed.
    const pmonOf = new Map<string, SmiPmon[]>();
    for (const p of pmonText === undefined ? [] : parsePmon(pmonText)) {
      const uuid = byIndex.get(p.gpuIndex);
      if (uuid) pmonOf.set(`${uuid}/${p.pid}`, [...(pmonOf.get(`${uuid}/${p.pid}`) ?? []), p]);
    }
    // Sum per container and GPU: a container may run several processes on one GPU.
    const rows = new Map<string, Row>();
    const serverSm = new Map<string, number>(); // `<gpu uuid>/<pid>` -> SM ratio of an MPS server
    const servers = new Map<string, number>();
    let unattributed = 0;
    for (const app of parseComputeApps(appText)) {
      const gpu = byUuid.get(app.gpuUuid);
      const samples = pmonOf.get(`${app.gpuUuid}/${app.pid}`);
      // pmon's command column names the server; /proc/<pid>/comm only where pmon did not list the pid.
      if (samples ? samples.some(isMpsServer) : await this.isMpsServer(app.pid)) {
        servers.set(app.gpuUuid, (servers.get(app.gpuUuid) ?? 0) + 1);
        if (samples)
          serverSm.set(
            `${app.gpuUuid}/${app.pid}`,
            sum(samples, (x) => x.sm),
          );
        continue;
      }
      const owner = await podOfPid(this.opts.procRoot, app.pid);
      const named = owner && this.opts.resolver.resolve(owner.podUid, owner.containerId);
      if (!gpu || !owner || !named) {
        unattributed++;
        continue;
      }
      const labels = {
        namespace: named.namespace,
        pod: named.pod,
        container: named.container ?? owner.containerId ?? '',
        pod_uid: owner.podUid,
        gpu_uuid: app.gpuUuid,
        gpu_model: gpu.model,
      };
      const key = JSON.stringify(labels);
      const row = rows.get(key) ?? {
        labels,
        bytes: 0,
        sm: 0,
        tflops: gpu.tflops,
        measured: pmonText !== undefined,
        mps: false,
        capRatio: named.threadPercentage === undefined ? undefined : named.threadPercentage / 100,
        pids: [],
      };
      row.bytes += app.usedBytes;
      row.pids.push(app.pid);
      row.sm += sum(samples ?? [], (x) => x.sm);
      // pmon shows `-` for an MPS client: its work is on the server's line, so it measured nothing here.
      if (samples?.some(isMpsClient)) [row.mps, row.measured] = [true, false];
      rows.set(key, row);
    }
    // Series of containers that stopped using a GPU disappear (reset, then set what is current).
    for (const g of [this.vram, this.compute, this.sm, this.estimated, this.cap, this.capacity, this.mpsServers]) g.reset();
    for (const { gpu, model, tflops } of byUuid.values()) {
      this.capacity.set({ gpu_uuid: gpu.uuid, gpu_model: model }, tflops);
      this.mpsServers.set({ gpu_uuid: gpu.uuid, gpu_model: model }, servers.get(gpu.uuid) ?? 0);
    }
    const { uses, servers: attributed } = await this.shareUses(rows, serverSm);
    for (const [key, r] of rows) {
      this.vram.set(r.labels, r.bytes);
      if (r.capRatio !== undefined) this.cap.set(r.labels, r.capRatio * r.tflops);
      const use = uses.get(key);
      if (use) [r.mps, r.measured, r.sm] = [false, true, use.sm];
      if (!r.measured) continue;
      const sm = Math.min(r.sm, 1);
      this.sm.set(r.labels, sm);
      this.compute.set(r.labels, use ? use.tflops : sm * r.tflops);
    }
    // The estimate remains for clients of servers no share's daemon listed, from those servers only.
    const unattributedSm = new Map<string, number>();
    for (const [at, sm] of serverSm) {
      const uuid = at.slice(0, at.lastIndexOf('/'));
      if (!attributed.has(at)) unattributedSm.set(uuid, (unattributedSm.get(uuid) ?? 0) + sm);
    }
    for (const [row, estimate] of mpsEstimates([...rows.values()], unattributedSm)) this.estimated.set(row.labels, estimate);
    this.unattributed.set(unattributed);
    this.lastCollectS = Date.now() / 1000;
  }

  /**
   * Compute of the rows that are clients of their own share (the share's daemon lists one of their
   * pids), from the share's own servers; and those servers, as `<gpu uuid>/<pid>`.
   */
  private async shareUses(rows: ReadonlyMap<string, Row>, serverSm: ReadonlyMap<string, number>) {
    const ask = this.opts.members;
    const shares = new Set([...rows.values()].filter((r) => r.capRatio !== undefined).map((r) => r.labels.pod_uid));
    const members = new Map(
      ask ? await Promise.all([...shares].map(async (id) => [id, await ask(id).catch(() => undefined)] as const)) : [],
    );
    const containers: ShareContainer[] = [];
    for (const [key, r] of rows) {
      const m = members.get(r.labels.pod_uid);
      if (m && r.pids.some((pid) => m.clients.some((c) => c.pid === pid)))
        containers.push({ share: r.labels.pod_uid, gpuUuid: r.labels.gpu_uuid, key });
    }
    const byShare = new Map([...rows.values()].map((r) => [r.labels.pod_uid, r]));
    const tflopsOf = new Map([...rows.values()].map((r) => [r.labels.gpu_uuid, r.tflops]));
    const uses = shareCompute({
      containers,
      pmonSm: serverSm,
      members,
      cap: (id) => byShare.get(id)?.capRatio,
      tflops: (uuid) => tflopsOf.get(uuid) ?? 0,
    });
    const ours = new Set([...members.values()].flatMap((m) => m?.servers ?? []));
    const servers = new Set([...serverSm.keys()].filter((at) => ours.has(Number(at.slice(at.lastIndexOf('/') + 1)))));
    return { uses, servers };
  }

  /** /proc/<pid>/comm names the MPS server where pmon did not list it (pmon failed, or no sample). */
  private async isMpsServer(pid: number): Promise<boolean> {
    try {
      return (await readFile(join(this.opts.procRoot, String(pid), 'comm'), 'utf8')).startsWith(MPS_SERVER_COMMAND);
    } catch {
      return false;
    }
  }
}

/** One container on one GPU, summed over its processes. */
interface Row {
  labels: Record<(typeof POD_GPU_LABELS)[number], string>;
  bytes: number;
  /** pmon SM ratio, summed (not capped yet). */
  sm: number;
  /** The GPU's TFLOPS. */
  tflops: number;
  /** pmon sampled it: false for MPS clients and when pmon failed. */
  measured: boolean;
  /** An MPS client. */
  mps: boolean;
  /** Its compute cap as a ratio of the GPU (the pod's MPS thread percentage / 100), when known. */
  capRatio?: number;
  /** Its processes on the GPU. */
  pids: number[];
}

function sum<T>(xs: readonly T[], f: (x: T) => number): number {
  return xs.reduce((a, x) => a + f(x), 0);
}

/**
 * The compute estimate of each MPS client row: its GPU's server activity (SM ratio, at most 1) × the
 * GPU's TFLOPS, split between the GPU's client rows in proportion to their caps (equal shares where
 * a cap is unknown), each at most its cap. Exported for tests.
 */
export function mpsEstimates<R extends Omit<Row, 'pids'>>(rows: readonly R[], serverSm: ReadonlyMap<string, number>): [R, number][] {
  const out: [R, number][] = [];
  const byGpu = new Map<string, R[]>();
  for (const r of rows) if (r.mps) byGpu.set(r.labels.gpu_uuid, [...(byGpu.get(r.labels.gpu_uuid) ?? []), r]);
  for (const [uuid, clients] of byGpu) {
    const active = Math.min(serverSm.get(uuid) ?? 0, 1);
    const weight = (r: R) => r.capRatio ?? 1 / clients.length;
    const total = sum(clients, weight);
    for (const r of clients) {
      const share = total > 0 ? (active * weight(r)) / total : 0;
      out.push([r, Math.min(share, r.capRatio ?? 1) * r.tflops]);
    }
  }
  return out;
}

/**
 * One collection: runs nvidia-smi (GPUs, compute apps, pmon), attributes each pid to a pod through
 * /proc/<pid>/cgroup, names the pod and container, and sets the gauges. Runs on every scrape (a
 * collect hook), so the
 * numbers are as fresh as Prometheus asks and nothing runs when nobody scrapes.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Counter, Gauge, Registry } from 'prom-client';
import { lookupGpuTflops } from '../../model/gpu-catalog';
import { podOfPid } from './cgroup';
import { AGENT_METRICS, GPU_LABELS, POD_GPU_LABELS } from './contract';
import { parseComputeApps, parseGpus, parsePmon, SmiGpu } from './nvidia-smi';

const run = promisify(execFile);

/** Names a pod UID and container id; undefined when the pod is not (yet) known. */
export interface PodResolver {
  resolve(podUid: string, containerId?: string): { namespace: string; pod: string; container?: string } | undefined;
}

export interface CollectorOptions {
  /** Path of nvidia-smi (a fake script in tests). */
  readonly nvidiaSmi: string;
  /** Root of the host's /proc. */
  readonly procRoot: string;
  readonly resolver: PodResolver;
  /** Per-run timeout of nvidia-smi. @default 10000 */
  readonly timeoutMs?: number;
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
  private readonly capacity: Gauge<(typeof GPU_LABELS)[number]>;
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
    const collector = this;
    new Gauge({ name: M.lastCollect, help: 'Unix time of the last collection, seconds.', registers, collect() { this.set(collector.lastCollectS); } });
    this.vram = new Gauge({ name: M.vramUsed, help: 'Device memory used by the container on the GPU, bytes.', labelNames, registers });
    this.compute = new Gauge({ name: M.computeUsed, help: "SM utilisation of the container on the GPU times the GPU's FP16 TFLOPS.", labelNames, registers });
    this.sm = new Gauge({ name: M.smUtilization, help: 'SM utilisation of the container on the GPU, 0 to 1.', labelNames, registers });
    this.capacity = new Gauge({ name: M.gpuCapacity, help: 'FP16 TFLOPS of the GPU (0 when its model is not in the catalog).', labelNames: GPU_LABELS, registers });
    this.unattributed = new Gauge({ name: M.unattributed, help: 'GPU processes that belong to no known pod.', registers });
    this.errors = new Counter({ name: M.collectErrors, help: 'Failed nvidia-smi runs by query.', labelNames: ['query'] as const, registers });
  }

  private async smi(query: 'gpus' | 'apps' | 'pmon', args: string[]): Promise<string | undefined> {
    try {
      const { stdout } = await run(this.opts.nvidiaSmi, args, { timeout: this.opts.timeoutMs ?? 10_000 });
      return stdout;
    } catch {
      this.errors.inc({ query });
      return undefined;
    }
  }

  /** Collects once; concurrent scrapes share one run. */
  collect(): Promise<void> {
    this.inFlight ??= this.collectOnce().finally(() => { this.inFlight = undefined; });
    return this.inFlight;
  }

  private async collectOnce(): Promise<void> {
    const [gpuText, appText, pmonText] = await Promise.all([
      this.smi('gpus', ['--query-gpu=index,uuid,name', '--format=csv,noheader']),
      this.smi('apps', ['--query-compute-apps=pid,used_memory,gpu_uuid', '--format=csv,noheader,nounits']),
      this.smi('pmon', ['pmon', '-c', '1', '-s', 'u']),
    ]);
    // Without the GPU list nothing can be labelled; keep the last values rather than report zeros.
    if (gpuText === undefined || appText === undefined) return;
    const gpus = parseGpus(gpuText);
    const byUuid = new Map(gpus.map((g) => [g.uuid, { gpu: g, ...gpuModel(g) }]));
    const byIndex = new Map(gpus.map((g) => [g.index, g.uuid]));
    const smOf = new Map<string, number>(); // `${uuid}/${pid}` -> 0..1
    for (const p of pmonText === undefined ? [] : parsePmon(pmonText)) {
      const uuid = byIndex.get(p.gpuIndex);
      if (uuid) smOf.set(`${uuid}/${p.pid}`, (smOf.get(`${uuid}/${p.pid}`) ?? 0) + p.sm);
    }
    // Sum per container and GPU: a container may run several processes on one GPU.
    const rows = new Map<string, { labels: Record<(typeof POD_GPU_LABELS)[number], string>; bytes: number; sm: number; tflops: number }>();
    let unattributed = 0;
    const pids = new Set<string>();
    for (const app of parseComputeApps(appText)) {
      pids.add(`${app.gpuUuid}/${app.pid}`);
      const gpu = byUuid.get(app.gpuUuid);
      const owner = await podOfPid(this.opts.procRoot, app.pid);
      const named = owner && this.opts.resolver.resolve(owner.podUid, owner.containerId);
      if (!gpu || !owner || !named) { unattributed++; continue; }
      const labels = {
        namespace: named.namespace, pod: named.pod, container: named.container ?? owner.containerId ?? '',
        pod_uid: owner.podUid, gpu_uuid: app.gpuUuid, gpu_model: gpu.model,
      };
      const key = JSON.stringify(labels);
      const row = rows.get(key) ?? { labels, bytes: 0, sm: 0, tflops: gpu.tflops };
      row.bytes += app.usedBytes;
      row.sm += smOf.get(`${app.gpuUuid}/${app.pid}`) ?? 0;
      rows.set(key, row);
    }
    // Series of containers that stopped using a GPU disappear (reset, then set what is current).
    this.vram.reset(); this.compute.reset(); this.sm.reset(); this.capacity.reset();
    for (const { gpu, model, tflops } of byUuid.values()) this.capacity.set({ gpu_uuid: gpu.uuid, gpu_model: model }, tflops);
    for (const r of rows.values()) {
      const sm = Math.min(r.sm, 1);
      this.vram.set(r.labels, r.bytes);
      this.sm.set(r.labels, sm);
      this.compute.set(r.labels, sm * r.tflops);
    }
    this.unattributed.set(unattributed);
    this.lastCollectS = Date.now() / 1000;
  }

}

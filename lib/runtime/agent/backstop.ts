/**
 * The backstop behind MPS's limits, for tenants that do not cooperate. A daemon's limits bind every
 * client of its servers, per process, but CUDA fails open: a process that points
 * CUDA_MPS_PIPE_DIRECTORY at a folder with no daemon runs without MPS and without limits, and a pod
 * that starts more processes than it has containers gets each one's limit. Each supervision round
 * compares what nvidia-smi reports with the shares and names the processes that breach them.
 */
import type { MpsShare } from './mps/supervisor';

/** One process on a GPU, attributed to its pod (by cgroup) where it belongs to one. */
export interface GpuProcess {
  readonly pid: number;
  readonly gpuUuid: string;
  readonly usedBytes: number;
  /** pmon lists it as an MPS client (type M+C). */
  readonly mpsClient: boolean;
  readonly podUid?: string;
}

export interface Breach {
  readonly pid: number;
  readonly share: MpsShare;
  readonly reason: 'MpsBypassed' | 'VramLimitExceeded';
  readonly message: string;
}

const MIB = 2 ** 20;

/**
 * The processes to stop: those of a share's pod that run outside MPS, and, where a share's clients on
 * one GPU together hold more than its VRAM limit × its containers, the newest clients until the rest
 * fit.
 */
export function breaches(procs: readonly GpuProcess[], shares: readonly MpsShare[]): Breach[] {
  const out: Breach[] = [];
  for (const share of shares) {
    const mine = procs.filter((p) => p.podUid === share.id);
    for (const p of mine.filter((x) => !x.mpsClient)) {
      out.push({
        pid: p.pid,
        share,
        reason: 'MpsBypassed',
        message: `process ${p.pid} of ${share.pod} uses GPU ${p.gpuUuid} outside its MPS daemon (CUDA_MPS_PIPE_DIRECTORY changed?), where no limit binds it; it was stopped`,
      });
    }
    const allowed = share.vramLimitBytes * Math.max(1, share.containers ?? 1);
    for (const uuid of new Set(mine.map((p) => p.gpuUuid))) {
      const clients = mine.filter((p) => p.gpuUuid === uuid && p.mpsClient).sort((a, b) => a.pid - b.pid);
      let total = clients.reduce((n, p) => n + p.usedBytes, 0);
      for (const p of [...clients].reverse()) {
        if (total <= allowed) break;
        out.push({
          pid: p.pid,
          share,
          reason: 'VramLimitExceeded',
          message: `${share.pod} holds ${Math.round(total / MIB)} MiB on GPU ${uuid}, over its limit of ${Math.round(allowed / MIB)} MiB (more processes than containers); its newest process ${p.pid} was ended`,
        });
        total -= p.usedBytes;
      }
    }
  }
  return out;
}

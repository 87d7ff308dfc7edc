/**
 * Per-pod compute under MPS. pmon credits every client's work to its MPS server, and each share has a
 * server of its own, so a share's activity is its own server's: the server pid maps to its share
 * through the share's daemon (its server list), never through a guess over every server on the GPU.
 * pmon's `sm` is the share of time a kernel ran (measured on an H200: a busy 50 % share's server
 * `sm 90`, an idle one's `-`), on at most the share's thread percentage of the SMs, so the share used
 * activity × percentage × the GPU's TFLOPS, at most its cap (percentage × TFLOPS).
 */
import type { ShareMembers } from './members';

/** One container of a share's pod with a process on a GPU. */
export interface ShareContainer {
  /** The share id (the pod UID). */
  readonly share: string;
  readonly gpuUuid: string;
  /** The container's key in the caller's rows. */
  readonly key: string;
}

export interface ShareUse {
  /** Fraction of the GPU the container used, 0..1. */
  readonly sm: number;
  readonly tflops: number;
}

export interface ComputeInputs {
  readonly containers: readonly ShareContainer[];
  /** `<gpu uuid>/<pid>` -> pmon's SM ratio (0..1, 0 for `-`), for every pid pmon listed. */
  readonly pmonSm: ReadonlyMap<string, number>;
  readonly members: ReadonlyMap<string, ShareMembers | undefined>;
  /** A share's cap: its thread percentage as a ratio of the GPU, 0..1. */
  readonly cap: (share: string) => number | undefined;
  /** A GPU's FP16 TFLOPS. */
  readonly tflops: (gpuUuid: string) => number;
}

/**
 * Each container's compute from its share's own servers, split evenly over the pod's containers on
 * that GPU (NVML has no per-client figure). Missing, never 0, where it cannot be known: the daemon
 * did not list its servers, pmon listed none of them on the GPU, or the percentage is unknown.
 */
export function shareCompute(inputs: ComputeInputs): Map<string, ShareUse> {
  const groups = new Map<string, ShareContainer[]>();
  for (const c of inputs.containers) groups.set(`${c.share}/${c.gpuUuid}`, [...(groups.get(`${c.share}/${c.gpuUuid}`) ?? []), c]);
  const out = new Map<string, ShareUse>();
  for (const group of groups.values()) {
    const { share, gpuUuid } = group[0];
    const servers = inputs.members.get(share)?.servers ?? [];
    const samples = servers.flatMap((pid) => inputs.pmonSm.get(`${gpuUuid}/${pid}`) ?? []);
    const cap = inputs.cap(share);
    if (samples.length === 0 || cap === undefined) continue;
    // Activity is at most 1, so the share's use is at most its cap (percentage × TFLOPS).
    const activity = Math.min(
      samples.reduce((a, x) => a + x, 0),
      1,
    );
    const used = activity * cap;
    for (const c of group) out.set(c.key, { sm: used / group.length, tflops: (used * inputs.tflops(gpuUuid)) / group.length });
  }
  return out;
}

/**
 * Which GPU processes of a share's pod bypass its MPS daemon. CUDA fails open: a process that points
 * CUDA_MPS_PIPE_DIRECTORY at a folder with no daemon gets a context of its own with no limit, and a
 * pod can run an MPS daemon of its own, whose server and clients pmon shows with the same types as
 * ours (measured on an H200). So membership comes from the share's own daemon: a process of the pod
 * is in order only while that daemon lists it as one of its servers or one of their clients.
 */
import type { ProcessIdentity } from '../cgroup';
import type { MpsShare } from '../mps/supervisor';
import { MPS_SERVER_COMMAND, SmiApp } from '../nvidia-smi';
import type { ShareMembers } from './members';

/** A process to kill, with the identity it was judged on (the kill re-checks it). */
export interface Bypass {
  readonly pid: number;
  readonly share: MpsShare;
  readonly identity: ProcessIdentity;
  /** `MpsServerOfItsOwn`: an MPS server the share's daemon did not start; `MpsBypassed`: any other process. */
  readonly reason: 'MpsBypassed' | 'MpsServerOfItsOwn';
  readonly message: string;
}

export interface Verdict {
  readonly bypasses: Bypass[];
  /** GPU uuid -> why processes on it could not be judged (their share's daemon did not list its members). */
  readonly unjudged: Map<string, string>;
}

/** Whether the daemon lists `pid` as one of its servers or one of their clients. */
export function isMember(m: ShareMembers, pid: number): boolean {
  return m.servers.includes(pid) || m.clients.some((c) => c.pid === pid);
}

/**
 * Judges every process the per-process query lists (a pid with no query row is never judged) that
 * belongs, by cgroup, to the pod of a share: a member of the share's daemon is in order, anything else
 * bypasses it. A share whose members are unknown (`undefined`: its daemon did not answer) judges none
 * of its processes; their GPUs are reported instead.
 */
export function judge(
  apps: readonly SmiApp[],
  identities: ReadonlyMap<number, ProcessIdentity | undefined>,
  shares: readonly MpsShare[],
  members: ReadonlyMap<string, ShareMembers | undefined>,
): Verdict {
  const byId = new Map(shares.map((s) => [s.id, s]));
  const gpusOf = new Map<number, string[]>();
  for (const a of apps) gpusOf.set(a.pid, [...(gpusOf.get(a.pid) ?? []), a.gpuUuid]);
  const bypasses: Bypass[] = [];
  const unjudged = new Map<string, string>();
  for (const [pid, gpus] of gpusOf) {
    const identity = identities.get(pid);
    const share = identity?.pod && byId.get(identity.pod.podUid);
    if (!identity || !share) continue;
    const m = members.get(share.id);
    if (!m) {
      for (const g of gpus) unjudged.set(g, `the MPS daemon of ${share.pod} did not list its servers and clients`);
      continue;
    }
    if (isMember(m, pid)) continue;
    const server = identity.comm.startsWith(MPS_SERVER_COMMAND);
    const what = server
      ? `is an MPS server its share's daemon did not start (an MPS daemon of the pod's own), whose clients get no limit`
      : `is no client of its share's MPS daemon (CUDA_MPS_PIPE_DIRECTORY pointed elsewhere, or a daemon of its own), so no limit binds it`;
    bypasses.push({
      pid,
      share,
      identity,
      reason: server ? 'MpsServerOfItsOwn' : 'MpsBypassed',
      message: `process ${pid} (${identity.comm}) of ${share.pod} on GPU ${gpus.join(', ')} ${what}; it was killed`,
    });
  }
  return { bypasses, unjudged };
}

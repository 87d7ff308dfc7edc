/**
 * The words a share's refusal is shown in (`kubectl describe pod`, the pod's PodScheduled condition),
 * in one home: the extender writes them per node (extender/node-reasons.ts) and the growth reconciler
 * reads them back from the condition kube-scheduler writes, to tell a pod that waits for GPU room, which
 * a new node gives, from one that waits for something no new node changes (a quota, a bind not
 * confirmed, a request no GPU of the pool can take, a model the pool does not have).
 */

/** Why a pod waits whose previous Binding was sent but not yet confirmed or refused. */
export const BIND_UNCONFIRMED = 'the previous bind of this pod is not confirmed yet';

/** Room a new node brings: each is a reason the extender gives for one node. */
export const ROOM_REASONS = {
  lacking: (what: readonly string[]) => `not enough free ${what.join(' or ')} on any GPU`,
  fewerGpus: (count: number) => `fewer than ${count} GPUs with room for the share`,
  oversold: "TFLOPS limits would exceed the pool's oversell ratio on every GPU",
  cpuOrMemory: 'not enough CPU or memory for the GPU share',
  noGpusOfPool: (pool: string) => `no GPUs of pool ${JSON.stringify(pool)}`,
} as const;

/** A node without the GPU model the share names: the pool's new nodes bring its models, not another. */
export const noGpuOfModel = (models: readonly string[]) => `no ${models.join(' or ')} GPU`;

/** The end of the words of a refusal for a namespace over a GPUResourceQuota (see shared/quota.ts). */
export const quotaWords = (quota: string) => `(GPUResourceQuota ${JSON.stringify(quota)})`;

const ROOM = [
  /not enough free (VRAM|TFLOPS)( or (VRAM|TFLOPS))? on any GPU/,
  /fewer than \d+ GPUs with room for the share/,
  new RegExp(ROOM_REASONS.oversold),
  new RegExp(ROOM_REASONS.cpuOrMemory),
  /no GPUs of pool "/,
  // kube-scheduler's own, when the pool's nodes lack CPU or memory before the extender is asked.
  /Insufficient (cpu|memory)/,
];

const NO_NODE_HELPS = [
  /\(GPUResourceQuota "/,
  new RegExp(BIND_UNCONFIRMED),
  /the most one GPU may be oversold to/,
  /\bno \S+( or \S+)* GPU(?=[,.;]|$)/,
];

/**
 * Whether kube-scheduler's message for an unschedulable pod ("0/4 nodes are available: 2 not enough
 * free VRAM on any GPU, 2 node(s) didn't match ...") says it waits for GPU room that a new node of its
 * pool would give: some node lacks room and none names a reason no node fixes. Other nodes' reasons
 * (not of the pool, tainted) do not count either way: the pool's own nodes are full.
 */
export function waitsForRoom(message: string | undefined): boolean {
  if (!message) return false;
  return ROOM.some((r) => r.test(message)) && !NO_NODE_HELPS.some((r) => r.test(message));
}

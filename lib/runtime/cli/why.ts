/**
 * `kubectl tf why <pod>`: for a GPU pod still Pending, the extender's reasons per node in the words
 * `kubectl describe` shows, its namespace's quota, and what would let it fit: the largest request
 * that fits now, and the fewest shares whose release would make room on one node. For a pod that
 * holds a share, its allocation. Read from the extender's own placement state, built from the objects.
 */
import type { Allocation, AllocationRequest, Allocator } from '../../allocator';
import { formatBytes } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import type { K8sObject } from '../kube/cluster';
import { nodeReason } from '../extender/node-reasons';
import { boundNode, isTerminal } from '../shared/pod-lifecycle';
import { podRequests } from '../shared/pod-requests';
import { nodePools } from '../shared/topology';
import { allocationOf } from '../shared/pod-share/record';
import { allocationRequest, isOptedIn, shareOf } from '../shared/share';
import { ClusterObjects, fixedCaches, placementStateOf } from './cluster-objects';
import { hasDraClaim } from '../shared/dra/pod-claim';
import { draGpus, draWhyLines } from './why-dra';

/** A share released on a node, to make room. */
export interface HeldShare {
  readonly namespace: string;
  readonly pod: string;
  readonly tflopsRequest: number;
  readonly vramRequest: number;
}

export interface WhyAnswer {
  readonly namespace: string;
  readonly pod: string;
  /** `Placed` (holds a share), `Pending`, `NotGpu` (takes no share), or `Finished`. */
  readonly state: 'Placed' | 'Pending' | 'NotGpu' | 'Finished';
  /** One line per fact, in the order to print them. */
  readonly lines: readonly string[];
  readonly allocation?: Allocation;
  /** Pending: nodes of the pool per reason, e.g. `{"not enough free VRAM on any GPU": 3}`. */
  readonly nodeReasons?: Readonly<Record<string, number>>;
  /** Pending: why the namespace's quota refuses it, if it does. */
  readonly overQuota?: string;
  /** Pending: the largest fraction of the request (TFLOPS and VRAM together) that fits now, and where. */
  readonly fitsAt?: { readonly fraction: number; readonly tflopsRequest: number; readonly vramRequest: number; readonly node: string };
  /** Pending: the fewest shares whose release would let the request fit on one node. */
  readonly release?: { readonly node: string; readonly shares: readonly HeldShare[] };
}

const MIB = 2 ** 20;
const tflops = (n: number) => `${formatTflops(n)} TFLOPS`;
const perGpu = (r: { gpuCount: number; tflopsRequest: number; vramRequest: number }) =>
  `${r.gpuCount} GPU${r.gpuCount === 1 ? '' : 's'} x (${tflops(r.tflopsRequest)}, ${formatBytes(r.vramRequest)} VRAM)`;

/** Scales a request's amounts (limits with them, never below the request); VRAM in whole MiB, as users write it. */
function scaled(r: AllocationRequest, f: number): AllocationRequest {
  const t = r.tflopsRequest * f;
  const v = Math.floor((r.vramRequest * f) / MIB) * MIB;
  return {
    ...r,
    tflopsRequest: t,
    vramRequest: v,
    tflopsLimit: Math.max(t, (r.tflopsLimit ?? r.tflopsRequest) * f),
    vramLimit: Math.max(v, Math.floor((r.vramLimit ?? r.vramRequest) * f)),
  };
}

/** The largest whole percent of the request that fits on one of `nodes` now (binary search), if any does. */
function largestFit(allocator: Allocator, r: AllocationRequest, nodes: readonly string[]): WhyAnswer['fitsAt'] {
  let [lo, hi] = [0, 100];
  let node: string | undefined;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    const best = allocator.best(scaled(r, mid / 100), nodes);
    if (best) [lo, node] = [mid, best];
    else hi = mid;
  }
  if (!node) return undefined;
  const s = scaled(r, lo / 100);
  return { fraction: lo / 100, tflopsRequest: s.tflopsRequest, vramRequest: s.vramRequest, node };
}

/** The node where releasing the fewest shares (largest first) lets the request fit; the allocator is left as found. */
function fewestToRelease(
  allocator: Allocator,
  r: AllocationRequest,
  nodes: readonly string[],
  name: (id: string) => { namespace: string; pod: string },
): WhyAnswer['release'] {
  let best: { node: string; held: Allocation[] } | undefined;
  for (const node of nodes) {
    const usage = allocator.nodeUsage(node);
    if (!usage) continue;
    const ids = [...new Set(usage.gpus.flatMap((g) => g.allocations))];
    const held = ids
      .map((id) => allocator.allocation(id))
      .filter((a): a is Allocation => !!a && a.gpuIds.length > 0)
      .sort((a, b) => b.tflopsRequest * b.gpuIds.length - a.tflopsRequest * a.gpuIds.length);
    const released: Allocation[] = [];
    for (const a of held) {
      if (best && released.length >= best.held.length) break;
      allocator.release(a.id);
      released.push(a);
      if (allocator.choose(r, [node]).best) {
        best = { node, held: [...released] };
        break;
      }
    }
    allocator.restore(released);
  }
  return (
    best && {
      node: best.node,
      shares: best.held.map((a) => ({ ...name(a.id), tflopsRequest: a.tflopsRequest, vramRequest: a.vramRequest })),
    }
  );
}

/** Why `pod` (read from the cluster, whole) waits, or where it runs. */
export function whyPod(pod: K8sObject, objects: ClusterObjects): WhyAnswer {
  const namespace = pod.metadata.namespace ?? '';
  const base = { namespace, pod: pod.metadata.name ?? '' };
  const who = `Pod ${namespace}/${base.pod}`;
  if (isTerminal(pod)) return { ...base, state: 'Finished', lines: [`${who} has finished: it holds no GPU share.`] };
  const held = allocationOf(pod);
  if (held) {
    return {
      ...base,
      state: 'Placed',
      allocation: held,
      lines: [
        `${who} holds a GPU share on node ${held.node} (pool ${held.pool}): ${perGpu({ ...held, gpuCount: held.gpuIds.length })}, limits ${tflops(held.tflopsLimit)} and ${formatBytes(held.vramLimit)} VRAM.`,
        `GPUs: ${held.gpuIds.join(', ')}.`,
      ],
    };
  }
  const share = shareOf(pod);
  if (!share) {
    const why = !isOptedIn(pod)
      ? 'it is not labelled tensor-fusion.ai/enabled: "true"'
      : 'the admission webhook has not recorded a share on it (was it created before the controller ran, or with the webhook bypassed?)';
    return { ...base, state: 'NotGpu', lines: [`${who} takes no GPU share: ${why}.`] };
  }
  const lines = [
    `${who} is ${boundNode(pod) ? 'bound but has no share recorded yet' : 'Pending'}: it asks ${perGpu(share)} in pool ${share.pool}.`,
  ];
  const scheduled = (
    (pod.status as { conditions?: { type: string; status: string; message?: string }[] } | undefined)?.conditions ?? []
  ).find((c) => c.type === 'PodScheduled' && c.status === 'False');
  if (scheduled?.message) lines.push(`kube-scheduler: ${scheduled.message}`);

  const caches = fixedCaches(objects);
  const state = placementStateOf(caches);
  const allocator = state.current();
  const request = allocationRequest(pod.metadata.uid ?? 'why', share, podRequests(pod));
  const nodes = [...nodePools(objects.gpuNodes)].filter(([, pool]) => pool === share.pool).map(([node]) => node);
  const overQuota = state.quotaRefusal(namespace, request);
  if (overQuota) lines.push(`Quota: ${overQuota}.`);
  if (hasDraClaim(pod)) {
    // Its GPU is kube-scheduler's choice, from the ResourceSlices: the extender's allocator knows nothing of it.
    const dra = draWhyLines(share, draGpus(objects.slices ?? [], objects.claims ?? [], new Set(nodes), share.pool));
    return {
      ...base,
      state: 'Pending',
      lines: [...lines, ...dra.lines],
      nodeReasons: dra.nodeReasons,
      ...(overQuota ? { overQuota } : {}),
    };
  }
  const choice = allocator.choose(request, nodes);
  const nodeReasons: Record<string, number> = {};
  for (const reasons of choice.unfit.values()) {
    const text = nodeReason(reasons, share.gpuCount);
    nodeReasons[text] = (nodeReasons[text] ?? 0) + 1;
  }
  if (nodes.length === 0) lines.push(`Pool ${share.pool} has no GPU node.`);
  else if (choice.best)
    lines.push(
      `Node ${choice.best} has room for it now${overQuota ? ', but the quota refuses it' : ': kube-scheduler should place it at its next try'}.`,
    );
  else
    lines.push(
      `No node of pool ${share.pool} can take it (${nodes.length} node${nodes.length === 1 ? '' : 's'}):`,
      ...Object.entries(nodeReasons).map(([text, n]) => `  ${n} node${n === 1 ? '' : 's'}: ${text}`),
    );

  const names = new Map(
    objects.pods.map((p) => [p.metadata.uid ?? '', { namespace: p.metadata.namespace ?? '', pod: p.metadata.name ?? '' }]),
  );
  const fitsAt = choice.best ? undefined : largestFit(allocator, request, nodes);
  const release = choice.best ? undefined : fewestToRelease(allocator, request, nodes, (id) => names.get(id) ?? { namespace: '', pod: id });
  if (fitsAt) {
    lines.push(
      `It would fit now with ${Math.round(fitsAt.fraction * 100)}% of its request: tflops-request ${formatTflops(fitsAt.tflopsRequest)} and vram-request ${formatBytes(fitsAt.vramRequest)} (node ${fitsAt.node}).`,
    );
  }
  if (release) {
    lines.push(
      `Or on node ${release.node} once ${release.shares.length === 1 ? 'this share is' : `these ${release.shares.length} shares are`} released: ${release.shares.map((s) => `${s.namespace}/${s.pod} (${tflops(s.tflopsRequest)}, ${formatBytes(s.vramRequest)})`).join(', ')}.`,
    );
  }
  if (!choice.best && !fitsAt && !release)
    lines.push('No smaller request and no release of shares on one node would let it fit: the pool needs GPUs.');
  return {
    ...base,
    state: 'Pending',
    lines,
    nodeReasons,
    ...(overQuota ? { overQuota } : {}),
    ...(fitsAt ? { fitsAt } : {}),
    ...(release ? { release } : {}),
  };
}

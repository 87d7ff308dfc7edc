/**
 * `kubectl tf why` for a Pending pod of a DRA pool. kube-scheduler says only "cannot allocate all
 * claims", naming no capacity, so the answer is worked out here as its allocator would: each GPU of
 * the pool's ResourceSlices, less what the allocated claims consume on it, against the pod's request
 * per GPU rounded up by the GPU's request policy, for as many distinct GPUs as it asks.
 */
import { DRA_ATTRIBUTES, DRA_CAPACITY, DRA_DRIVER } from '../../model/dra';
import { gpuModelMatches } from '../../model/gpu-catalog';
import { formatBytes, parseQuantity } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import type { K8sObject } from '../kube/cluster';
import type { ShareRequest } from '../shared/share';
import { usageFromClaims } from '../shared/dra/claim-results';
import { deviceIndex } from '../shared/dra/resource-slice';
import { gpuName } from '../../model/gpu-object';

/** The parts of a ResourceSlice's resource.k8s.io/v1 fields read here (a claim's: shared/dra/claim-results.ts). */
interface Capacity {
  value?: string;
  requestPolicy?: { default?: string; validRange?: { min?: string; step?: string } };
}
interface SliceDevice {
  name: string;
  attributes?: Record<string, { string?: string; int?: number } | undefined>;
  capacity?: Record<string, Capacity | undefined>;
}
interface SliceSpec {
  driver?: string;
  nodeName?: string;
  pool?: { name?: string };
  devices?: SliceDevice[];
}

/** One GPU as published, with what is left of it. */
export interface DraGpu {
  readonly node: string;
  readonly device: string;
  readonly model?: string;
  readonly index?: number;
  readonly freeTflops: number;
  readonly freeVram: number;
  readonly tflops: number;
  readonly vram: number;
  /** The device's capacity entries, with their request policies. */
  readonly capacity?: SliceDevice['capacity'];
}

/** What a capacity request takes of a device: rounded up to `min + n*step` of its request policy; its default when not asked. */
function consumed(asked: number, capacity: Capacity | undefined): number {
  const policy = capacity?.requestPolicy;
  const range = policy?.validRange;
  const min = parseQuantity(range?.min ?? 0) ?? 0;
  const step = parseQuantity(range?.step ?? 0) ?? 0;
  if (asked <= 0) return parseQuantity(policy?.default ?? capacity?.value ?? 0) ?? 0;
  if (asked <= min) return min;
  return step > 0 ? min + Math.ceil((asked - min) / step) * step : asked;
}

/** Our GPUs on `nodes` or published with the pool attribute `pool`, less what allocated claims consume on each (shared/dra/claim-results.ts). */
export function draGpus(slices: readonly K8sObject[], claims: readonly K8sObject[], nodes: ReadonlySet<string>, pool: string): DraGpu[] {
  const used = usageFromClaims(claims);
  const gpus: DraGpu[] = [];
  for (const s of slices) {
    const spec = s.spec as SliceSpec | undefined;
    if (spec?.driver !== DRA_DRIVER || spec.nodeName === undefined) continue;
    for (const d of spec.devices ?? []) {
      if (!nodes.has(spec.nodeName) && d.attributes?.[DRA_ATTRIBUTES.pool]?.string !== pool) continue;
      const tflops = parseQuantity(d.capacity?.[DRA_CAPACITY.tflops]?.value ?? 0) ?? 0;
      const vram = parseQuantity(d.capacity?.[DRA_CAPACITY.vram]?.value ?? 0) ?? 0;
      const index = deviceIndex(d.name);
      const u = (spec.pool?.name && index !== undefined && used.get(gpuName(spec.pool.name, index))) || { tflops: 0, vram: 0 };
      gpus.push({
        node: spec.nodeName,
        device: d.name,
        model: d.attributes?.[DRA_ATTRIBUTES.model]?.string,
        index: d.attributes?.[DRA_ATTRIBUTES.index]?.int,
        tflops,
        vram,
        freeTflops: tflops - u.tflops,
        freeVram: vram - u.vram,
        capacity: d.capacity,
      });
    }
  }
  return gpus;
}

/** Why one GPU cannot take one GPU's part of the share, or undefined when it can. */
function gpuShort(g: DraGpu, share: ShareRequest): string | undefined {
  if (share.gpuModel !== undefined && !(g.model !== undefined && gpuModelMatches(share.gpuModel, g.model)))
    return `not a ${share.gpuModel}`;
  if (share.gpuIndices !== undefined && !(g.index !== undefined && share.gpuIndices.includes(g.index)))
    return 'not one of the asked indices';
  const vram = consumed(share.vramRequest, g.capacity?.[DRA_CAPACITY.vram]);
  const tflops = consumed(share.tflopsRequest, g.capacity?.[DRA_CAPACITY.tflops]);
  if (vram > g.freeVram) return 'not enough free VRAM';
  if (tflops > g.freeTflops) return 'not enough free TFLOPS';
  return undefined;
}

/** The lines explaining where the pod's claim could go, by node. */
export function draWhyLines(share: ShareRequest, gpus: readonly DraGpu[]): { lines: string[]; nodeReasons: Record<string, number> } {
  const byNode = new Map<string, DraGpu[]>();
  for (const g of gpus) byNode.set(g.node, [...(byNode.get(g.node) ?? []), g]);
  if (byNode.size === 0)
    return {
      lines: [`Pool ${share.pool} has no node publishing a ResourceSlice of ${DRA_DRIVER}: the node agent publishes one per node.`],
      nodeReasons: {},
    };
  const nodeReasons: Record<string, number> = {};
  const fits: string[] = [];
  for (const [node, list] of byNode) {
    const shorts = list.map((g) => gpuShort(g, share));
    const room = shorts.filter((s) => s === undefined).length;
    if (room >= share.gpuCount) {
      fits.push(node);
      continue;
    }
    const counts = new Map<string, number>();
    for (const s of shorts) if (s) counts.set(s, (counts.get(s) ?? 0) + 1);
    // One reason for every GPU short reads as such; several are counted, most common first.
    const why =
      counts.size === 0
        ? 'too few GPUs'
        : counts.size === 1
          ? [...counts.keys()][0]
          : [...counts]
              .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
              .map(([r, n]) => `${r} (${n} GPU${n === 1 ? '' : 's'})`)
              .join(', ');
    const text =
      share.gpuCount > 1
        ? `${room} of ${list.length} GPUs have room, ${share.gpuCount} asked (the others: ${why})`
        : counts.size > 1
          ? `no GPU has room: ${why}`
          : `${why} on any GPU`;
    nodeReasons[text] = (nodeReasons[text] ?? 0) + 1;
  }
  const largest = gpus.reduce((a, g) => (g.freeVram > a.freeVram ? g : a), gpus[0]);
  const lines =
    fits.length > 0
      ? [`Node ${fits[0]} has room for its claim now: kube-scheduler should allocate it at its next try.`]
      : [
          `No node of pool ${share.pool} can allocate its claim (${byNode.size} node${byNode.size === 1 ? '' : 's'}), counting the GPUs' ResourceSlices less the allocated claims:`,
          ...Object.entries(nodeReasons).map(([text, n]) => `  ${n} node${n === 1 ? '' : 's'}: ${text}`),
          `The most free VRAM on one GPU is ${formatBytes(largest.freeVram)} (${largest.node}/${largest.device}, ${formatTflops(largest.freeTflops)} TFLOPS free).`,
        ];
  return { lines, nodeReasons };
}

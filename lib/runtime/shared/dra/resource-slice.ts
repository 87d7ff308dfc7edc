/**
 * The ResourceSlice (resource.k8s.io/v1) a node agent publishes for a node of a DRA pool: one device
 * per GPU, shared by many claims (`allowMultipleAllocations`), each claim consuming TFLOPS and VRAM of it.
 * Pure, so that the agent and the benches (which publish slices on KWOK nodes) publish the same thing.
 */
import type { GPUPool } from '../../../api';
import { DRA_API_VERSION, DRA_ATTRIBUTES, DRA_CAPACITY, DRA_DRIVER, DRA_NOT_READY_TAINT, DRA_STEP } from '../../../model/dra';
import { formatBytes, parseQuantity } from '../../../k8s/quantity';
import { boundedName } from '../../../k8s/names';
import { formatTflops } from '../../../model/share-quantity';
import { oversellRatio } from '../capacity';

/** One GPU of the node, as the agent sees it. */
export interface SliceGpu {
  uuid: string;
  /** Short model name (lib/model/gpu-catalog.ts). */
  model: string;
  /** The driver's device index. */
  index: number;
  /** The driver's device minor (`/dev/nvidia<minor>`); left out where unknown. */
  minor?: number;
  /** Physical FP16 TFLOPS (0 for a model the catalog does not know). */
  tflops: number;
  /** VRAM bytes. */
  vram: number;
  /** Why the GPU takes no new claim (its `IsolationReady` reason, or its health); unset when it does. */
  notReady?: string;
}

/** What {@link resourceSlice} publishes. */
export interface ResourceSliceInput {
  nodeName: string;
  /** The node's pool: its name and its TFLOPS oversell ratio. */
  pool: Pick<GPUPool, 'metadata' | 'spec'>;
  gpus: SliceGpu[];
  /** The slice pool's generation: raised on every change of the devices, so the scheduler drops older slices. */
  generation?: number;
  /**
   * The device order, as GPU indices. kube-scheduler gives a claim the first device that fits, in the
   * slice's order, so the order steers placement. GPUs left out follow in index order.
   */
  order?: number[];
}

/** A quantity capacity with its request policy. */
export interface SliceCapacity {
  value: string;
  requestPolicy: { default: string; validRange: { min: string; step: string } };
}

/** A device of the slice. */
export interface SliceDevice {
  name: string;
  allowMultipleAllocations: true;
  attributes: Record<string, { string: string } | { int: number }>;
  capacity: Record<string, SliceCapacity>;
  taints?: Array<{ key: string; value: string; effect: 'NoSchedule' }>;
}

/** The published object. */
export interface ResourceSlice {
  apiVersion: typeof DRA_API_VERSION;
  kind: 'ResourceSlice';
  metadata: { name: string; ownerReferences?: NodeOwner[] };
  spec: {
    driver: string;
    nodeName: string;
    pool: { name: string; generation: number; resourceSliceCount: 1 };
    devices: SliceDevice[];
  };
}

/** A Node as the controlling owner of its slice. */
export interface NodeOwner {
  apiVersion: 'v1';
  kind: 'Node';
  name: string;
  uid: string;
  controller: true;
}

/**
 * `slice` owned by its node: the garbage collector deletes it with the node, so a node an autoscaler
 * removes leaves no slice behind (the agent, a DaemonSet pod, is gone by then and cannot).
 */
export function ownedByNode(slice: ResourceSlice, nodeUid: string): ResourceSlice {
  const owner: NodeOwner = { apiVersion: 'v1', kind: 'Node', name: slice.spec.nodeName, uid: nodeUid, controller: true };
  return { ...slice, metadata: { ...slice.metadata, ownerReferences: [owner] } };
}

/** The name of a node's slice: `<node>-gpu.tensor-fusion.ai`, a node name too long for that cut short and hashed. */
export function resourceSliceName(nodeName: string): string {
  return boundedName(nodeName, `-${DRA_DRIVER}`);
}

/** The device name of the GPU with this index. */
export function deviceName(index: number): string {
  return `gpu-${index}`;
}

/** The GPU index of a device {@link deviceName} named, or undefined for any other name. */
export function deviceIndex(device: string): number | undefined {
  const m = /^gpu-(\d+)$/.exec(device);
  return m ? Number(m[1]) : undefined;
}

/** Orders the GPUs by `order` (indices), then the rest by index; an index that names no GPU is an error. */
function ordered(nodeName: string, gpus: SliceGpu[], order: number[]): SliceGpu[] {
  const byIndex = new Map(gpus.map((g) => [g.index, g]));
  order.forEach((index, i) => {
    if (!byIndex.has(index)) {
      const known = [...byIndex.keys()].sort((a, b) => a - b).join(', ');
      throw new Error(`order[${i}]: ${index} is not a GPU index of node ${nodeName} (it has ${known || 'none'})`);
    }
  });
  const named = new Set(order);
  const rest = gpus.filter((g) => !named.has(g.index)).sort((a, b) => a.index - b.index);
  return [...new Set(order)].map((index) => byIndex.get(index)!).concat(rest);
}

/**
 * A capacity whose request policy rounds a claim up to `step` and, for a claim that names none of this
 * capacity, consumes all of it: a claim made without our webhook takes a whole GPU rather than a
 * sliver the share's limits would not match.
 */
function capacity(value: string, step: string): SliceCapacity {
  return { value, requestPolicy: { default: value, validRange: { min: step, step } } };
}

/** One GPU as a device: TFLOPS after the pool's oversell ratio (as lib/runtime/shared/capacity.ts counts it), VRAM as is. */
function device(gpu: SliceGpu, pool: ResourceSliceInput['pool'], ratio: number): SliceDevice {
  const attributes: SliceDevice['attributes'] = {
    [DRA_ATTRIBUTES.uuid]: { string: gpu.uuid },
    [DRA_ATTRIBUTES.model]: { string: gpu.model },
    [DRA_ATTRIBUTES.index]: { int: gpu.index },
    ...(gpu.minor === undefined ? {} : { [DRA_ATTRIBUTES.minor]: { int: gpu.minor } }),
    [DRA_ATTRIBUTES.pool]: { string: pool.metadata.name },
  };
  return {
    name: deviceName(gpu.index),
    allowMultipleAllocations: true,
    attributes,
    capacity: {
      [DRA_CAPACITY.tflops]: capacity(formatTflops((gpu.tflops * ratio) / 100), DRA_STEP.tflops),
      [DRA_CAPACITY.vram]: capacity(formatBytes(gpu.vram), DRA_STEP.vram),
    },
    // NoSchedule: the GPU takes no new claim, its shares keep running, and it stays listed with its capacity.
    ...(gpu.notReady ? { taints: [{ key: DRA_NOT_READY_TAINT, value: gpu.notReady, effect: 'NoSchedule' as const }] } : {}),
  };
}

/** The node's ResourceSlice: one shareable device `gpu-<index>` per GPU, in `order`. */
export function resourceSlice(input: ResourceSliceInput): ResourceSlice {
  const ratio = oversellRatio(input.pool as GPUPool);
  return {
    apiVersion: DRA_API_VERSION,
    kind: 'ResourceSlice',
    metadata: { name: resourceSliceName(input.nodeName) },
    spec: {
      driver: DRA_DRIVER,
      nodeName: input.nodeName,
      pool: { name: input.nodeName, generation: input.generation ?? 1, resourceSliceCount: 1 },
      devices: ordered(input.nodeName, input.gpus, input.order ?? []).map((g) => device(g, input.pool, ratio)),
    },
  };
}

/** What of a device the agent publishes, in a form the API server's echo does not change. */
function deviceFacts(d: Partial<SliceDevice>): string {
  const q = (v: string | undefined) => (v === undefined ? null : (parseQuantity(v) ?? v));
  const sorted = <T>(o: Record<string, T> | undefined) => Object.entries(o ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([
    d.name,
    d.allowMultipleAllocations === true,
    sorted(d.attributes).map(([k, v]) => [k, sorted(v as Record<string, unknown>)]),
    sorted(d.capacity).map(([k, c]) => [
      k,
      q(c.value),
      q(c.requestPolicy?.default),
      q(c.requestPolicy?.validRange?.min),
      q(c.requestPolicy?.validRange?.step),
    ]),
    (d.taints ?? []).map((t) => [t.key, t.value ?? '', t.effect]),
  ]);
}

/**
 * Whether a slice's devices as read back say what `published` says, in the same order. The API server
 * echoes a slice in its own form (map keys sorted, quantities canonical, a taint's `timeAdded` set),
 * so comparing the text would find a change at every read-back and publish again each time.
 */
export function sameDevices(published: readonly SliceDevice[], readBack: readonly Partial<SliceDevice>[]): boolean {
  return published.length === readBack.length && published.every((d, i) => deviceFacts(d) === deviceFacts(readBack[i]));
}

/**
 * The environment variables the webhook injects into each inject-container. Documented in the README
 * section of the webhook; names are fixed API for workloads, so they live here once.
 *
 * The share's own values are known at admission and injected as plain values. The values that depend
 * on the placement (devices, MPS limits, allocation id) are only known when the scheduler extender
 * binds the pod, so they are read through the downward API from the annotations the Binding writes;
 * the kubelet resolves them when the containers start, which is after the bind.
 */
import { PLACEMENT_ANNOTATIONS } from '../../../model/metadata-keys';
import type { IsolationMode, QosLevel } from '../../../model/rules';

/** Variables set in every inject-container of a GPU pod. */
export const TF_ENV = {
  /** GPUPool the share comes from. */
  pool: 'TENSOR_FUSION_POOL',
  qos: 'TENSOR_FUSION_QOS',
  /** Per-GPU TFLOPS request and limit, decimal. */
  tflopsRequest: 'TENSOR_FUSION_TFLOPS_REQUEST',
  tflopsLimit: 'TENSOR_FUSION_TFLOPS_LIMIT',
  /** Per-GPU VRAM request and limit, in bytes. */
  vramRequest: 'TENSOR_FUSION_VRAM_REQUEST',
  vramLimit: 'TENSOR_FUSION_VRAM_LIMIT',
  gpuCount: 'TENSOR_FUSION_GPU_COUNT',
  /** TensorFusionWorkload the pod belongs to (empty when none). */
  workload: 'TENSOR_FUSION_WORKLOAD',
  /** Id of the allocation (the pod UID, written at bind); local mode only. */
  allocation: 'TENSOR_FUSION_ALLOCATION_ID',
  /** `local` or `remote`. */
  mode: 'TENSOR_FUSION_MODE',
  /** Remote mode: where a client library finds its workers. */
  connectionName: 'TENSOR_FUSION_CONNECTION_NAME',
  connectionNamespace: 'TENSOR_FUSION_CONNECTION_NAMESPACE',
  workerSelector: 'TENSOR_FUSION_WORKER_SELECTOR',
} as const;

/** NVIDIA variables: device visibility and the MPS limits derived from the share's limits. */
export const NVIDIA_ENV = {
  visibleDevices: 'NVIDIA_VISIBLE_DEVICES',
  mpsMemLimit: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT',
  mpsThreads: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE',
} as const;

/**
 * Variables the node agent's device plugin gives a `hard` pool's container (its devices and its MPS
 * daemon, pipe folder and limits). The kubelet puts a spec entry of the same name after the plugin's,
 * so the container would read the user's (`NVIDIA_VISIBLE_DEVICES=all`); the webhook removes them.
 * `NVIDIA_DRIVER_CAPABILITIES` is not one: it picks driver libraries, not devices.
 */
export function isNodeGivenEnv(name: string): boolean {
  return name === NVIDIA_ENV.visibleDevices || name.startsWith('CUDA_MPS_');
}

/** A plain variable, or one the kubelet fills from a pod field (here: an annotation). */
export type EnvVar = { name: string; value: string } | { name: string; valueFrom: { fieldRef: { fieldPath: string } } };

/** Placement-dependent variables and the annotation each one reads (written at bind). */
export const PLACEMENT_ENV: ReadonlyArray<readonly [name: string, annotation: string]> = [
  [TF_ENV.allocation, PLACEMENT_ANNOTATIONS.allocationId],
  [NVIDIA_ENV.visibleDevices, PLACEMENT_ANNOTATIONS.visibleDevices],
  [NVIDIA_ENV.mpsMemLimit, PLACEMENT_ANNOTATIONS.mpsMemoryLimit],
  [NVIDIA_ENV.mpsThreads, PLACEMENT_ANNOTATIONS.mpsThreadPercentage],
];

/** A variable read from one pod annotation through the downward API. */
export function annotationRef(name: string, annotation: string): EnvVar {
  return { name, valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${annotation}']` } } };
}

export interface ShareSettings {
  readonly pool: string;
  readonly qos: QosLevel;
  readonly tflopsRequest: number;
  readonly tflopsLimit: number;
  readonly vramRequest: number;
  readonly vramLimit: number;
  readonly gpuCount: number;
}

const MIB = 2 ** 20;

function decimal(n: number): string {
  return `${Number(n.toPrecision(12))}`;
}

/**
 * `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`, written at bind into the annotation the variable reads: the VRAM
 * limit for each visible device, numbered as the pod sees them (0..n-1 after NVIDIA_VISIBLE_DEVICES),
 * in whole MiB rounded down (at least 1).
 * @example mpsMemoryLimit(2, 4 * 2 ** 30) // '0=4096M,1=4096M'
 */
export function mpsMemoryLimit(devices: number, vramLimitBytes: number): string {
  const mib = Math.max(1, Math.floor(vramLimitBytes / MIB));
  return Array.from({ length: devices }, (_, i) => `${i}=${mib}M`).join(',');
}

/**
 * `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`, written at bind: the TFLOPS limit as a share of the smallest
 * allocated GPU's TFLOPS, rounded up to a whole percent, between 1 and 100.
 * @example mpsThreadPercentage(20, 312) // '7'
 */
export function mpsThreadPercentage(tflopsLimit: number, gpuTflops: number): string {
  if (!(gpuTflops > 0)) return '100';
  // Rounded at 1e-9 first so that 31.2/312 is 10, not 11.
  const pct = Math.ceil(Number(((tflopsLimit / gpuTflops) * 100).toPrecision(9)));
  return String(Math.min(100, Math.max(1, pct)));
}

/** The shared TENSOR_FUSION_* variables of a share, local or remote, of a pod of `workload`. */
export function shareEnv(s: ShareSettings, mode: 'local' | 'remote', workload = ''): EnvVar[] {
  return [
    { name: TF_ENV.mode, value: mode },
    { name: TF_ENV.pool, value: s.pool },
    { name: TF_ENV.qos, value: s.qos },
    { name: TF_ENV.tflopsRequest, value: decimal(s.tflopsRequest) },
    { name: TF_ENV.tflopsLimit, value: decimal(s.tflopsLimit) },
    { name: TF_ENV.vramRequest, value: String(Math.ceil(s.vramRequest)) },
    { name: TF_ENV.vramLimit, value: String(Math.ceil(s.vramLimit)) },
    { name: TF_ENV.gpuCount, value: String(s.gpuCount) },
    { name: TF_ENV.workload, value: workload },
  ];
}

/**
 * Local mode: the share variables, then the placement-dependent ones read from the bind's
 * annotations. Under `hard` isolation the device plugin sets the device and MPS variables when the
 * kubelet creates the container, so only the allocation id comes from here (one source per variable:
 * a name set twice is read differently by different programs).
 */
export function localGpuEnv(s: ShareSettings, workload?: string, isolation: IsolationMode = 'shared'): EnvVar[] {
  const placement = isolation === 'hard' ? PLACEMENT_ENV.filter(([name]) => name === TF_ENV.allocation) : PLACEMENT_ENV;
  return [...shareEnv(s, 'local', workload), ...placement.map(([name, annotation]) => annotationRef(name, annotation))];
}

/** Remote mode: the share variables plus where the workload's workers are. */
export function remoteClientEnv(s: ShareSettings, workload: string, namespace: string, workerSelector: string): EnvVar[] {
  return [
    ...shareEnv(s, 'remote', workload),
    { name: TF_ENV.connectionName, value: workload },
    { name: TF_ENV.connectionNamespace, value: namespace },
    { name: TF_ENV.workerSelector, value: workerSelector },
  ];
}

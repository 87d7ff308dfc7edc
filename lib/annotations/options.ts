/**
 * The typed face of the `tensor-fusion.ai/*` pod annotations: what users write (options) and what the
 * decoder returns (settings, with quantities parsed).
 */
import type { QosLevel } from '../model/rules';

/**
 * Makes a pod template a TensorFusion GPU workload. Each field maps to one `tensor-fusion.ai/*` pod
 * annotation; leaving a field out leaves the annotation out, so the referenced WorkloadProfile, the
 * GPUPool or the controller decides. The Pulumi and cdk8s components take exactly these props.
 */
export interface GpuWorkloadOptions {
  /**
   * GPUPool to take GPUs from (`tensor-fusion.ai/gpupool`). A DNS-1123 label of at most 58 characters,
   * so that the node label `tensor-fusion.ai/pool-<name>` stays valid.
   * @default the pool annotated `tensor-fusion.ai/is-default-pool: "true"`
   * @example 'default-pool'
   */
  readonly pool?: string;
  /**
   * Containers that get the virtual GPU (`tensor-fusion.ai/inject-container`, comma-joined). Each must
   * be a container of the pod template; required when the template has more than one container.
   * @default the pod template's only container
   * @example ['python']
   */
  readonly injectContainers?: readonly string[];
  /**
   * Number of vGPU workers to create (`tensor-fusion.ai/replicas`); usually the Deployment's replicas.
   * A non-negative integer.
   * @default dynamic, following the pending pods
   * @example 1
   */
  readonly replicas?: number;
  /**
   * FP16 TFLOPS reserved per worker per GPU (`tensor-fusion.ai/tflops-request`). A positive number,
   * or a decimal string / Kubernetes quantity.
   * @default tflopsLimit
   * @example 10
   */
  readonly tflopsRequest?: number | string;
  /**
   * Most FP16 TFLOPS a worker may use per GPU (`tensor-fusion.ai/tflops-limit`); at least tflopsRequest.
   * @default tflopsRequest
   * @example '20'
   */
  readonly tflopsLimit?: number | string;
  /**
   * VRAM reserved per worker per GPU (`tensor-fusion.ai/vram-request`): a Kubernetes quantity string
   * (kept as written) or a number of bytes (written with the largest exact binary suffix).
   * @default vramLimit
   * @example '4Gi'
   */
  readonly vramRequest?: number | string;
  /**
   * Most VRAM a worker may use per GPU (`tensor-fusion.ai/vram-limit`); at least vramRequest.
   * @default vramRequest
   * @example 4294967296
   */
  readonly vramLimit?: number | string;
  /**
   * Quality of service (`tensor-fusion.ai/qos`).
   * @default the pool's default QoS, else 'medium'
   * @example 'medium'
   */
  readonly qos?: QosLevel;
  /**
   * Run the pod on the GPU server that hosts its vGPU worker (`tensor-fusion.ai/is-local-gpu`).
   * @default the pool's defaultUsingLocalGPU, else false
   * @example true
   */
  readonly isLocalGpu?: boolean;
  /**
   * Name of the TensorFusionWorkload that manages the vGPU workers (`tensor-fusion.ai/workload`); it is
   * reused when it exists. Required when generateWorkload is false.
   * @default a workload named after the pod's owner
   * @example 'pytorch-example'
   */
  readonly workload?: string;
  /**
   * Create the workload when missing (`tensor-fusion.ai/generate-workload`). With false the existing
   * TensorFusionWorkload named by `workload` is used and none is created.
   * @default true
   * @example true
   */
  readonly generateWorkload?: boolean;
  /**
   * WorkloadProfile in the pod's namespace to take defaults from (`tensor-fusion.ai/workload-profile`).
   * These options win over the profile.
   * @default none
   * @example 'default-profile'
   */
  readonly workloadProfile?: string;
  /**
   * Physical GPUs per worker (`tensor-fusion.ai/gpu-count`), an integer from 1 to 128; TFLOPS and VRAM
   * are per GPU.
   * @default 1
   * @example 1
   */
  readonly gpuCount?: number;
  /**
   * Required GPU/NPU model (`tensor-fusion.ai/gpu-model`).
   * @default any model
   * @example 'A100'
   */
  readonly gpuModel?: string;
  /**
   * Set requests from observed usage (`tensor-fusion.ai/auto-requests`); tune it in a WorkloadProfile.
   * @default false
   * @example true
   */
  readonly autoRequests?: boolean;
  /**
   * Set limits from observed usage (`tensor-fusion.ai/auto-limits`); tune it in a WorkloadProfile.
   * @default false
   * @example true
   */
  readonly autoLimits?: boolean;
  /**
   * Scale vGPU worker replicas from observed usage (`tensor-fusion.ai/auto-replicas`).
   * @default false
   * @example true
   */
  readonly autoReplicas?: boolean;
  /**
   * Also inject the vGPU worker as an init container for the best performance, at the price of letting
   * the app reach the physical GPU (`tensor-fusion.ai/no-standalone-worker-mode`). Only with
   * isLocalGpu true.
   * @default false
   * @example true
   */
  readonly noStandaloneWorkerMode?: boolean;
  /**
   * Upstream TensorFusion's `tensor-fusion.ai/compute-percent-request`: the TFLOPS request as a percent
   * of one GPU of `gpuModel` (its TFLOPS from the GPU catalog, or the pool's `capacityConfig.gpuTflops`).
   * Not together with tflopsRequest or tflopsLimit.
   * @default none (tflopsRequest)
   * @example 50
   */
  readonly computePercentRequest?: number | string;
  /**
   * Upstream's `tensor-fusion.ai/compute-percent-limit`: the TFLOPS limit as a percent of one GPU of
   * `gpuModel`; at least computePercentRequest.
   * @default computePercentRequest
   * @example 100
   */
  readonly computePercentLimit?: number | string;
  /**
   * Upstream's `tensor-fusion.ai/dedicated-gpu`: reserve whole GPUs of `gpuModel` (request and limit
   * are all of the model's TFLOPS, so no other share fits on them). Not together with TFLOPS or
   * compute-percent values; VRAM is still what vramRequest/vramLimit say.
   * @default false
   * @example true
   */
  readonly dedicatedGpu?: boolean;
  /**
   * Upstream's `tensor-fusion.ai/gpu-indices`: the device indices (on their node) the pod's GPUs must
   * have. Sets gpuCount to their number.
   * @default any GPU
   * @example [0, 1]
   */
  readonly gpuIndices?: readonly number[];
  /**
   * Upstream's `tensor-fusion.ai/vendor`. Only `NVIDIA` is accepted: every GPU this package manages is
   * an NVIDIA GPU, so it constrains nothing.
   * @default any vendor
   * @example 'NVIDIA'
   */
  readonly vendor?: string;
  /**
   * Upstream's `tensor-fusion.ai/eviction-protection`, a Go duration. Upstream prices the protection
   * window; this package has no pricing, so the value is checked and otherwise has no effect.
   * @default none
   * @example '30m'
   */
  readonly evictionProtection?: string;
}

/** Name of a {@link GpuWorkloadOptions} field. */
export type GpuWorkloadOptionName = keyof GpuWorkloadOptions;

/**
 * Decoded, validated annotations: the same fields as {@link GpuWorkloadOptions}, with TFLOPS as
 * numbers, VRAM in bytes and compute percents as numbers. A field is present only when its annotation
 * was present and valid.
 */
export interface GpuWorkloadSettings extends Omit<
  GpuWorkloadOptions,
  'tflopsRequest' | 'tflopsLimit' | 'vramRequest' | 'vramLimit' | 'computePercentRequest' | 'computePercentLimit'
> {
  /** TFLOPS. */
  readonly tflopsRequest?: number;
  /** TFLOPS. */
  readonly tflopsLimit?: number;
  /** Bytes. */
  readonly vramRequest?: number;
  /** Bytes. */
  readonly vramLimit?: number;
  /** Percent of one GPU. */
  readonly computePercentRequest?: number;
  /** Percent of one GPU. */
  readonly computePercentLimit?: number;
}

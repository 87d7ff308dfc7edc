/**
 * The `tensor-fusion.ai/*` pod annotations users set (the basic and advanced tables of TensorFusion's annotation reference), each tied
 * to its typed option and value kind. Listed in the order that reference's example writes them, which is the
 * order the encoder emits.
 */
import {
  ALLOCATION_ANNOTATION,
  ANNOTATION_PREFIX,
  ENABLED_LABEL,
  GPU_IDS_ANNOTATION,
  PLACEMENT_ANNOTATIONS,
  SHARE_ANNOTATION,
} from '../model/metadata-keys';
import type { GpuWorkloadOptionName } from './options';
import type { UpstreamValueKind } from './value-kinds';

export { ENABLED_LABEL };

/** How an annotation's value is written and checked. */
export type AnnotationValueKind =
  | 'poolName' // DNS-1123 label, short enough for the pool membership node label
  | 'objectName' // DNS-1123 subdomain (a Kubernetes object name)
  | 'containerNames' // comma-separated container names
  | 'replicas' // non-negative integer
  | 'gpuCount' // integer 1..128
  | 'tflops' // positive number
  | 'vram' // positive quantity of bytes
  | 'qos' // QoS enum
  | 'boolean' // 'true' | 'false'
  | 'gpuModel' // free model name
  | UpstreamValueKind; // keys of upstream TensorFusion pods (see upstream.ts)

/** One user-facing annotation. */
export interface AnnotationSpec {
  /** Full annotation key, e.g. `tensor-fusion.ai/tflops-limit`. */
  readonly key: string;
  /** The {@link GpuWorkloadOptions} field it carries. */
  readonly option: GpuWorkloadOptionName;
  /** How the value is written and checked. */
  readonly kind: AnnotationValueKind;
  /** What the annotation means, in words. */
  readonly doc: string;
}

const spec = (suffix: string, option: GpuWorkloadOptionName, kind: AnnotationValueKind, doc: string): AnnotationSpec => ({
  key: `${ANNOTATION_PREFIX}${suffix}`,
  option,
  kind,
  doc,
});

/** Every user-facing annotation, in the order of the annotation reference's example. */
export const GPU_WORKLOAD_ANNOTATIONS: readonly AnnotationSpec[] = [
  spec('gpupool', 'pool', 'poolName', 'GPUPool to take GPUs from.'),
  spec('inject-container', 'injectContainers', 'containerNames', 'Comma-separated containers that get the vGPU.'),
  spec('replicas', 'replicas', 'replicas', 'Number of vGPU workers to create.'),
  spec('tflops-limit', 'tflopsLimit', 'tflops', 'Most FP16 TFLOPS a worker may use per GPU.'),
  spec('tflops-request', 'tflopsRequest', 'tflops', 'FP16 TFLOPS reserved per worker per GPU.'),
  spec('vram-limit', 'vramLimit', 'vram', 'Most VRAM a worker may use per GPU.'),
  spec('vram-request', 'vramRequest', 'vram', 'VRAM reserved per worker per GPU.'),
  spec('qos', 'qos', 'qos', 'Quality of service: low, medium, high or critical.'),
  spec('workload', 'workload', 'objectName', 'TensorFusionWorkload that manages the vGPU workers; reused when it exists.'),
  spec(
    'generate-workload',
    'generateWorkload',
    'boolean',
    "Create the workload when missing; 'false' uses the existing one named by workload.",
  ),
  spec('workload-profile', 'workloadProfile', 'objectName', 'WorkloadProfile to take defaults from; annotations win over it.'),
  spec('is-local-gpu', 'isLocalGpu', 'boolean', 'Run the pod on the GPU server that hosts its vGPU worker.'),
  spec('gpu-count', 'gpuCount', 'gpuCount', 'Physical GPUs per worker (1..128).'),
  spec('gpu-model', 'gpuModel', 'gpuModel', 'Required GPU/NPU model, e.g. A100.'),
  spec('auto-requests', 'autoRequests', 'boolean', 'Set requests from observed usage.'),
  spec('auto-limits', 'autoLimits', 'boolean', 'Set limits from observed usage.'),
  spec('auto-replicas', 'autoReplicas', 'boolean', 'Scale vGPU worker replicas from observed usage.'),
  spec(
    'no-standalone-worker-mode',
    'noStandaloneWorkerMode',
    'boolean',
    "Also inject the worker as an init container; only with is-local-gpu 'true'.",
  ),
  // Upstream TensorFusion keys that map onto this package's model.
  spec(
    'compute-percent-request',
    'computePercentRequest',
    'percent',
    "Percent of one GPU's compute reserved, instead of tflops-request; needs gpu-model.",
  ),
  spec(
    'compute-percent-limit',
    'computePercentLimit',
    'percent',
    "Most percent of one GPU's compute, instead of tflops-limit; needs gpu-model.",
  ),
  spec('dedicated-gpu', 'dedicatedGpu', 'boolean', "'true' reserves whole GPUs of gpu-model (all their TFLOPS)."),
  spec('gpu-indices', 'gpuIndices', 'gpuIndices', 'Comma-separated device indices the GPUs must have on their node; sets gpu-count.'),
  spec('vendor', 'vendor', 'vendor', 'GPU vendor; NVIDIA, the vendor of every GPU managed here.'),
  spec('eviction-protection', 'evictionProtection', 'duration', 'Upstream pricing window; checked, with no effect here (no pricing).'),
];

/** Annotation key of each option, e.g. `ANNOTATION.tflopsLimit === 'tensor-fusion.ai/tflops-limit'`. */
export const ANNOTATION = Object.fromEntries(GPU_WORKLOAD_ANNOTATIONS.map((s) => [s.option, s.key])) as {
  readonly [O in GpuWorkloadOptionName]: string;
};

/** The annotation specs by full key. */
export const SPEC_BY_KEY: ReadonlyMap<string, AnnotationSpec> = new Map(GPU_WORKLOAD_ANNOTATIONS.map((s) => [s.key, s]));
/** The annotation specs by option name. */
export const SPEC_BY_OPTION: ReadonlyMap<string, AnnotationSpec> = new Map(GPU_WORKLOAD_ANNOTATIONS.map((s) => [s.option, s]));

/**
 * `tensor-fusion.ai/*` pod annotations the runtime writes itself (the webhook's share, the extender's
 * allocation and placement values). The decoder accepts them without complaint (and ignores their
 * values) so that admitted and bound pods, and templates copied from them, decode cleanly again.
 */
export const CONTROLLER_WRITTEN_KEYS: ReadonlySet<string> = new Set([
  ALLOCATION_ANNOTATION,
  GPU_IDS_ANNOTATION,
  SHARE_ANNOTATION,
  ...Object.values(PLACEMENT_ANNOTATIONS),
]);

/**
 * Our labels and annotations (tensor-fusion.ai/*), and the GPU Feature Discovery keys we read and
 * write. Kubernetes' own keys are in lib/k8s/labels.ts, T9k Scheduler's in lib/t9k/keys.ts.
 */
import { GROUP } from './group';

/** Prefix of every tensor-fusion.ai pod annotation. */
export const ANNOTATION_PREFIX = `${GROUP}/`;

/** Pod label that opts a pod into the admission webhook. */
export const ENABLED_LABEL = `${GROUP}/enabled`;

/**
 * Pod annotation the runtime controller writes with the GPU shares it allocated. Users never set it;
 * the annotation decoder accepts it without complaint.
 */
export const ALLOCATION_ANNOTATION = `${GROUP}/allocation`;

/** GPUPool annotation marking the pool used by pods that name no `gpupool`. */
export const DEFAULT_POOL_ANNOTATION = `${GROUP}/is-default-pool`;

/** Node label that puts a node in a pool: `tensor-fusion.ai/pool-<pool>: "true"` (a node may be in several). */
export function poolMembershipLabel(pool: string): string {
  return `${GROUP}/pool-${pool}`;
}

/**
 * Node annotation that GpuNode's manifest carries: these labels come from a declaration that must
 * never create the Node (the controller's node guard policy refuses a create that carries it).
 */
export const GPU_NODE_ANNOTATION = `${GROUP}/gpu-node`;

/** Node label naming the GPU vendor (NVIDIA, AMD, Ascend, ...). */
export const HARDWARE_VENDOR_LABEL = `${GROUP}/hardware-vendor`;

/**
 * NVIDIA GPU Feature Discovery labels. GpuNode writes the same keys, so a node already labelled by
 * GFD needs no inventory props and the controller reads one set of keys either way.
 */
export const GFD = {
  present: 'nvidia.com/gpu.present',
  product: 'nvidia.com/gpu.product',
  count: 'nvidia.com/gpu.count',
  /** Memory per GPU in MiB, as GFD writes it. */
  memory: 'nvidia.com/gpu.memory',
} as const;

/** Pod template annotation holding the sha256 of the shipped controller bundle; a new bundle rolls the pods. */
export const CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION = `${GROUP}/controller-bundle-sha256`;

/** Pod template annotation holding the sha256 of the scheduler configuration; a new one restarts the scheduler. */
export const SCHEDULER_CONFIG_CHECKSUM_ANNOTATION = `${GROUP}/scheduler-config-sha256`;

/**
 * Label on controller-made objects naming their parent: the pool on a GPUNode, the GPUNode on a GPU
 * (as upstream), the TensorFusionWorkload on a remote-mode worker pod.
 */
export const MANAGED_BY_LABEL = `${GROUP}/managed-by`;

/**
 * Label on the growth placeholder pods the controller keeps for a pool that grows (docs/growth.md),
 * naming the pool: only such pods it creates and deletes besides remote-mode workers.
 */
export const GROWTH_POOL_LABEL = `${GROUP}/growth-pool`;

/** Pod label naming the TensorFusionWorkload of the pod: its workers, and the GPU pods the webhook admits into it (as upstream). */
export const WORKLOAD_LABEL = `${GROUP}/workload`;

/** Pod annotation with the comma-separated GPU object names the pod's share was placed on (as upstream). */
export const GPU_IDS_ANNOTATION = `${GROUP}/gpu-ids`;

/**
 * Label on the TensorFusionWorkloads the controller generates from pods (`generate-workload`): only
 * those are ever updated by it, so a workload someone else made is never overwritten.
 */
export const GENERATED_WORKLOAD_LABEL = `${GROUP}/generated`;

/**
 * Node annotation the scheduler extender stamps when room appears on the node (a share released, or
 * GPUs or pool settings that take more): a node update is a cluster event that makes kube-scheduler
 * retry the pods our extender turned away, and it is sent only after the extender's own state has the
 * room. The name predates the capacity case and is kept so that nodes do not carry two.
 */
export const SHARE_RELEASED_ANNOTATION = `${GROUP}/share-released-at`;

/**
 * Pod annotation the webhook writes: the resolved share request (JSON, see lib/runtime/shared/share.ts)
 * that the scheduler extender places. Protected like the allocation.
 */
export const SHARE_ANNOTATION = `${GROUP}/share`;

/**
 * Extended resource the node agent serves as a kubelet device plugin: each inject-container of a pod
 * in a `hard`-isolation pool requests one, and the kubelet asks the agent for the container's GPU
 * devices, MPS pipe directory and limits when it creates the container. kube-scheduler ignores it
 * (the extender places shares). A kubelet with no plugin for it drops it from admission and starts
 * the pod without GPU devices, so hard isolation needs the agent on every GPU node.
 */
export const SHARE_RESOURCE = `${GROUP}/share`;

/**
 * Condition type on a GPU's status that the node agent writes: True when the GPU's MPS isolation
 * works (control daemons start and answer), False with a reason (MpsControlMissing,
 * MpsDaemonNotAnswering, MpsProbeFailed) when not. The extender gives no `hard`-isolation share on a
 * GPU whose condition is False.
 */
export const GPU_ISOLATION_CONDITION = 'IsolationReady';

/**
 * Pod annotations written at bind time (in the Binding, atomically with `spec.nodeName`) that the
 * webhook's downward-API env variables read: their values depend on the placement.
 */
export const PLACEMENT_ANNOTATIONS = {
  allocationId: `${GROUP}/allocation-id`,
  visibleDevices: `${GROUP}/visible-devices`,
  mpsMemoryLimit: `${GROUP}/mps-memory-limit`,
  mpsThreadPercentage: `${GROUP}/mps-thread-percentage`,
} as const;

/**
 * Every pod annotation of a GPU share: the request, the allocation and what bind writes. Only the
 * controller may write them after the pod is created (the integrity policies).
 */
export const RECORD_ANNOTATIONS: readonly string[] = [
  ALLOCATION_ANNOTATION,
  GPU_IDS_ANNOTATION,
  SHARE_ANNOTATION,
  ...Object.values(PLACEMENT_ANNOTATIONS),
];

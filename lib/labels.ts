/**
 * Every label, annotation, taint and resource key the package reads or writes, in one place.
 */
import { GROUP } from './model/group';

// Their homes are lib/model/; re-exported for the files that still import them from here.
export { GROUP, VERSION, API_VERSION } from './model/group';
export { FIELD_MANAGER } from './model/field-manager';

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

/** T9k Scheduler keys. */
export const T9K = {
  schedulerName: 't9k-scheduler',
  acceleratorLabel: 'sched.tensorstack.dev/accelerator',
  allocModeLabel: 'sched.tensorstack.dev/node-alloc-mode',
  xgnTaintKey: 'sched.tensorstack.dev/xgn-mode',
  groupNameLabel: 'scheduler.tensorstack.dev/group-name',
  exclusiveGpuResource: 'tensorstack.dev/nvidia-gpu',
  sharedGpuPercentResource: 'tensorstack.dev/nvidia-gpu-percent',
  exclusiveNodeResource: 'tensorstack.dev/nvidia-gpu-node',
} as const;

/** The taint the T9k Scheduler (or, without it, our controller) puts on xgn nodes. */
export const XGN_TAINT = { key: T9K.xgnTaintKey, value: 'true', effect: 'NoSchedule' } as const;

/** Recommended Kubernetes labels (app.kubernetes.io/*) put on the controller's objects. */
export const APP_LABELS = {
  name: 'app.kubernetes.io/name',
  component: 'app.kubernetes.io/component',
  partOf: 'app.kubernetes.io/part-of',
  managedBy: 'app.kubernetes.io/managed-by',
} as const;

/** Label the API server puts on every Namespace with the namespace's own name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** Node label holding the node's hostname; the topology key for per-node spreading. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** Namespace label that makes the API server enforce a Pod Security Standards level. */
export const POD_SECURITY_ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce';

/** Annotation asking cert-manager's cainjector to copy a Certificate's CA into a webhook configuration. */
export const CERT_MANAGER_INJECT_CA_ANNOTATION = 'cert-manager.io/inject-ca-from';

/** Pod template annotation holding the sha256 of the shipped controller bundle; a new bundle rolls the pods. */
export const CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION = `${GROUP}/controller-bundle-sha256`;

/** Pod template annotation holding the sha256 of the scheduler configuration; a new one restarts the scheduler. */
export const SCHEDULER_CONFIG_CHECKSUM_ANNOTATION = `${GROUP}/scheduler-config-sha256`;

/** Label on controller-made objects naming their parent: the pool on a GPUNode, the GPUNode on a GPU (as upstream). */
export const MANAGED_BY_LABEL = `${GROUP}/managed-by`;

/** Pod label naming the TensorFusionWorkload the pod is a worker of (as upstream). */
export const WORKLOAD_LABEL = `${GROUP}/workload`;

/** Pod annotation with the comma-separated GPU object names the pod's share was placed on (as upstream). */
export const GPU_IDS_ANNOTATION = `${GROUP}/gpu-ids`;

/**
 * Label on the TensorFusionWorkloads the controller generates from pods (`generate-workload`): only
 * those are ever updated by it, so a workload someone else made is never overwritten.
 */
export const GENERATED_WORKLOAD_LABEL = `${GROUP}/generated`;

/**
 * Node annotation the scheduler extender stamps when a GPU share on the node is released: a node
 * update is a cluster event that makes kube-scheduler retry the pods our extender turned away, and it
 * is sent only after the extender's own state has the release.
 */
export const SHARE_RELEASED_ANNOTATION = `${GROUP}/share-released-at`;

/**
 * Pod annotation the webhook writes: the resolved share request (JSON, see lib/runtime/share.ts)
 * that the scheduler extender places. Protected like the allocation.
 */
export const SHARE_ANNOTATION = `${GROUP}/share`;

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

/**
 * The tensor-fusion.ai/v1 API: schemas, static types, the kind registry, CRD generation and
 * validation.
 */
import type { KubeObject } from '../k8s/object';
import type { GPUStatus } from './gpu';
import type { GPUNodeSpec, GPUNodeStatus } from './gpu-node';
import type { GPUPoolSpec, GPUPoolStatus } from './gpu-pool';
import type { GPUResourceQuotaSpec, GPUResourceQuotaStatus } from './gpu-resource-quota';
import type { TensorFusionWorkloadSpec, TensorFusionWorkloadStatus } from './tensor-fusion-workload';
import type { WorkloadProfileSpec } from './workload-profile';

export * from './common';
export * from './gpu';
export * from './gpu-node';
export * from './gpu-pool';
export * from './workload-profile';
export * from './tensor-fusion-workload';
export * from './gpu-resource-quota';
export * from './kinds';
export * from './crd';
export * from './validate';
export * from './generated/api-props';

type Metadata = KubeObject['metadata'];

/** A GPUPool object (cluster-scoped: no namespace). */
export interface GPUPool {
  /** `tensor-fusion.ai/v1`. */
  apiVersion: string;
  /** Always `GPUPool`. */
  kind: 'GPUPool';
  /** Name, labels and annotations. */
  metadata: Metadata;
  /** Desired state. */
  spec: GPUPoolSpec;
  /** Observed state, written by the controller. */
  status?: GPUPoolStatus;
}

/** A GPUNode object (cluster-scoped, named after its Kubernetes node). */
export interface GPUNode {
  /** `tensor-fusion.ai/v1`. */
  apiVersion: string;
  /** Always `GPUNode`. */
  kind: 'GPUNode';
  /** Name, labels and annotations. */
  metadata: Metadata;
  /** Desired state. */
  spec?: GPUNodeSpec;
  /** Observed state, written by the controller. */
  status?: GPUNodeStatus;
}

/** A GPU object (cluster-scoped, status only). */
export interface GPU {
  /** `tensor-fusion.ai/v1`. */
  apiVersion: string;
  /** Always `GPU`. */
  kind: 'GPU';
  /** Name, labels and annotations. */
  metadata: Metadata;
  /** Observed state, written by the controller. */
  status?: GPUStatus;
}

/** A WorkloadProfile object (namespaced). */
export interface WorkloadProfile {
  /** `tensor-fusion.ai/v1`. */
  apiVersion: string;
  /** Always `WorkloadProfile`. */
  kind: 'WorkloadProfile';
  /** Name, labels and annotations, namespace. */
  metadata: Metadata;
  /** Desired state. */
  spec: WorkloadProfileSpec;
}

/** A TensorFusionWorkload object (namespaced). */
export interface TensorFusionWorkload {
  /** `tensor-fusion.ai/v1`. */
  apiVersion: string;
  /** Always `TensorFusionWorkload`. */
  kind: 'TensorFusionWorkload';
  /** Name, labels and annotations, namespace. */
  metadata: Metadata;
  /** Desired state. */
  spec: TensorFusionWorkloadSpec;
  /** Observed state, written by the controller. */
  status?: TensorFusionWorkloadStatus;
}

/** A GPUResourceQuota object (namespaced): the GPU quotas of its namespace. */
export interface GPUResourceQuota {
  /** `tensor-fusion.ai/v1`. */
  apiVersion: string;
  /** Always `GPUResourceQuota`. */
  kind: 'GPUResourceQuota';
  /** Name, labels and annotations, namespace. */
  metadata: Metadata;
  /** Desired state: the quotas. */
  spec: GPUResourceQuotaSpec;
  /** Observed state, written by the controller: what the namespace uses. */
  status?: GPUResourceQuotaStatus;
}

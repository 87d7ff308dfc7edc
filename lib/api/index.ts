/**
 * The tensor-fusion.ai/v1 API: schemas, static types, the kind registry, CRD generation and
 * validation.
 */
import type { KubeObject } from '../k8s/object';
import type { GPUStatus } from './gpu';
import type { GPUNodeSpec, GPUNodeStatus } from './gpu-node';
import type { GPUPoolSpec, GPUPoolStatus } from './gpu-pool';
import type { TensorFusionWorkloadSpec, TensorFusionWorkloadStatus } from './tensor-fusion-workload';
import type { WorkloadProfileSpec } from './workload-profile';

export * from './common';
export * from './gpu';
export * from './gpu-node';
export * from './gpu-pool';
export * from './workload-profile';
export * from './tensor-fusion-workload';
export * from './kinds';
export * from './crd';
export * from './validate';
export * from './props';

type Metadata = KubeObject['metadata'];

/** A GPUPool object (cluster-scoped: no namespace). */
export interface GPUPool {
  apiVersion: string;
  kind: 'GPUPool';
  metadata: Metadata;
  spec: GPUPoolSpec;
  status?: GPUPoolStatus;
}

/** A GPUNode object (cluster-scoped, named after its Kubernetes node). */
export interface GPUNode {
  apiVersion: string;
  kind: 'GPUNode';
  metadata: Metadata;
  spec?: GPUNodeSpec;
  status?: GPUNodeStatus;
}

/** A GPU object (cluster-scoped, status only). */
export interface GPU {
  apiVersion: string;
  kind: 'GPU';
  metadata: Metadata;
  status?: GPUStatus;
}

/** A WorkloadProfile object (namespaced). */
export interface WorkloadProfile {
  apiVersion: string;
  kind: 'WorkloadProfile';
  metadata: Metadata;
  spec: WorkloadProfileSpec;
}

/** A TensorFusionWorkload object (namespaced). */
export interface TensorFusionWorkload {
  apiVersion: string;
  kind: 'TensorFusionWorkload';
  metadata: Metadata;
  spec: TensorFusionWorkloadSpec;
  status?: TensorFusionWorkloadStatus;
}

/** Framework-free core of tensor-fusion-iac: API types, annotation codec, validation and renderers. */
export * from './errors';
export * from './labels';
export * from './quantity';
export * from './rules';
export type { KubeObject } from './k8s-object';
export * as api from './api';
export * from './annotations';
export * from './t9k';
export { renderGpuPool, gpuPoolSpec } from './render/gpu-pool';
export type { GpuPoolProps, PoolResources } from './render/gpu-pool';
export { renderGpuNode, gpuNodeLabels } from './render/gpu-node';
export type { GpuNodeProps, GpuInventory } from './render/gpu-node';
export { renderWorkloadProfile, renderTensorFusionWorkload } from './render/workload-profile';
export type { WorkloadProfileProps, TensorFusionWorkloadProps } from './render/workload-profile';
export { gpuWorkloadPodTemplate } from './render/gpu-workload';
export { podTemplatePath, getPodTemplate, transformPodTemplate } from './render/pod-template';
export type { PodTemplate } from './render/pod-template';

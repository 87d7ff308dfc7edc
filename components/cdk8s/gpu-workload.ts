import { IConstruct } from 'constructs';
import { GpuWorkloadOptions } from '../../lib/annotations';
import { gpuWorkloadPodTemplate } from '../../lib/render/gpu-workload';
import { PodTemplate } from '../../lib/render/pod-template';
import { T9kGpuOptions, T9kPodTemplateLike, t9kPodTemplate } from '../../lib/t9k';
import { patchPodTemplate } from './pod-template';

/**
 * Makes a cdk8s workload a TensorFusion GPU workload: adds the `tensor-fusion.ai/enabled` label and
 * the `tensor-fusion.ai/*` annotations to its pod template. Works on raw ApiObjects, imported k8s
 * classes (KubeDeployment, KubeStatefulSet, KubeJob, KubeCronJob, KubePod) and cdk8s-plus workloads;
 * call it after the containers are defined (inject-container names are checked against them).
 *
 * @example
 * gpuWorkload(deployment, { pool: 'default-pool', injectContainers: ['python'], tflopsRequest: 10,
 *   tflopsLimit: 20, vramRequest: '4Gi', vramLimit: '4Gi', qos: 'medium' });
 * @throws ValidationError naming every bad option; the workload is then left unchanged
 */
export function gpuWorkload<T extends IConstruct>(workload: T, options: GpuWorkloadOptions): T {
  return patchPodTemplate(workload, (template) => gpuWorkloadPodTemplate(template, options));
}

/**
 * Puts a cdk8s workload on the T9k Scheduler in one of its NVIDIA GPU modes (exclusive GPUs,
 * shared GPU percent, exclusive node): scheduler name, extended resource, tolerations and group label.
 *
 * @example
 * t9kGpuWorkload(pod, { mode: 'shared-gpu', percent: 30, groupName: 'gpu-usage' });
 * @throws ValidationError naming every bad option; the workload is then left unchanged
 */
export function t9kGpuWorkload<T extends IConstruct>(workload: T, options: T9kGpuOptions): T {
  return patchPodTemplate(workload, (template) => t9kPodTemplate(template as T9kPodTemplateLike, options) as PodTemplate);
}

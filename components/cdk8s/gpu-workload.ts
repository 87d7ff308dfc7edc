import { IConstruct } from 'constructs';
import { EncodedGpuWorkload, encodeGpuWorkload, GpuWorkloadOptions } from '../../lib/annotations';
import { throwIfInvalid } from '../../lib/model/errors';
import { gpuWorkloadPodTemplate } from '../../lib/render/gpu-workload';
import { PodTemplate } from '../../lib/render/template-path';
import { checkT9kGpuOptions, T9kGpuOptions, T9kPodTemplateLike, t9kPodTemplate } from '../../lib/t9k';
import { patchPodTemplate } from './patch-pod-template';
import { dependOnController } from './order';

/**
 * Makes a cdk8s workload a TensorFusion GPU workload: adds the `tensor-fusion.ai/enabled` label and
 * the `tensor-fusion.ai/*` annotations to its pod template. Works on raw ApiObjects, imported k8s
 * classes (KubeDeployment, KubeStatefulSet, KubeJob, KubeCronJob, KubePod) and cdk8s-plus workloads.
 * The options are checked at the call; the pod template is read at synthesis, so containers, sidecars,
 * scheduling rules and JSON patches added later are kept, and inject-container names are checked
 * against the final containers then (the error names `gpuWorkload` and the construct path). In a
 * chart that also holds a TensorFusionController, the workload is synthesized after it.
 *
 * @example
 * gpuWorkload(deployment, { pool: 'default-pool', injectContainers: ['python'], tflopsRequest: 10,
 *   tflopsLimit: 20, vramRequest: '4Gi', vramLimit: '4Gi', qos: 'medium' });
 * @throws ValidationError `gpuWorkload <construct path>: ...` naming every bad option; the workload
 *   is then left unchanged
 */
export function gpuWorkload<T extends IConstruct>(workload: T, options: GpuWorkloadOptions): T {
  // The options as they are now: the template is rewritten at synthesis with what was checked here.
  const snapshot: GpuWorkloadOptions = { ...options, injectContainers: options.injectContainers && [...options.injectContainers] };
  let encoded: EncodedGpuWorkload | undefined;
  patchPodTemplate(
    workload,
    'gpuWorkload',
    () => (encoded = encodeGpuWorkload(snapshot)),
    (template) => gpuWorkloadPodTemplate(template, snapshot, encoded),
  );
  dependOnController(workload);
  return workload;
}

/**
 * Puts a cdk8s workload on the T9k Scheduler in one of its NVIDIA GPU modes (exclusive GPUs,
 * shared GPU percent, exclusive node): scheduler name, extended resource, tolerations and group label.
 * Like `gpuWorkload`, the options are checked at the call and the template is rewritten at synthesis.
 *
 * @example
 * t9kGpuWorkload(pod, { mode: 'shared-gpu', percent: 30, groupName: 'gpu-usage' });
 * @throws ValidationError `t9kGpuWorkload <construct path>: ...` naming every bad option; the
 *   workload is then left unchanged
 */
export function t9kGpuWorkload<T extends IConstruct>(workload: T, options: T9kGpuOptions): T {
  return patchPodTemplate(
    workload,
    't9kGpuWorkload',
    () => throwIfInvalid(checkT9kGpuOptions(options)),
    (template) => t9kPodTemplate(template as T9kPodTemplateLike, options) as PodTemplate,
  );
}

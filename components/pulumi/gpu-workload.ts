import { encodeGpuWorkload, GpuWorkloadOptions } from '../../lib/annotations';
import { throwIfInvalid } from '../../lib/model/errors';
import { withContext } from '../../lib/render/context';
import { gpuWorkloadPodTemplate } from '../../lib/render/gpu-workload';
import { PodTemplate } from '../../lib/render/pod-template';
import { checkT9kGpuOptions, T9kGpuOptions, T9kPodTemplateLike, t9kPodTemplate } from '../../lib/t9k';
import { patchPodTemplateArgs } from './pod-template';

/** `gpuWorkload <metadata.name>` when the args name the workload, else `gpuWorkload`. */
function contextOf(caller: string, args: object): string {
  const name = (args as { metadata?: { name?: unknown } }).metadata?.name;
  return typeof name === 'string' ? `${caller} ${name}` : caller;
}

/**
 * Makes @pulumi/kubernetes workload args (Deployment, StatefulSet, Job, CronJob, Pod) a TensorFusion
 * GPU workload: returns new args whose pod template has the `tensor-fusion.ai/enabled` label and the
 * `tensor-fusion.ai/*` annotations. The template is read from the resolved args: at once for plain
 * args, at preview when they hold Outputs. Pass the controller in `dependsOn` of the workload so
 * that its pods are created once the webhook serves them.
 *
 * @example
 * new k8s.apps.v1.Deployment('pytorch', gpuWorkload({ metadata: {...}, spec: {...} },
 *   { pool: 'default-pool', injectContainers: ['python'], tflopsRequest: 10, vramRequest: '4Gi' }),
 *   { dependsOn: controller });
 * @throws ValidationError `gpuWorkload <metadata.name>: ...` naming every bad option; checks that
 *   need the pod template's containers surface at preview when the args hold Outputs
 */
export function gpuWorkload<T extends object>(args: T, options: GpuWorkloadOptions): T {
  const context = contextOf('gpuWorkload', args);
  // Options are checked now even when the template is an Output, so most errors point at this call.
  const encoded = withContext(context, () => encodeGpuWorkload(options));
  return patchPodTemplateArgs(args, context, (template) => gpuWorkloadPodTemplate(template, options, encoded));
}

/**
 * Puts @pulumi/kubernetes workload args on the T9k Scheduler in one of its NVIDIA GPU modes.
 *
 * @example
 * new k8s.core.v1.Pod('shared', t9kGpuWorkload({ spec: {...} }, { mode: 'shared-gpu', percent: 30 }));
 * @throws ValidationError `t9kGpuWorkload <metadata.name>: ...` naming every bad option; checks that
 *   need the pod template surface at preview when the args hold Outputs
 */
export function t9kGpuWorkload<T extends object>(args: T, options: T9kGpuOptions): T {
  const context = contextOf('t9kGpuWorkload', args);
  withContext(context, () => throwIfInvalid(checkT9kGpuOptions(options)));
  return patchPodTemplateArgs(args, context, (template) => t9kPodTemplate(template as T9kPodTemplateLike, options) as PodTemplate);
}

import * as pulumi from '@pulumi/pulumi';
import { checkGpuWorkloadOptionValues, encodeGpuWorkload, GpuWorkloadOptions } from '../../lib/annotations';
import { throwIfInvalid } from '../../lib/model/errors';
import { withContext } from '../../lib/render/error-context';
import { gpuWorkloadPodTemplate } from '../../lib/render/gpu-workload';
import { PodTemplate } from '../../lib/render/template-path';
import { checkT9kGpuOptions, T9kGpuOptions, T9kPodTemplateLike, t9kPodTemplate } from '../../lib/t9k';
import { hasUnknowns, Inputs } from './inputs';
import { patchPodTemplateArgs } from './patch-pod-template';

/** `gpuWorkload <metadata.name>` when the args name the workload, else `gpuWorkload`. */
function contextOf(caller: string, args: object): string {
  const name = (args as { metadata?: { name?: unknown } }).metadata?.name;
  return typeof name === 'string' ? `${caller} ${name}` : caller;
}

/**
 * Makes @pulumi/kubernetes workload args (Deployment, StatefulSet, Job, CronJob, Pod) a TensorFusion
 * GPU workload: returns new args whose pod template has the `tensor-fusion.ai/enabled` label and the
 * `tensor-fusion.ai/*` annotations. Every option is a `pulumi.Input`, so that it can be wired from
 * another resource (`pool: pool.poolName`). The template is read from the resolved args and
 * options: at once when all are plain, at preview when some are Outputs. Pass the controller in
 * `dependsOn` of the workload so that its pods are created once the webhook serves them.
 *
 * @example
 * new k8s.apps.v1.Deployment('pytorch', gpuWorkload({ metadata: {...}, spec: {...} },
 *   { pool: pool.poolName, injectContainers: ['python'], tflopsRequest: 10, vramRequest: '4Gi' }),
 *   { dependsOn: controller });
 * @throws ValidationError `gpuWorkload <metadata.name>: ...` naming every bad plain option at the
 *   call; the rules over several options when one of them is an Output, and the checks that need
 *   the pod template's containers when the args hold Outputs, surface at preview
 */
export function gpuWorkload<T extends object>(args: T, options: Inputs<GpuWorkloadOptions>): T {
  const context = contextOf('gpuWorkload', args);
  // Plain options are checked now even when the template is an Output, so most errors point at this
  // call; with some options still Outputs, each plain one is checked on its own.
  if (hasUnknowns(options)) {
    const plain = Object.fromEntries(Object.entries(options as object).filter(([, v]) => !hasUnknowns(v)));
    withContext(context, () => throwIfInvalid(checkGpuWorkloadOptionValues(plain), 'GPU workload options'));
    return patchPodTemplateArgs(args, context, options as pulumi.Input<GpuWorkloadOptions>, (template, resolved) =>
      gpuWorkloadPodTemplate(template, resolved),
    );
  }
  const encoded = withContext(context, () => encodeGpuWorkload(options as GpuWorkloadOptions));
  return patchPodTemplateArgs(args, context, options as GpuWorkloadOptions, (template, plain) =>
    gpuWorkloadPodTemplate(template, plain, encoded),
  );
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
  return patchPodTemplateArgs(
    args,
    context,
    options,
    (template, plain) => t9kPodTemplate(template as T9kPodTemplateLike, plain) as PodTemplate,
  );
}

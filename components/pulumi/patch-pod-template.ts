import * as pulumi from '@pulumi/pulumi';
import { withContext } from '../../lib/render/error-context';
import { PodTemplate, transformPodTemplate, WorkloadLike } from '../../lib/render/template-path';
import { hasUnknowns, InputError } from './inputs';

/**
 * Rewrites the pod template of @pulumi/kubernetes workload args (Deployment, StatefulSet, Job,
 * CronJob, Pod) with `transform` and its `options`. Plain args and options are transformed, and
 * validated, at once; when either holds Outputs, the template is transformed from the resolved
 * values, so errors then surface at preview, once: metadata and spec are read from the same
 * transformed value and share its one {@link InputError}. Errors carry `context`.
 */
export function patchPodTemplateArgs<T extends object, O>(
  args: T,
  context: string,
  options: pulumi.Input<O> | O,
  transform: (template: PodTemplate, options: O) => PodTemplate,
): T {
  const workload = args as WorkloadLike;
  if (!hasUnknowns(workload.spec) && !hasUnknowns(workload.metadata) && !hasUnknowns(options)) {
    return withContext(context, () => transformPodTemplate(workload, (template) => transform(template, options as O))) as T;
  }
  const inputs = { workload: workload as pulumi.Input<WorkloadLike>, options: options as pulumi.Input<O> };
  const resolved = pulumi.output(inputs).apply(({ workload: plain, options: resolvedOptions }) => {
    try {
      return withContext(context, () =>
        transformPodTemplate(plain as WorkloadLike, (template) => transform(template, resolvedOptions as O)),
      );
    } catch (err) {
      throw new InputError((err as Error).message, undefined);
    }
  });
  return { ...args, metadata: resolved.apply((w) => w.metadata), spec: resolved.apply((w) => w.spec) } as T;
}

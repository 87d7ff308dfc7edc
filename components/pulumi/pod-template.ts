import * as pulumi from '@pulumi/pulumi';
import { withContext } from '../../lib/render/context';
import { PodTemplate, transformPodTemplate, WorkloadLike } from '../../lib/render/pod-template';
import { hasUnknowns, InputError } from './inputs';

/**
 * Rewrites the pod template of @pulumi/kubernetes workload args (Deployment, StatefulSet, Job,
 * CronJob, Pod). Plain args are transformed, and validated, at once; args holding Outputs are
 * transformed from their resolved values, so errors then surface at preview, once: metadata and
 * spec are read from the same transformed value and share its one {@link InputError}. Errors carry
 * `context`.
 */
export function patchPodTemplateArgs<T extends object>(args: T, context: string, transform: (template: PodTemplate) => PodTemplate): T {
  const workload = args as WorkloadLike;
  if (!hasUnknowns(workload.spec) && !hasUnknowns(workload.metadata)) {
    return withContext(context, () => transformPodTemplate(workload, transform)) as T;
  }
  const resolved = pulumi.output(workload as pulumi.Input<WorkloadLike>).apply((plain) => {
    try {
      return withContext(context, () => transformPodTemplate(plain as WorkloadLike, transform));
    } catch (err) {
      throw new InputError((err as Error).message, undefined);
    }
  });
  return { ...args, metadata: resolved.apply((w) => w.metadata), spec: resolved.apply((w) => w.spec) } as T;
}

import * as pulumi from '@pulumi/pulumi';
import { PodTemplate, transformPodTemplate, WorkloadLike } from '../../lib/render/pod-template';

/** Whether a value holds Outputs or Promises somewhere inside (known only at deployment time). */
function hasUnknowns(value: unknown): boolean {
  if (pulumi.Output.isInstance(value) || value instanceof Promise) return true;
  if (Array.isArray(value)) return value.some(hasUnknowns);
  if (value && typeof value === 'object') return Object.values(value).some(hasUnknowns);
  return false;
}

/**
 * Rewrites the pod template of @pulumi/kubernetes workload args (Deployment, StatefulSet, Job,
 * CronJob, Pod). Plain args are transformed, and validated, at once; args holding Outputs are
 * transformed when their values are known, so errors then surface at preview.
 */
export function patchPodTemplateArgs<T extends object>(args: T, transform: (template: PodTemplate) => PodTemplate): T {
  const workload = args as WorkloadLike;
  if (!hasUnknowns(workload.spec) && !hasUnknowns(workload.metadata)) return transformPodTemplate(workload, transform) as T;
  const resolved = pulumi.output(workload as pulumi.Input<WorkloadLike>).apply((plain) => transformPodTemplate(plain as WorkloadLike, transform));
  return { ...args, metadata: resolved.apply((w) => w.metadata), spec: resolved.apply((w) => w.spec) } as T;
}

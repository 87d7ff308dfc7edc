import { ApiObject, JsonPatch } from 'cdk8s';
import { IConstruct } from 'constructs';
import { getPodTemplate, podTemplatePathOf, PodTemplate } from '../../lib/render/pod-template';

/**
 * Rewrites the pod template of a cdk8s workload: a raw ApiObject, an imported k8s class
 * (KubeDeployment, KubeJob, ...) or a cdk8s-plus workload. The template is read as it is now and
 * replaced through a JSON patch, so call this after the workload's containers are defined.
 */
export function patchPodTemplate<T extends IConstruct>(target: T, transform: (template: PodTemplate) => PodTemplate): T {
  const api = target instanceof ApiObject ? target : ApiObject.of(target);
  const json = api.toJson() as { kind?: unknown; spec?: unknown; [key: string]: unknown };
  const path = podTemplatePathOf(json);
  const next = transform(getPodTemplate(json));
  if (path.length === 0) {
    api.addJsonPatch(JsonPatch.add('/metadata', next.metadata ?? {}), JsonPatch.add('/spec', next.spec ?? {}));
  } else {
    api.addJsonPatch(JsonPatch.add(`/${path.join('/')}`, next));
  }
  return target;
}

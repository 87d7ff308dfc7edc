import { ApiObject } from 'cdk8s';
import { IConstruct } from 'constructs';
import { getPodTemplate, PodTemplate, withPodTemplate } from '../../lib/render/pod-template';

/**
 * Rewrites the pod template of a cdk8s workload: a raw ApiObject, an imported k8s class
 * (KubeDeployment, KubeJob, ...) or a cdk8s-plus workload. The template is read as it is now and
 * replaced at synthesis, so call this after the workload's containers are defined. The transform
 * runs (and may throw) before anything is changed.
 */
export function patchPodTemplate<T extends IConstruct>(target: T, transform: (template: PodTemplate) => PodTemplate): T {
  const api = target instanceof ApiObject ? target : ApiObject.of(target);
  const next = transform(getPodTemplate(api.toJson()));
  // Not a JSON patch: imported k8s classes (and cdk8s-plus, built on them) run their typed converter
  // after the JSON patches, and it reads Quantity and IntOrString positions as wrapper objects, turning
  // the plain values of an already synthesized template into undefined. Replacing the template in the
  // final JSON also avoids the deep copy a JSON patch makes of the whole object on every synthesis.
  const synthesize = api.toJson.bind(api);
  api.toJson = () => withPodTemplate(synthesize(), next);
  return target;
}

import { ApiObject, JsonPatch } from 'cdk8s';
import { IConstruct } from 'constructs';
import { getPodTemplate, podTemplatePathOf, PodTemplate } from '../../lib/render/pod-template';

/**
 * Rewrites the pod template of a cdk8s workload: a raw ApiObject, an imported k8s class
 * (KubeDeployment, KubeJob, ...) or a cdk8s-plus workload. The template is read as it is now and
 * replaced through a JSON patch, so call this after the workload's containers are defined. The
 * transform runs (and may throw) before anything is changed.
 */
export function patchPodTemplate<T extends IConstruct>(target: T, transform: (template: PodTemplate) => PodTemplate): T {
  const api = target instanceof ApiObject ? target : ApiObject.of(target);
  const json = api.toJson() as { kind?: unknown; spec?: unknown; [key: string]: unknown };
  const path = podTemplatePathOf(json);
  const next = transform(getPodTemplate(json));
  const patches =
    path.length === 0
      ? [JsonPatch.add('/metadata', next.metadata ?? {}), JsonPatch.add('/spec', next.spec ?? {})]
      : [JsonPatch.add(`/${path.join('/')}`, next)];
  if (Object.getPrototypeOf(api).toJson === ApiObject.prototype.toJson) {
    api.addJsonPatch(...patches);
    return target;
  }
  // Imported k8s classes (and cdk8s-plus, built on them) run their typed converter after the JSON
  // patches; it reads Quantity and IntOrString positions as wrapper objects and turns the plain values
  // of an already synthesized template into undefined. So the patch is applied after that conversion.
  const converted = api.toJson.bind(api);
  api.toJson = () => JsonPatch.apply(converted(), ...patches);
  return target;
}

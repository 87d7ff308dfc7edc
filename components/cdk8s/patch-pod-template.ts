import { ApiObject } from 'cdk8s';
import { IConstruct } from 'constructs';
import { withContext } from '../../lib/render/error-context';
import { getPodTemplate, PodTemplate, podTemplatePath, withPodTemplate } from '../../lib/render/template-path';

/**
 * Rewrites the pod template of a cdk8s workload: a raw ApiObject, an imported k8s class
 * (KubeDeployment, KubeJob, ...) or a cdk8s-plus workload. `check` (the options, the kind) runs now;
 * `transform` runs at synthesis on the final template, so containers, JSON patches and cdk8s-plus
 * changes made after the call are all kept. Errors name `caller` and the construct path.
 */
export function patchPodTemplate<T extends IConstruct>(
  target: T,
  caller: string,
  check: () => void,
  transform: (template: PodTemplate) => PodTemplate,
): T {
  const api = target instanceof ApiObject ? target : ApiObject.of(target);
  const context = `${caller} ${target.node.path}`;
  withContext(context, () => {
    podTemplatePath(api.kind);
    check();
  });
  // A synth-time hook rather than a JSON patch: imported k8s classes (and cdk8s-plus, built on them)
  // run their typed converter after the JSON patches, and it reads Quantity and IntOrString positions
  // as wrapper objects, turning plain values into undefined. Wrapping toJson sees the final JSON,
  // JSON patches included, and avoids the deep copy a JSON patch makes on every synthesis.
  const synthesize = api.toJson.bind(api);
  api.toJson = () => {
    const json = synthesize();
    return withPodTemplate(
      json,
      withContext(context, () => transform(getPodTemplate(json))),
    );
  };
  return target;
}

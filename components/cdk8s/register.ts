import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { Construct } from 'constructs';
import { isClusterScoped } from '../../lib/kinds';
import { KubeObject } from '../../lib/k8s-object';

/**
 * Adds plain objects from lib/render as ApiObjects under `scope`. cdk8s stamps the chart's namespace
 * on every object; cluster-scoped kinds must not carry one, so it is removed from them.
 * @param ids construct ids, one per object; defaults to `Resource` for a single object (cdk8s-plus
 *   style) and `<Kind><name>` otherwise.
 */
export function addObjects(scope: Construct, objects: readonly KubeObject[], ids?: readonly string[]): ApiObject[] {
  const chartNamespace = Chart.of(scope).namespace;
  return objects.map((object, i) => {
    const id = ids?.[i] ?? (objects.length === 1 ? 'Resource' : `${object.kind}-${object.metadata.name}`);
    const api = new ApiObject(scope, id, object);
    if (chartNamespace !== undefined && object.metadata.namespace === undefined && isClusterScoped(object.apiVersion, object.kind)) {
      api.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
    }
    return api;
  });
}

import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { throwIfInvalid } from '../../lib/model/errors';
import { isClusterScoped } from '../../lib/model/kind-scope';
import { KubeObject } from '../../lib/k8s/object';
import { NameClaims } from '../../lib/model/name-claims';

/** Names claimed in each app (by its root construct). */
const claimed = new WeakMap<IConstruct, NameClaims>();

/**
 * Refuses an object whose kind, namespace and name another component of the same app already
 * synthesizes (two charts with the same pool id would otherwise write two GPUPools of one name),
 * then claims the names for `path`. Called before the component adds anything to the tree.
 */
export function claimNames(scope: IConstruct, path: string, objects: readonly KubeObject[], context: string): void {
  const root = scope.node.root;
  const claims = claimed.get(root) ?? new NameClaims('app', 'synthesizes');
  claimed.set(root, claims);
  throwIfInvalid(claims.claim(path, objects, Chart.of(scope).namespace), context);
}

/**
 * Adds plain objects from lib/render as ApiObjects under `scope`. cdk8s stamps the chart's namespace
 * on every object; cluster-scoped kinds must not carry one, so it is removed from them.
 * @param ids construct ids, one per object; defaults to `Resource` for a single object (cdk8s-plus
 *   style) and `<Kind><name>` otherwise.
 */
export function addObjects(scope: Construct, objects: readonly KubeObject[], ids?: readonly string[]): ApiObject[] {
  const chartNamespace = Chart.of(scope).namespace;
  return objects.map((object, i) => {
    // The namespace is part of the id, as of the Pulumi name: the controller's bundle ConfigMap has one
    // name in its namespace and in the node agent's.
    const ns = object.metadata.namespace ? `${object.metadata.namespace}-` : '';
    const id = ids?.[i] ?? (objects.length === 1 ? 'Resource' : `${object.kind}-${ns}${object.metadata.name}`);
    const api = new ApiObject(scope, id, object);
    if (chartNamespace !== undefined && object.metadata.namespace === undefined && isClusterScoped(object.apiVersion, object.kind)) {
      api.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
    }
    return api;
  });
}

/** The path a construct will have under `scope` with `id` (before it exists). */
export function childPath(scope: IConstruct, id: string): string {
  return scope.node.path ? `${scope.node.path}/${id}` : id;
}

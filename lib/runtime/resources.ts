/**
 * The API resources the controller reads and writes, with what a REST client needs to address them.
 * Kept as a static table (no discovery round trip): the set is fixed by the product.
 */
import { GROUP, VERSION } from '../labels';

/** How to address one kind on the API server. */
export interface ResourceType {
  /** API group; `''` for the core group. */
  readonly group: string;
  readonly version: string;
  /** Lower-case plural used in URLs. */
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** True when `.status` is only writable through the `/status` subresource. */
  readonly statusSubresource: boolean;
  /** Custom resources reject PUT without `metadata.resourceVersion`; core kinds allow it. */
  readonly custom: boolean;
}

function core(plural: string, kind: string, namespaced: boolean, statusSubresource: boolean): ResourceType {
  return { group: '', version: 'v1', plural, kind, namespaced, statusSubresource, custom: false };
}

function tf(plural: string, kind: string, namespaced: boolean): ResourceType {
  return { group: GROUP, version: VERSION, plural, kind, namespaced, statusSubresource: true, custom: true };
}

/** Every resource the runtime touches. */
export const RESOURCES = {
  pods: core('pods', 'Pod', true, true),
  nodes: core('nodes', 'Node', false, true),
  events: core('events', 'Event', true, false),
  leases: {
    group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease',
    namespaced: true, statusSubresource: false, custom: false,
  } as ResourceType,
  gpupools: tf('gpupools', 'GPUPool', false),
  gpunodes: tf('gpunodes', 'GPUNode', false),
  gpus: tf('gpus', 'GPU', false),
  tensorfusionworkloads: tf('tensorfusionworkloads', 'TensorFusionWorkload', true),
  workloadprofiles: tf('workloadprofiles', 'WorkloadProfile', true),
} as const;

/** `apiVersion` string of a resource type (`v1`, `tensor-fusion.ai/v1`). */
export function apiVersionOf(rt: ResourceType): string {
  return rt.group ? `${rt.group}/${rt.version}` : rt.version;
}

/**
 * URL path of a collection or an object.
 * @example resourcePath(RESOURCES.pods, 'default', 'web-0', 'status') // /api/v1/namespaces/default/pods/web-0/status
 */
export function resourcePath(rt: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  let path = rt.group ? `/apis/${rt.group}/${rt.version}` : `/api/${rt.version}`;
  if (rt.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${rt.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}

/** Cache key of an object: `namespace/name` for namespaced objects, `name` otherwise (client-go's format). */
export function keyOf(meta: { namespace?: string; name?: string }): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : `${meta.name}`;
}

/** Splits a cache key back into namespace and name. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

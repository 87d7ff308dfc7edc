/**
 * The API resources the controller reads and writes, with what a REST client needs to address them.
 * Kept as a static table (no discovery round trip): the set is fixed by the product.
 */
import { isClusterScoped } from '../../model/kind-scope';
import { GROUP, VERSION } from '../../model/group';
import { DRA_API_VERSION } from '../../model/dra';

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

/**
 * How to address `kind` of `apiVersion`. Whether it is namespaced is not written here: lib/model/kind-scope.ts
 * is the one home of kind scope (built-in kinds and ours).
 * @example resourceType('apps/v1', 'deployments', 'Deployment', { statusSubresource: true })
 */
export function resourceType(apiVersion: string, plural: string, kind: string, opts: { statusSubresource?: boolean } = {}): ResourceType {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  return {
    group,
    version: apiVersion.slice(slash + 1),
    plural,
    kind,
    namespaced: !isClusterScoped(apiVersion, kind),
    statusSubresource: opts.statusSubresource ?? false,
    custom: group === GROUP,
  };
}

const core = (plural: string, kind: string, statusSubresource: boolean) => resourceType('v1', plural, kind, { statusSubresource });
const tf = (plural: string, kind: string) => resourceType(`${GROUP}/${VERSION}`, plural, kind, { statusSubresource: true });

/** Every resource the runtime touches. */
export const RESOURCES = {
  pods: core('pods', 'Pod', true),
  nodes: core('nodes', 'Node', true),
  events: core('events', 'Event', false),
  leases: resourceType('coordination.k8s.io/v1', 'leases', 'Lease'),
  gpupools: tf('gpupools', 'GPUPool'),
  gpunodes: tf('gpunodes', 'GPUNode'),
  gpus: tf('gpus', 'GPU'),
  tensorfusionworkloads: tf('tensorfusionworkloads', 'TensorFusionWorkload'),
  workloadprofiles: tf('workloadprofiles', 'WorkloadProfile'),
  gpuresourcequotas: tf('gpuresourcequotas', 'GPUResourceQuota'),
  // Dynamic Resource Allocation (GpuPools with shareDelivery DRA; served from Kubernetes 1.34).
  resourceclaimtemplates: resourceType(DRA_API_VERSION, 'resourceclaimtemplates', 'ResourceClaimTemplate'),
  resourceclaims: resourceType(DRA_API_VERSION, 'resourceclaims', 'ResourceClaim', { statusSubresource: true }),
  resourceslices: resourceType(DRA_API_VERSION, 'resourceslices', 'ResourceSlice'),
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

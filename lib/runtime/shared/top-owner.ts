/**
 * The top owner of a pod, as the owner of the TensorFusionWorkload generated for it (upstream does
 * the same): a ReplicaSet's Deployment, a Job's CronJob, else the pod's controller (StatefulSet,
 * DaemonSet, Job, custom), else the pod itself. The Kubernetes garbage collector then deletes the
 * generated workload, and the remote-mode workers it owns, once every owner is gone.
 *
 * ReplicaSets and Jobs are read one by one (a GET by name, remembered by UID: an owner reference
 * never changes its target) rather than watched: the controller needs two of them per workload, not a
 * cache of every ReplicaSet in the cluster.
 */
import { API_VERSION } from '../../model/group';
import type { Cluster, K8sObject } from '../kube/cluster';
import { ResourceType, resourceType } from '../kube/resources';

/** An entry of `metadata.ownerReferences`, as a generated workload carries it. */
export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** The kinds whose own controller is looked up: a ReplicaSet's Deployment, a Job's CronJob. */
export const OWNER_LOOKUPS: ReadonlyMap<string, { resource: ResourceType; parent: string }> = new Map([
  [
    'apps/v1 ReplicaSet',
    {
      resource: resourceType('apps/v1', 'replicasets', 'ReplicaSet', { statusSubresource: true }),
      parent: 'Deployment',
    },
  ],
  [
    'batch/v1 Job',
    {
      resource: resourceType('batch/v1', 'jobs', 'Job', { statusSubresource: true }),
      parent: 'CronJob',
    },
  ],
]);

type Ref = Partial<OwnerReference> & { controller?: boolean };

const toRef = (r: Ref): OwnerReference => ({ apiVersion: r.apiVersion!, kind: r.kind!, name: r.name!, uid: r.uid! });
const complete = (r: Ref | undefined): r is Ref => !!r && !!r.apiVersion && !!r.kind && !!r.name && !!r.uid;

/** The object's controlling owner reference (`controller: true`), when complete. */
export function controllerOf(o: { metadata?: { ownerReferences?: Ref[] } }): Ref | undefined {
  const refs = Array.isArray(o.metadata?.ownerReferences) ? o.metadata!.ownerReferences! : [];
  return refs.find((r) => r?.controller === true && complete(r));
}

/** An owner reference that controls, as the controller writes it (a type, not an interface: it is a plain record). */
export type ControllerRef = { apiVersion: string; kind: string; name: string; uid: string; controller: true; blockOwnerDeletion: true };

/**
 * The controlling owner reference the controller writes on what it makes (a GPUNode of its GPUPool, a
 * GPU of its GPUNode, a worker pod of its TensorFusionWorkload). `blockOwnerDeletion` is why the
 * controller's role needs update on those owners' finalizers subresource (see render/controller/rbac.ts).
 */
export function controllerRefTo(owner: { metadata: { name?: string; uid?: string } }, kind: string): ControllerRef {
  return {
    apiVersion: API_VERSION,
    kind,
    name: owner.metadata.name!,
    uid: String(owner.metadata.uid),
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Resolves top owners through the API, remembering each ReplicaSet's and Job's answer by UID. */
export class TopOwners {
  /** Parent (or null: none) of each ReplicaSet and Job read, by UID; forgotten wholesale past a bound. */
  private readonly parents = new Map<string, OwnerReference | null>();
  private static readonly MAX_REMEMBERED = 10_000;

  constructor(private readonly cluster: Pick<Cluster, 'get'>) {}

  /**
   * The pod's top owner, or undefined when it cannot be told now (the pod has no UID, or the
   * ReplicaSet or Job could not be read: it may be gone, and then so is the pod soon).
   */
  async of(pod: K8sObject): Promise<OwnerReference | undefined> {
    const ref = controllerOf(pod);
    if (!ref) {
      const { name, uid } = pod.metadata;
      return name && uid ? { apiVersion: 'v1', kind: 'Pod', name, uid } : undefined;
    }
    const lookup = OWNER_LOOKUPS.get(`${ref.apiVersion} ${ref.kind}`);
    if (!lookup) return toRef(ref);
    let parent = this.parents.get(ref.uid!);
    if (parent === undefined) {
      const owner = await this.cluster.get(lookup.resource, { namespace: pod.metadata.namespace, name: ref.name! }).catch(() => undefined);
      if (!owner || owner.metadata.uid !== ref.uid) return undefined;
      const up = controllerOf(owner);
      parent = up && up.kind === lookup.parent ? toRef(up) : null;
      if (this.parents.size >= TopOwners.MAX_REMEMBERED) this.parents.clear();
      this.parents.set(ref.uid!, parent);
    }
    return parent ?? toRef(ref);
  }
}

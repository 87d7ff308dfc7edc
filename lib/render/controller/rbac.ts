/**
 * Least-privilege RBAC for the controller pod's ServiceAccount, which both of its containers use.
 * The controller's own rules name every verb and resource (no wildcards), limit writes to Secrets and
 * the webhook configuration by resourceNames, and grant Leases and Secrets by a Role in the
 * controller's namespace only. The kube-scheduler container gets what kube-scheduler documents for a
 * second scheduler: the built-in roles below, plus its own Lease by name.
 */
import { KIND_NAMES, KINDS } from '../../api/kinds';
import { KubeObject } from '../../k8s/object';
import { GROUP } from '../../model/group';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import { ResolvedControllerProps } from './props';

/** One rule of a Role or ClusterRole (rbac.authorization.k8s.io/v1 PolicyRule). */
export interface PolicyRule {
  /** API groups (`''` for the core group). */
  apiGroups: string[];
  /** Resources, e.g. `pods` or `pods/binding`. */
  resources: string[];
  /** Verbs allowed, e.g. `get`, `list`, `watch`. */
  verbs: string[];
  /** Object names the rule is limited to; unset for all. */
  resourceNames?: string[];
}

const RBAC = 'rbac.authorization.k8s.io/v1';
const RBAC_GROUP = 'rbac.authorization.k8s.io';
const READ = ['get', 'list', 'watch'];

/** Built-in ClusterRoles kube-scheduler runs with (bootstrap policy of every cluster). */
export const KUBE_SCHEDULER_CLUSTER_ROLES = ['system:kube-scheduler', 'system:volume-scheduler'] as const;

/**
 * Built-in Role in kube-system that reads the `extension-apiserver-authentication` ConfigMap, which
 * kube-scheduler's delegated authentication of its HTTPS endpoints needs.
 */
export const AUTHENTICATION_READER_ROLE = { namespace: 'kube-system', name: 'extension-apiserver-authentication-reader' } as const;

/** The tensor-fusion.ai resources (plurals) the controller reads and whose status it writes: all of ours. */
export const CONTROLLER_API_RESOURCES: readonly string[] = KIND_NAMES.map((k) => KINDS[k].plural);

/**
 * The tensor-fusion.ai resources whose `.status` the controller writes (PUT to /status). A
 * GPUResourceQuota's status is written by no one else (the quota status policy, quota-status.ts).
 */
export const STATUS_WRITTEN_RESOURCES: readonly string[] = [
  KINDS.GPUPool.plural,
  KINDS.GPUNode.plural,
  KINDS.GPU.plural,
  KINDS.TensorFusionWorkload.plural,
  KINDS.GPUResourceQuota.plural,
];

/**
 * Owners of objects the controller writes with `blockOwnerDeletion: true`: GPUPool (of GPUNodes),
 * GPUNode (of GPUs) and TensorFusionWorkload (of remote-mode worker pods). With the
 * OwnerReferencesPermissionEnforcement admission plugin (OpenShift) such a write needs `update` on
 * the owner's `finalizers` subresource.
 */
export const BLOCKING_OWNER_RESOURCES: readonly string[] = [KINDS.GPUPool.plural, KINDS.GPUNode.plural, KINDS.TensorFusionWorkload.plural];

/**
 * Cluster-wide permissions. In cert-manager mode cainjector, not the controller, patches the webhook.
 * Pod create/delete and node patch are narrowed further by the `tensor-fusion-controller-limits`
 * ValidatingAdmissionPolicies (limits.ts), since RBAC cannot express "only worker pods" or "only our keys".
 */
export function controllerClusterRules(props: Pick<ResolvedControllerProps, 'certificateMode' | 'prometheusUrl'>): PolicyRule[] {
  const rules: PolicyRule[] = [
    // Nodes: read from the cache only (no get); patched for the xgn taint (JSON patch with a
    // resourceVersion test) and the share-released annotation.
    { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch', 'patch'] },
    // Pods: allocations travel in the Binding's annotations; patch is for autoscaling's in-place resize
    // of a share (its record and MPS annotations only, limits.ts). Create and delete are for the worker
    // pods of remote-mode TensorFusionWorkloads, which it owns.
    { apiGroups: [''], resources: ['pods'], verbs: [...READ, 'patch', 'create', 'delete'] },
    // The extender binds (bindVerb): the Binding carries the node and the allocation annotations.
    // Named here although system:kube-scheduler has it too, so the controller never depends on that.
    { apiGroups: [''], resources: ['pods/binding'], verbs: ['create'] },
    // Events are aggregated as client-go's EventRecorder does: create once, then patch the count.
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    // GPUResourceQuotas are read only (and their status written, below): users author them.
    { apiGroups: [GROUP], resources: [...CONTROLLER_API_RESOURCES], verbs: READ },
    // GPUNodes and GPUs mirror the nodes (server-side apply, which creates when absent) and go with
    // them. TensorFusionWorkloads are generated for pods that ask for it (apply), owned by the pods'
    // top owners so that the garbage collector deletes them; the controller deletes only a generated
    // one left with no owner and no pod (lib/runtime/reconcile/generated-workload.ts).
    { apiGroups: [GROUP], resources: [KINDS.GPUNode.plural, KINDS.GPU.plural], verbs: ['create', 'patch', 'delete'] },
    { apiGroups: [GROUP], resources: [KINDS.TensorFusionWorkload.plural], verbs: ['create', 'patch', 'delete'] },
    // A pod's top owner, the owner of its generated workload: a ReplicaSet's Deployment, a Job's CronJob (lib/runtime/shared/top-owner.ts).
    { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] },
    { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get'] },
    // Status is written with PUT to /status (update), resourceVersion as the precondition.
    { apiGroups: [GROUP], resources: STATUS_WRITTEN_RESOURCES.map((r) => `${r}/status`), verbs: ['update'] },
    { apiGroups: [GROUP], resources: BLOCKING_OWNER_RESOURCES.map((r) => `${r}/finalizers`), verbs: ['update'] },
  ];
  if (props.prometheusUrl) {
    // autoSetReplicas: read the owner's replicas, write them through /scale, and stand back when an
    // HPA already targets the owner.
    rules.push(
      { apiGroups: ['apps'], resources: ['deployments', 'statefulsets'], verbs: ['get'] },
      { apiGroups: ['apps'], resources: ['deployments/scale', 'statefulsets/scale'], verbs: ['patch'] },
      { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: ['list'] },
    );
  }
  if (props.certificateMode === 'self-managed') {
    rules.push({
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['mutatingwebhookconfigurations'],
      verbs: ['get', 'patch'],
      resourceNames: [CONTROLLER_NAMES.webhookConfiguration],
    });
  }
  return rules;
}

/**
 * Permissions in the controller's namespace. `create` cannot be limited by resourceNames, so the
 * Lease create is its own rule (its namespace holds nothing else), and the TLS Secret is created
 * empty by the component so the controller never needs `create` on Secrets at all.
 */
export function controllerNamespaceRules(props: Pick<ResolvedControllerProps, 'certificateMode'>): PolicyRule[] {
  const rules: PolicyRule[] = [
    // client-go's LeaseLock protocol: get, create once, then update (PUT) with the resourceVersion.
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: [CONTROLLER_NAMES.lease] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    // The scheduler's lock: system:kube-scheduler allows get/update only on the Lease `kube-scheduler`.
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'update'],
      resourceNames: [CONTROLLER_NAMES.schedulerLease],
    },
  ];
  // In cert-manager mode the Secret is mounted, which needs no RBAC.
  if (props.certificateMode === 'self-managed') {
    // Read, then replaced (PUT) with the resourceVersion as the precondition.
    rules.push({ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'update'], resourceNames: [CONTROLLER_NAMES.tlsSecret] });
  }
  return rules;
}

export function renderRbac(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const name = CONTROLLER_NAMES.controller;
  const { namespace } = props;
  const subjects = [{ kind: 'ServiceAccount', name, namespace }];
  const schedulerBindings: KubeObject[] = KUBE_SCHEDULER_CLUSTER_ROLES.map((role) => ({
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: { name: `${name}-${role.replace(/^system:/, '')}`, labels },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects,
  }));
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels }, automountServiceAccountToken: true },
    { apiVersion: RBAC, kind: 'ClusterRole', metadata: { name, labels }, rules: controllerClusterRules(props) },
    {
      apiVersion: RBAC,
      kind: 'ClusterRoleBinding',
      metadata: { name, labels },
      roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name },
      subjects,
    },
    ...schedulerBindings,
    { apiVersion: RBAC, kind: 'Role', metadata: { name, namespace, labels }, rules: controllerNamespaceRules(props) },
    {
      apiVersion: RBAC,
      kind: 'RoleBinding',
      metadata: { name, namespace, labels },
      roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name },
      subjects,
    },
    {
      apiVersion: RBAC,
      kind: 'RoleBinding',
      metadata: { name: `${name}-authentication-reader`, namespace: AUTHENTICATION_READER_ROLE.namespace, labels },
      roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: AUTHENTICATION_READER_ROLE.name },
      subjects,
    },
  ];
}

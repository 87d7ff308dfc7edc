/**
 * Least-privilege RBAC for the controller: every verb and resource is named (no wildcards), writes
 * to Secrets and the webhook configuration are limited by resourceNames, and Leases and Secrets are
 * granted by a Role in the controller's own namespace only.
 */
import { KIND_NAMES, KINDS } from '../../api/kinds';
import { KubeObject } from '../../k8s-object';
import { GROUP } from '../../labels';
import { CONTROLLER_NAMES } from './names';
import { ResolvedControllerProps } from './props';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

const RBAC = 'rbac.authorization.k8s.io/v1';
const READ = ['get', 'list', 'watch'];

/** The tensor-fusion.ai resources (plurals) the controller reads and whose status it writes: all of ours. */
export const CONTROLLER_API_RESOURCES: readonly string[] = KIND_NAMES.map((k) => KINDS[k].plural);

/** Cluster-wide permissions. In cert-manager mode cainjector, not the controller, patches the webhook. */
export function controllerClusterRules(props: Pick<ResolvedControllerProps, 'certificateMode'>): PolicyRule[] {
  const rules: PolicyRule[] = [
    // Nodes: labels and taints are merged key by key with a resourceVersion precondition (JSON patch).
    { apiGroups: [''], resources: ['nodes'], verbs: [...READ, 'patch'] },
    // Pods: allocations travel in the admission response, so pods are never patched (cluster-wide
    // patch would let the controller swap any pod's image). Create and delete are for the worker pods
    // of remote-mode TensorFusionWorkloads, which the controller owns.
    { apiGroups: [''], resources: ['pods'], verbs: [...READ, 'create', 'delete'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    { apiGroups: [GROUP], resources: [...CONTROLLER_API_RESOURCES], verbs: READ },
    // GPUNodes and GPUs mirror the nodes (server-side apply, which creates when absent) and go with
    // them; TensorFusionWorkloads are generated for pods that ask for it.
    { apiGroups: [GROUP], resources: [KINDS.GPUNode.plural, KINDS.GPU.plural, KINDS.TensorFusionWorkload.plural], verbs: ['create', 'patch', 'delete'] },
    // Status is written with PUT to /status (update), resourceVersion as the precondition.
    { apiGroups: [GROUP], resources: CONTROLLER_API_RESOURCES.map((r) => `${r}/status`), verbs: ['get', 'patch', 'update'] },
  ];
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
    // The per-pool allocation ledgers (`tf-alloc-<pool>`): their names follow the pools, so they
    // cannot be listed by resourceNames; the grant stays inside the controller's namespace.
    { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'patch'] },
  ];
  // In cert-manager mode the Secret is mounted, which needs no RBAC.
  if (props.certificateMode === 'self-managed') {
    rules.push({ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'update', 'patch'], resourceNames: [CONTROLLER_NAMES.tlsSecret] });
  }
  return rules;
}

export function renderRbac(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const name = CONTROLLER_NAMES.controller;
  const { namespace } = props;
  const subjects = [{ kind: 'ServiceAccount', name, namespace }];
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels }, automountServiceAccountToken: true },
    { apiVersion: RBAC, kind: 'ClusterRole', metadata: { name, labels }, rules: controllerClusterRules(props) },
    {
      apiVersion: RBAC, kind: 'ClusterRoleBinding', metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects,
    },
    { apiVersion: RBAC, kind: 'Role', metadata: { name, namespace, labels }, rules: controllerNamespaceRules(props) },
    {
      apiVersion: RBAC, kind: 'RoleBinding', metadata: { name, namespace, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects,
    },
  ];
}

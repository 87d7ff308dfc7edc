import { API_VERSION } from './labels';

/** Kinds that live outside namespaces; their objects never carry `metadata.namespace`. */
export const CLUSTER_SCOPED_KINDS: ReadonlySet<string> = new Set([
  'Namespace', 'Node', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition',
  'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding', 'PriorityClass', 'StorageClass',
  'PersistentVolume', 'ClusterIssuer',
]);

/** Our own cluster-scoped kinds (GPUPool, GPUNode and GPU). */
const OUR_CLUSTER_SCOPED = new Set(['GPUPool', 'GPUNode', 'GPU']);

/** Whether an object of this apiVersion and kind is cluster-scoped. */
export function isClusterScoped(apiVersion: string, kind: string): boolean {
  return apiVersion === API_VERSION ? OUR_CLUSTER_SCOPED.has(kind) : CLUSTER_SCOPED_KINDS.has(kind);
}

/** Where objects of a kind live: in a namespace, or cluster-wide. */
export type Scope = 'Cluster' | 'Namespaced';

/** Built-in (and cert-manager) kinds that live outside namespaces; their objects never carry `metadata.namespace`. */
export const CLUSTER_SCOPED_KINDS: ReadonlySet<string> = new Set([
  'Namespace',
  'Node',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'PriorityClass',
  'StorageClass',
  'PersistentVolume',
  'ClusterIssuer',
  'DeviceClass',
  'ResourceSlice',
]);

/** Well-known label and annotation keys of Kubernetes (and cert-manager) that the package writes or reads. */

/** Recommended Kubernetes labels (app.kubernetes.io/*) put on the controller's objects. */
export const APP_LABELS = {
  name: 'app.kubernetes.io/name',
  component: 'app.kubernetes.io/component',
  partOf: 'app.kubernetes.io/part-of',
  managedBy: 'app.kubernetes.io/managed-by',
} as const;

/** Label the API server puts on every Namespace with the namespace's own name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** Node label holding the node's hostname; the topology key for per-node spreading. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** Namespace label that makes the API server enforce a Pod Security Standards level. */
export const POD_SECURITY_ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce';

/** Annotation asking cert-manager's cainjector to copy a Certificate's CA into a webhook configuration. */
export const CERT_MANAGER_INJECT_CA_ANNOTATION = 'cert-manager.io/inject-ca-from';

/**
 * Names and labels of the controller's objects. The controller is one per cluster (it owns the
 * CRDs and a cluster-wide webhook), so the names are fixed rather than derived from a prop.
 */
import { APP_LABELS } from '../k8s/labels';
import { CONTROLLER_ENV_DEFAULTS } from './env';

/** The kube-scheduler profile (schedulerName) that places GPU pods through our extender. */
export const SCHEDULER_NAME = 'tensor-fusion-scheduler';

/** The PriorityClass the webhook gives a pod of QoS level `qos` (rendered by TensorFusionController). */
export function qosPriorityClassName(qos: string): string {
  return `tensor-fusion-${qos}`;
}

/**
 * The PriorityClass of the growth placeholders (docs/growth.md): below every pod's, so anything
 * displaces them, at cluster-autoscaler's expendable cutoff (-10), so it still scales up for them.
 */
export const GROWTH_PRIORITY_CLASS = { name: 'tensor-fusion-growth-placeholder', value: -10 } as const;

/** The image of a growth placeholder's one container: it only holds room, and never runs on a real node for long. */
export const GROWTH_PLACEHOLDER_IMAGE = 'registry.k8s.io/pause:3.10';

/** Names of the controller's objects (fixed: one controller per cluster). */
export const CONTROLLER_NAMES = {
  /** ServiceAccount, Deployment, PodDisruptionBudget, NetworkPolicy, ClusterRole(Binding) and Role(Binding). */
  controller: 'tensor-fusion-controller',
  webhookService: CONTROLLER_ENV_DEFAULTS.webhookServiceName,
  metricsService: 'tensor-fusion-controller-metrics',
  webhookConfiguration: CONTROLLER_ENV_DEFAULTS.webhookConfigName,
  /** Fully qualified name of the single webhook inside the configuration. */
  webhook: 'pods.tensor-fusion.ai',
  tlsSecret: CONTROLLER_ENV_DEFAULTS.tlsSecretName,
  lease: CONTROLLER_ENV_DEFAULTS.leaderElectionId,
  /** Prefix of the bundle ConfigMap; the name carries the version and digest (see bundleConfigMapName). */
  bundleConfigMap: 'tensor-fusion-controller-bundle',
  /** cert-manager mode: the self-signed Issuer that signs only the CA certificate. */
  issuer: 'tensor-fusion-selfsigned',
  /** cert-manager mode: the CA Certificate (and its Secret), stable across serving-certificate renewals. */
  caCertificate: 'tensor-fusion-webhook-ca',
  /** cert-manager mode: the CA Issuer that signs the serving certificate. */
  caIssuer: 'tensor-fusion-webhook-ca',
  certificate: 'tensor-fusion-webhook',
  /** ConfigMap with the KubeSchedulerConfiguration of the scheduler container. */
  schedulerConfigMap: 'tensor-fusion-scheduler-config',
  /** The scheduler's own leader election Lease (one scheduler, hence one allocator, at a time). */
  schedulerLease: SCHEDULER_NAME,
  /** ValidatingAdmissionPolicy (and its binding) guarding the placement annotations on pods. */
  integrityPolicy: 'tensor-fusion-pod-integrity',
  /** ValidatingAdmissionPolicy (and its binding): no placement records on pods the webhook does not see. */
  recordsPolicy: 'tensor-fusion-pod-records',
  /** ValidatingAdmissionPolicy (and its binding): no placement records or opt-in label in anyone else's Bindings. */
  bindingsPolicy: 'tensor-fusion-pod-bindings',
  /** ValidatingAdmissionPolicy (and its binding): the share resource only on pods the webhook admitted. */
  shareResourcePolicy: 'tensor-fusion-share-resource',
  /** ValidatingAdmissionPolicy (and binding): the only pods the controller may create are workers. */
  workerPodPolicy: 'tensor-fusion-controller-worker-pods',
  /** ValidatingAdmissionPolicy (and binding): which pods it may delete and what it may change on nodes. */
  writeLimitPolicy: 'tensor-fusion-controller-writes',
  /** ValidatingAdmissionPolicy (and binding): a GpuNode manifest labels an existing Node, never creates one. */
  nodeGuardPolicy: 'tensor-fusion-gpu-node-guard',
  /** ValidatingAdmissionPolicy (and binding): only the controller writes the status of GPUResourceQuotas. */
  quotaStatusPolicy: 'tensor-fusion-quota-status',
  /** ConfigMap of the Grafana dashboard (`grafanaDashboard`). */
  dashboard: 'tensor-fusion-dashboard',
  /** PrometheusRule, or ConfigMap with a rule file, of the alert rules (`alertRules`). */
  alertRules: 'tensor-fusion-alerts',
} as const;

/** The official kube-scheduler image; the tag is the `schedulerVersion` prop. */
export const KUBE_SCHEDULER_IMAGE = 'registry.k8s.io/kube-scheduler';

/** Port names on the container, referenced by the Services, probes and NetworkPolicy. */
export const PORT_NAMES = { webhook: 'webhook', metrics: 'metrics', scheduler: 'scheduler' } as const;

/** Labels that select the controller pods. Stable: a Deployment's selector is immutable. */
export const SELECTOR_LABELS: Readonly<Record<string, string>> = {
  [APP_LABELS.name]: CONTROLLER_NAMES.controller,
  [APP_LABELS.component]: 'controller',
};

/** Labels on every object the component creates. */
export const COMMON_LABELS: Readonly<Record<string, string>> = {
  ...SELECTOR_LABELS,
  [APP_LABELS.partOf]: 'tensor-fusion',
  [APP_LABELS.managedBy]: 'tensor-fusion-iac',
};

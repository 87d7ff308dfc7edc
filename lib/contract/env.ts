/**
 * The contract between the TensorFusionController component and the controller process: the
 * environment variables the component sets and the process reads, with the values both assume when
 * a variable is absent. Kept free of imports so that lib/runtime can use it without the render code.
 */

/** Environment variable names read by the controller process. */
export const CONTROLLER_ENV = {
  /** The pod's own name (downward API); the leader election identity. */
  podName: 'POD_NAME',
  /** The pod's namespace (downward API); home of the Lease and the TLS Secret. */
  podNamespace: 'POD_NAMESPACE',
  /** pino log level. */
  logLevel: 'LOG_LEVEL',
  /** Port of the plain-HTTP server for /metrics, /healthz and /readyz. */
  metricsPort: 'METRICS_PORT',
  /** Port of the HTTPS admission webhook server. */
  webhookPort: 'WEBHOOK_PORT',
  /** Port of the plain-HTTP scheduler extender on 127.0.0.1 (called by the kube-scheduler in the same pod). */
  extenderPort: 'EXTENDER_PORT',
  /** Name of the leader election Lease. */
  leaderElectionId: 'LEADER_ELECTION_ID',
  /** Secret holding the webhook CA and serving certificate. */
  tlsSecretName: 'TLS_SECRET_NAME',
  /** MutatingWebhookConfiguration whose caBundle the controller keeps current (self-managed mode). */
  webhookConfigName: 'WEBHOOK_CONFIG_NAME',
  /** Service in front of the webhook; the serving certificate is issued for its DNS names. */
  webhookServiceName: 'WEBHOOK_SERVICE_NAME',
  /**
   * Extra names (DNS names or IP addresses, comma-separated) for the self-managed serving certificate,
   * for a webhook reached by `clientConfig.url` instead of the Service, e.g. a controller run outside
   * the cluster on `https://127.0.0.1:9443`.
   */
  webhookExtraNames: 'WEBHOOK_EXTRA_NAMES',
  /** `self-managed` or `cert-manager`, see {@link CERT_MODES}. */
  certMode: 'CERT_MODE',
  /** Directory of the mounted TLS Secret (cert-manager mode). */
  tlsDir: 'TLS_DIR',
  /** Prometheus HTTP API the recommender reads (prop `prometheusUrl`); absent: autoscaling off. */
  prometheusUrl: 'PROMETHEUS_URL',
  /** `true` or `false`: whether the install runs the node agent (prop `nodeAgent`), which hard isolation needs. */
  nodeAgent: 'NODE_AGENT',
  /** `true` or `false`: whether the ops port serves the read-only web view (prop `webView`). */
  webView: 'WEB_VIEW',
  /** `true` or `false`: whether the install has the DRA objects and role (prop `dra`), so the controller watches ResourceClaims. */
  dra: 'DRA',
} as const;

/** How the webhook's serving certificate is obtained. */
export const CERT_MODES = ['self-managed', 'cert-manager'] as const;
/** A certificate mode: `self-managed` (the controller issues it) or `cert-manager`. */
export type CertificateMode = (typeof CERT_MODES)[number];

/** Log levels the controller accepts (pino's). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
/** A controller log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** What the process assumes when a variable is not set; the component sets the same values explicitly. */
export const CONTROLLER_ENV_DEFAULTS = {
  logLevel: 'info' as LogLevel,
  metricsPort: 8080,
  webhookPort: 9443,
  extenderPort: 8888,
  leaderElectionId: 'tensor-fusion-controller',
  tlsSecretName: 'tensor-fusion-webhook-tls',
  webhookConfigName: 'tensor-fusion-webhook',
  webhookServiceName: 'tensor-fusion-webhook',
  certMode: 'self-managed' as CertificateMode,
  tlsDir: '/tls',
} as const;

/** HTTP paths served by the controller process. */
export const CONTROLLER_PATHS = {
  /** AdmissionReview endpoint on the webhook port. */
  mutatePods: '/mutate-pods',
  /** URL prefix of the scheduler extender; kube-scheduler POSTs to `<prefix>/<verb>`. */
  extender: '/scheduler',
  metrics: '/metrics',
  healthz: '/healthz',
  readyz: '/readyz',
  /** The read-only web view (an HTML page) on the ops port, when `WEB_VIEW` is `true`. */
  view: '/view',
  /** What the web view shows, as JSON (the PoolView of lib/runtime/shared/pool-view.ts). */
  viewJson: '/view.json',
} as const;

/** The verbs the scheduler configuration names (`filterVerb`, ...), appended to the extender's URL prefix. */
export const EXTENDER_VERBS = { filter: 'filter', prioritize: 'prioritize', bind: 'bind' } as const;

/** How long kube-scheduler waits for an extender call (the configuration's `httpTimeout`). */
export const EXTENDER_HTTP_TIMEOUT_SECONDS = 5;

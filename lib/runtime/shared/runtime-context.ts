/**
 * What the runtime's parts (webhook, extender, autoscaler) get from the replica that starts them: the
 * environment, the clients, the caches and the metrics, and the shape of a component. The replica
 * itself (lib/runtime/runtime.ts) sits above the parts and builds this context for them.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { FieldIssue, fieldIssue, throwIfInvalid } from '../../model/errors';
import { CERT_MODES, CertificateMode, CONTROLLER_ENV, CONTROLLER_ENV_DEFAULTS, LOG_LEVELS } from '../../contract/env';
import { oneOf } from '../../model/rules';
import type { Cluster } from '../kube/cluster';
import type { Caches } from './caches';
import type { RuntimeMetrics } from './metrics';

/** A component `main` starts and stops: the ops server, the webhook server, the extender. */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  /** Stops accepting work and drains; called in reverse start order on shutdown. */
  stop(): Promise<void>;
  /** When present, /readyz reports ready only while this returns true. */
  ready?(): boolean;
  /** When present, /healthz fails once this returns false: a failure only a restart repairs. */
  live?(): boolean;
  /** Read-only pages the ops server serves for GET, by path (e.g. the web view). */
  readonly routes?: Readonly<Record<string, GetRoute>>;
}

/** A GET handler of the ops server: the answer's body and content type. */
export type GetRoute = () => Promise<{ readonly contentType: string; readonly body: string }>;

/** The replica's informer caches, and whether they have synced. */
export interface SyncedCaches extends Caches {
  hasSynced(): boolean;
}

/** Settings read from the environment (names and defaults: lib/contract/env.ts). */
export interface RuntimeEnv {
  /** POD_NAME (downward API). @default the host name */
  podName: string;
  /** POD_NAMESPACE (downward API); the Lease and the TLS Secret live here. @default 'default' */
  namespace: string;
  /** NODE_AGENT: whether the install runs the node agent (hard isolation's node side). @default true */
  nodeAgent: boolean;
  /** WEB_VIEW: whether the ops server serves the read-only web view. @default false */
  webView: boolean;
  /** DRA: whether the install serves DRA pools (the controller may read ResourceClaims). @default false */
  dra: boolean;
  /** LOG_LEVEL. @default 'info' */
  logLevel: string;
  /** METRICS_PORT: /metrics, /healthz, /readyz. @default 8080 */
  metricsPort: number;
  /** WEBHOOK_PORT, for the admission webhook component. @default 9443 */
  webhookPort: number;
  /** EXTENDER_PORT, for the scheduler extender on 127.0.0.1. @default 8888 */
  extenderPort: number;
  /** LEADER_ELECTION_ID: the Lease name. @default 'tensor-fusion-controller' */
  leaderElectionId: string;
  /** TLS_SECRET_NAME: the webhook's CA and serving certificate. @default 'tensor-fusion-webhook-tls' */
  tlsSecretName: string;
  /** WEBHOOK_CONFIG_NAME: the MutatingWebhookConfiguration whose caBundle is kept current. */
  webhookConfigName: string;
  /** WEBHOOK_SERVICE_NAME: the Service the serving certificate is issued for. */
  webhookServiceName: string;
  /** WEBHOOK_EXTRA_NAMES: names besides the Service's on the self-managed serving certificate. @default [] */
  webhookExtraNames: string[];
  /** CERT_MODE: `self-managed` or `cert-manager`. */
  certMode: CertificateMode;
  /** TLS_DIR: where cert-manager's Secret is mounted. @default '/tls' */
  tlsDir: string;
}

// pino also accepts 'silent', which tests use.
const ACCEPTED_LOG_LEVELS: readonly string[] = [...LOG_LEVELS, 'silent'];

function port(name: string, raw: string | undefined, fallback: number, issues: FieldIssue[]): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) issues.push(fieldIssue(name, raw, 'a port number from 0 to 65535'));
  return n;
}

/** Reads and validates the environment; throws a ValidationError naming every bad variable. */
export function readEnv(env: NodeJS.ProcessEnv = process.env): RuntimeEnv {
  const E = CONTROLLER_ENV;
  const D = CONTROLLER_ENV_DEFAULTS;
  const issues: FieldIssue[] = [];
  const logLevel = env[E.logLevel] || D.logLevel;
  if (!ACCEPTED_LOG_LEVELS.includes(logLevel)) issues.push(fieldIssue(E.logLevel, logLevel, oneOf(ACCEPTED_LOG_LEVELS)));
  const certMode = (env[E.certMode] || D.certMode) as CertificateMode;
  if (!CERT_MODES.includes(certMode)) issues.push(fieldIssue(E.certMode, certMode, oneOf(CERT_MODES)));
  const flag = (name: string) => {
    const v = env[name];
    if (v && v !== 'true' && v !== 'false') issues.push(fieldIssue(name, v, '"true" or "false"'));
    return v;
  };
  const nodeAgent = flag(E.nodeAgent);
  const out: RuntimeEnv = {
    podName: env[E.podName] || hostname(),
    namespace: env[E.podNamespace] || 'default',
    logLevel,
    metricsPort: port(E.metricsPort, env[E.metricsPort], D.metricsPort, issues),
    webhookPort: port(E.webhookPort, env[E.webhookPort], D.webhookPort, issues),
    extenderPort: port(E.extenderPort, env[E.extenderPort], D.extenderPort, issues),
    leaderElectionId: env[E.leaderElectionId] || D.leaderElectionId,
    tlsSecretName: env[E.tlsSecretName] || D.tlsSecretName,
    webhookConfigName: env[E.webhookConfigName] || D.webhookConfigName,
    webhookServiceName: env[E.webhookServiceName] || D.webhookServiceName,
    webhookExtraNames: (env[E.webhookExtraNames] ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean),
    certMode,
    tlsDir: env[E.tlsDir] || D.tlsDir,
    // Unset (a controller run by hand): assumed present, so no pod is warned about it.
    nodeAgent: nodeAgent !== 'false',
    webView: flag(E.webView) === 'true',
    // Unset (a controller run by hand, or an install from before DRA): no claims are watched.
    dra: flag(E.dra) === 'true',
  };
  throwIfInvalid(issues, 'controller environment');
  return out;
}

/** What the components (webhook, extender, autoscaler) get to work with. */
export interface RuntimeContext {
  env: RuntimeEnv;
  logger: Logger;
  metrics: RuntimeMetrics;
  /** Unfenced client: reads, and writes every replica may do. */
  cluster: Cluster;
  /** Client whose writes fail unless this replica is the leader. */
  leaderCluster: Cluster;
  /** The replica's informer caches (kept by the reconcilers' controller on every replica). */
  caches: SyncedCaches;
  isLeader(): boolean;
}

export type ComponentFactory = (ctx: RuntimeContext) => Component;

/**
 * Wires one controller replica: informers (every replica), leader election (only the leader
 * reconciles and writes, through a fenced client), the ops server, and any extra components such as
 * the admission webhook. main.ts calls {@link startRuntime} with the environment; tests call it with
 * a connection to the API-server double and a manual clock.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import pino, { Logger } from 'pino';
import { FieldIssue, fieldIssue, throwIfInvalid } from '../model/errors';
import { CERT_MODES, CertificateMode, CONTROLLER_ENV, CONTROLLER_ENV_DEFAULTS, LOG_LEVELS } from '../contract/env';
import { oneOf } from '../model/rules';
import { Cluster } from './kube/cluster';
import { Clock, realClock } from './kube/clock';
import { Controller, ControllerOptions } from './controller/controller';
import { HttpCluster, Connection } from './kube/http-cluster';
import { LeaderElector, LeaderElectionOptions, fenceWrites } from './kube/leader-election';
import { RuntimeMetrics } from './metrics';
import { Component, OpsServer } from './ops-server';

/** Settings read from the environment (names and defaults: lib/contract/env.ts). */
export interface RuntimeEnv {
  /** POD_NAME (downward API). @default the host name */
  podName: string;
  /** POD_NAMESPACE (downward API); the Lease and the TLS Secret live here. @default 'default' */
  namespace: string;
  /** NODE_AGENT: whether the install runs the node agent (hard isolation's node side). @default true */
  nodeAgent: boolean;
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
  const nodeAgent = env[E.nodeAgent];
  if (nodeAgent && nodeAgent !== 'true' && nodeAgent !== 'false') issues.push(fieldIssue(E.nodeAgent, nodeAgent, '"true" or "false"'));
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
  };
  throwIfInvalid(issues, 'controller environment');
  return out;
}

/** What extra components (the webhook) get to work with. */
export interface RuntimeContext {
  env: RuntimeEnv;
  logger: Logger;
  metrics: RuntimeMetrics;
  /** Unfenced client: reads, and writes every replica may do. */
  cluster: Cluster;
  /** Client whose writes fail unless this replica is the leader. */
  leaderCluster: Cluster;
  controller: Controller;
  isLeader(): boolean;
}

export type ComponentFactory = (ctx: RuntimeContext) => Component;

export interface StartOptions {
  env: RuntimeEnv;
  connection: Connection;
  /** Extra components, e.g. the webhook HTTPS server, started after the ops server. */
  components?: ComponentFactory[];
  clock?: Clock;
  logger?: Logger;
  leaderElection?: Partial<Pick<LeaderElectionOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>>;
  controller?: Partial<Pick<ControllerOptions, 'informer' | 'queue' | 'workers' | 'usage'>>;
  /** Also collect process metrics. @default false */
  processMetrics?: boolean;
}

export interface Runtime {
  ctx: RuntimeContext;
  elector: LeaderElector;
  ops: OpsServer;
  /** Resolves when leadership is lost ('lost') or the runtime was stopped ('stopped'). */
  done: Promise<'lost' | 'stopped'>;
  /** Graceful stop: not ready, stop reconciling, release the lease, stop servers. */
  stop(): Promise<void>;
}

/**
 * The checks behind /readyz and /healthz. Readiness decides whether the webhook Service sends
 * admissions to this replica, so it holds only what the components need to serve (the webhook: its
 * caches synced, a certificate, listening), never the health of every watch: one broken watch of a
 * kind admission does not read would take every replica out of the Service at once and, with
 * failurePolicy Fail, stop all opted-in pod creation. Watch health is in the metrics
 * (tf_controller_watch_restarts_total). Without components, readiness is the caches synced.
 * Liveness fails when a component cannot recover on its own (a webhook that failed to start).
 */
export function probes(
  components: readonly Component[],
  controller: Pick<Controller, 'hasSynced'>,
  stopping: () => boolean,
): { readiness: Record<string, () => boolean>; liveness: Record<string, () => boolean> } {
  const readiness: Record<string, () => boolean> = {};
  const liveness: Record<string, () => boolean> = {};
  for (const c of components) {
    if (c.ready) readiness[c.name] = () => !stopping() && c.ready!();
    if (c.live) liveness[c.name] = () => c.live!();
  }
  if (Object.keys(readiness).length === 0) readiness.informers = () => !stopping() && controller.hasSynced();
  return { readiness, liveness };
}

/** Starts a replica. The caller exits the process when `done` resolves 'lost'. */
export async function startRuntime(opts: StartOptions): Promise<Runtime> {
  const { env } = opts;
  const clock = opts.clock ?? realClock;
  const logger = opts.logger ?? pino({ level: env.logLevel, base: { pod: env.podName } });
  const metrics = new RuntimeMetrics();
  if (opts.processMetrics) metrics.withDefaultMetrics();
  const cluster = new HttpCluster({ userAgent: `tensor-fusion-controller/${env.podName}`, ...opts.connection });
  const controller = new Controller({ cluster, clock, logger, metrics, ...opts.controller });
  const abort = new AbortController();
  let stopping = false;
  const elector: LeaderElector = new LeaderElector({
    cluster,
    clock,
    logger,
    namespace: env.namespace,
    name: env.leaderElectionId,
    identity: `${env.podName}_${randomUUID()}`,
    ...opts.leaderElection,
    onStartedLeading: () => {
      metrics.isLeader.set(1);
      void controller.startReconciling(leaderCluster);
    },
    onStoppedLeading: () => {
      metrics.isLeader.set(0);
      // Writes are already refused by the fence; stop reconciling at once.
      controller.queue.shutDown();
    },
  });
  const leaderCluster = fenceWrites(cluster, () => !stopping && elector.isLeader());
  const ctx: RuntimeContext = { env, logger, metrics, cluster, leaderCluster, controller, isLeader: () => elector.isLeader() };
  const extras = (opts.components ?? []).map((f) => f(ctx));
  const ops = new OpsServer({ port: env.metricsPort, registry: metrics.registry, ...probes(extras, controller, () => stopping) });
  const components: Component[] = [ops, ...extras];
  for (const c of components) await c.start();
  controller.startInformers();
  const done = elector.run(abort.signal);
  logger.info({ namespace: env.namespace, lease: env.leaderElectionId, components: components.map((c) => c.name) }, 'controller started');
  return {
    ctx,
    elector,
    ops,
    done,
    async stop() {
      stopping = true;
      abort.abort();
      await controller.stop();
      await done;
      await elector.release();
      for (const c of [...components].reverse()) await c.stop();
      metrics.isLeader.set(0);
    },
  };
}

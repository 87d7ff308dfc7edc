/**
 * Wires one controller replica: informers (every replica), leader election (only the leader
 * reconciles and writes, through a fenced client), the ops server, and any extra components such as
 * the admission webhook. main.ts calls {@link startRuntime} with the environment; tests call it with
 * a connection to the API-server double and a manual clock.
 */
import { randomUUID } from 'node:crypto';
import pino, { Logger } from 'pino';
import { Clock, realClock } from './kube/clock';
import { Controller, ControllerOptions } from './reconcile/controller';
import { HttpCluster, Connection } from './kube/http-cluster';
import { LeaderElector, LeaderElectionOptions, fenceWrites } from './kube/leader-election';
import { RuntimeMetrics } from './shared/metrics';
import { OpsServer } from './serving/ops-server';
import { Component, ComponentFactory, RuntimeContext, RuntimeEnv } from './shared/runtime-context';

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
  /** The reconcilers (they act only while this replica leads) and the caches they keep. */
  controller: Controller;
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
  const controller = new Controller({ cluster, clock, logger, metrics, dra: env.dra, ...opts.controller });
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
  const ctx: RuntimeContext = { env, logger, metrics, cluster, leaderCluster, caches: controller, isLeader: () => elector.isLeader() };
  const extras = (opts.components ?? []).map((f) => f(ctx));
  const ops = new OpsServer({
    port: env.metricsPort,
    registry: metrics.registry,
    routes: Object.assign({}, ...extras.map((c) => c.routes ?? {})),
    ...probes(extras, controller, () => stopping),
  });
  const components: Component[] = [ops, ...extras];
  for (const c of components) await c.start();
  controller.startInformers();
  const done = elector.run(abort.signal);
  logger.info({ namespace: env.namespace, lease: env.leaderElectionId, components: components.map((c) => c.name) }, 'controller started');
  return {
    ctx,
    controller,
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

/**
 * Wires the webhook: informer-backed view, TLS source and the HTTPS server, plus the leader's loops
 * (certificate renewal, remote-mode worker pods). Every replica serves admissions, which read caches
 * and write nothing; only the leader renews certificates and keeps remote-mode worker pods.
 */
import type { Logger } from 'pino';
import { ENABLED_LABEL } from '../../model/metadata-keys';
import { CONTROLLER_PATHS } from '../../contract/env';
import { CONTROLLER_METRICS } from '../../contract/metrics';
import type { Cluster, K8sObject } from '../kube/cluster';
// The controller's pod cache form (a superset of what the worker plan reads): one slimPod for both caches.
import { slimPod } from '../shared/caches';
import { Informer, InformerOptions } from '../kube/informer';
import { callMetrics, type RuntimeMetrics } from '../shared/metrics';
import { RESOURCES } from '../kube/resources';
import type { RuntimeEnv } from '../shared/runtime-context';
import { admitPod } from './admit';
import { createViewInformers, InformerView, ViewInformers } from './cluster-view';
import { DecisionCache } from './decision-cache';
import { AdmissionRequest, AdmissionReview, answerReview, responseOf } from './review';
import { ClaimTemplates } from './claim-template';
import { AdmissionServer, AdmissionServerOptions } from './admission-server';
import { FileTlsSource, SelfManagedTlsSource, TlsSource } from '../serving/tls';
import { planWorkers } from './workers';
import { serviceDnsNames } from '../../k8s/names';

/** The webhook's settings, as the runtime reads them from the environment (CONTROLLER_ENV). */
export type WebhookEnv = Pick<
  RuntimeEnv,
  'webhookPort' | 'certMode' | 'tlsDir' | 'tlsSecretName' | 'webhookConfigName' | 'webhookServiceName'
> &
  Partial<Pick<RuntimeEnv, 'webhookExtraNames' | 'nodeAgent'>>;

export interface StartWebhookOptions {
  /** Unfenced client: reads on a cache miss, TLS, and (leader only) remote-mode worker pods. */
  cluster: Cluster;
  /** The controller's namespace: the TLS Secret lives here. */
  namespace: string;
  /** From the runtime's `readEnv()`. */
  env: WebhookEnv;
  isLeader: () => boolean;
  logger?: Logger;
  metrics?: RuntimeMetrics;
  /** @default '0.0.0.0' */
  host?: string;
  /** Share the controller's informers for the kinds it already watches (pods: for the workers). */
  informers?: Partial<ViewInformers> & { pods?: Informer<K8sObject> };
  informerOptions?: InformerOptions<K8sObject>;
  /** Replaces the TLS source chosen by `env.certMode` (tests). */
  tls?: TlsSource;
  /** How often the TLS source is polled (and renewed by the leader). @default 10000 */
  tlsPollMs?: number;
  /** Self-managed mode: wait after publishing a new CA before using it. @default 30000 */
  caPropagationMs?: number;
  /** How often the leader keeps remote-mode worker pods. @default 30000 */
  workerSyncIntervalMs?: number;
  /** Grace for in-flight reviews on close. @default 10000 */
  drainMs?: number;
}

export interface WebhookHandle {
  /** True while serving: caches synced, certificate loaded, listening. For /readyz. */
  ready(): boolean;
  /** Resolves once ready. */
  whenReady(): Promise<void>;
  /** The HTTPS port (useful with port 0). */
  port(): number;
  /** Decides one review without HTTP (benchmarks, tests). */
  handle(review: AdmissionReview): Promise<AdmissionReview>;
  /** Leader: creates and deletes remote-mode worker pods so each remote workload has its replicas. */
  syncWorkers(): Promise<{ created: number; deleted: number }>;
  readonly tls: TlsSource;
  /** Drains and stops everything this call started. */
  close(): Promise<void>;
}

/** Counts and times each admission review, by outcome; nothing without metrics. */
function admissionObserver(metrics?: RuntimeMetrics): NonNullable<AdmissionServerOptions['observe']> {
  if (!metrics) return () => {};
  const m = callMetrics(
    metrics.registry,
    { name: CONTROLLER_METRICS.webhookAdmissions, help: 'Admission reviews by outcome.', labelNames: ['outcome'] },
    { name: CONTROLLER_METRICS.webhookSeconds, help: 'Time to answer one admission review.', labelNames: ['outcome'] },
  );
  return (outcome, s) => {
    m.calls.inc({ outcome });
    m.seconds.observe({ outcome }, s);
  };
}

/** The informers the webhook reads: the view's (own or shared with the controller) and the pods the worker plan reads. */
function webhookInformers(opts: StartWebhookOptions) {
  const { cluster } = opts;
  const created = createViewInformers(cluster, opts.informerOptions);
  const informers: ViewInformers = { ...created, ...opts.informers };
  const own = (Object.keys(created) as (keyof ViewInformers)[])
    .filter((k) => !opts.informers?.[k])
    .map((k) => created[k] as unknown as Informer<K8sObject>);
  const view = new InformerView(
    cluster,
    { pools: informers.pools, profiles: informers.profiles, workloads: informers.workloads, quotas: informers.quotas },
    opts.env.nodeAgent ?? true,
  );
  const ownPods = opts.informers?.pods
    ? undefined
    : new Informer<K8sObject>(cluster, RESOURCES.pods, {
        ...opts.informerOptions,
        labelSelector: `${ENABLED_LABEL}=true`,
        transform: slimPod,
      });
  const pods = opts.informers?.pods ?? ownPods!;
  if (ownPods) own.push(ownPods);
  return { informers, view, pods, own };
}

/** The TLS source `env.certMode` names: the mounted Secret (cert-manager) or our own CA. */
function tlsSourceFor(opts: StartWebhookOptions): TlsSource {
  const { env, cluster, namespace, logger } = opts;
  return (
    opts.tls ??
    (env.certMode === 'cert-manager'
      ? new FileTlsSource(env.tlsDir, logger)
      : new SelfManagedTlsSource({
          cluster,
          namespace,
          secretName: env.tlsSecretName,
          webhookConfigName: env.webhookConfigName,
          dnsNames: [...serviceDnsNames(env.webhookServiceName, namespace), ...(env.webhookExtraNames ?? [])],
          isLeader: opts.isLeader,
          logger,
          caPropagationMs: opts.caPropagationMs,
        }))
  );
}

/** One pass of the leader's worker loop: creates and deletes pods so each remote workload has its replicas. */
async function syncWorkerPods(
  cluster: Cluster,
  workloads: ViewInformers['workloads'],
  view: InformerView,
  pods: Informer<K8sObject>,
  logger?: Logger,
): Promise<{ created: number; deleted: number }> {
  let created = 0;
  let deleted = 0;
  for (const wl of workloads.list()) {
    if (wl.spec?.isLocalGPU !== false || wl.metadata.deletionTimestamp) continue;
    const ns = wl.metadata.namespace as string;
    const plan = planWorkers(
      wl,
      view.pool(String(wl.spec.poolName ?? '')),
      pods.list().filter((p) => p.metadata.namespace === ns),
    );
    if (plan.problem) logger?.warn({ workload: `${ns}/${wl.metadata.name}` }, plan.problem);
    for (const name of plan.delete) if (await cluster.delete(RESOURCES.pods, { namespace: ns, name })) deleted++;
    for (const pod of plan.create) {
      try {
        await cluster.create(RESOURCES.pods, pod);
        created++;
      } catch (err) {
        // Denied (e.g. by a quota) or already there: the next pass tries again; the rest would likely fail alike.
        logger?.info({ pod: `${ns}/${pod.metadata.name}`, err: String(err) }, 'worker pod not created');
        break;
      }
    }
  }
  return { created, deleted };
}

/** Polls `tls` until it has a certificate (or the webhook is closed). */
async function waitForCertificate(tls: TlsSource, closed: () => boolean, pollMs: number, logger?: Logger): Promise<void> {
  while (!closed() && !tls.current()) {
    await tls.tick().catch((err) => logger?.warn({ err: String(err) }, 'TLS not available yet'));
    if (!tls.current()) await new Promise((r) => setTimeout(r, Math.min(pollMs, 1_000)));
  }
}

/** Runs `fn` every `ms` (skipping a beat while the last run is still going); the timer goes to `timers`. */
function every(timers: NodeJS.Timeout[], ms: number, fn: () => Promise<unknown>, logger?: Logger): void {
  let busy = false;
  const t = setInterval(() => {
    if (busy) return;
    busy = true;
    fn()
      .catch((err) => logger?.warn({ err: String(err) }, 'webhook background task failed'))
      .finally(() => (busy = false));
  }, ms);
  t.unref();
  timers.push(t);
}

/** The loops the webhook runs once serving: TLS polling (renewal by the leader) and the leader's worker pods. */
function startLoops(timers: NodeJS.Timeout[], opts: StartWebhookOptions, tls: TlsSource, syncWorkers: () => Promise<unknown>): void {
  every(timers, opts.tlsPollMs ?? 10_000, () => tls.tick(), opts.logger);
  every(
    timers,
    opts.workerSyncIntervalMs ?? 30_000,
    async () => {
      if (opts.isLeader()) await syncWorkers();
    },
    opts.logger,
  );
}

/**
 * Starts the webhook on this replica. Returns at once; `whenReady()` resolves when it serves.
 * @example
 * const webhook = startWebhook({ cluster, namespace: env.namespace, isLeader: () => elector.isLeader(), logger, metrics });
 */
export function startWebhook(opts: StartWebhookOptions): WebhookHandle {
  const { env, cluster, logger } = opts;
  const observe = admissionObserver(opts.metrics);
  const { informers, view, pods, own: ownInformers } = webhookInformers(opts);
  // The replicas of one template are decided once, until a cache the decisions read changes.
  const decisions = new DecisionCache();
  const changed = () => decisions.invalidate();
  const { quotas, ...others } = view.informers;
  for (const i of Object.values(others)) i.on({ add: changed, update: changed, delete: changed });
  // Admission reads a quota's spec only, and its status is rewritten as pods are placed.
  quotas.on({ add: changed, delete: changed, update: (old, cur) => JSON.stringify(old.spec) !== JSON.stringify(cur.spec) && changed() });
  const templates = new ClaimTemplates(cluster);
  const decide = async (req: AdmissionRequest) => responseOf(await templates.ensure(await admitPod(req, view), req.dryRun === true));
  const handle = async (review: AdmissionReview) =>
    answerReview(review, await decisions.answer(review.request!, () => decide(review.request!)));
  const tls = tlsSourceFor(opts);

  let server: AdmissionServer | undefined;
  let closed = false;
  let serving = false;
  const timers: NodeJS.Timeout[] = [];
  tls.onChange((pair) => server?.setCertificate(pair));
  const syncWorkers = () => syncWorkerPods(cluster, informers.workloads, view, pods, logger);

  for (const i of ownInformers) i.start();
  const ready = (async () => {
    await Promise.all([...view.informerList(), pods].map((i) => i.waitForSync()));
    await waitForCertificate(tls, () => closed, opts.tlsPollMs ?? 10_000, logger);
    if (closed) return;
    server = new AdmissionServer({
      path: CONTROLLER_PATHS.mutatePods,
      port: env.webhookPort,
      host: opts.host,
      tls: tls.current()!,
      handle,
      logger,
      observe,
    });
    await server.listen();
    serving = true;
    startLoops(timers, opts, tls, syncWorkers);
    logger?.info({ port: server.port, certMode: env.certMode }, 'admission webhook serving');
  })();
  ready.catch((err) => logger?.error({ err: String(err) }, 'admission webhook failed to start'));

  return {
    ready: () => serving && !closed && view.synced(),
    whenReady: () => ready,
    port: () => server?.port ?? 0,
    handle,
    syncWorkers,
    tls,
    async close() {
      closed = true;
      for (const t of timers) clearInterval(t);
      await server?.close(opts.drainMs ?? 10_000);
      serving = false;
      await Promise.all(ownInformers.map((i) => i.stop()));
    },
  };
}

/**
 * The scheduler extender as a runtime component (`COMPONENTS` in main.ts), on every replica: only the
 * replica whose kube-scheduler holds the scheduler lease is called, so one allocator decides at a
 * time. It reads the controller's informers and binds through the unfenced client (binding does not
 * depend on the controller's own leadership).
 */
import { hostname } from 'os';
import { Counter, Gauge, Registry } from 'prom-client';
import { CONTROLLER_PATHS } from '../../contract/env';
import { CONTROLLER_METRICS, EXTENDER_FAILURE_OUTCOME } from '../../contract/metrics';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import type { K8sObject } from '../kube/cluster';
import type { Informer } from '../kube/informer';
import type { Lease } from '../kube/leader-election';
import { RESOURCES } from '../kube/resources';
import { callMetrics } from '../shared/metrics';
import type { Component, RuntimeContext } from '../shared/runtime-context';
import { Extender } from './extender';
import { holdsSchedulerLease, schedulerTenure } from './lease-holder';
import { RetrySignal } from './retry-signal';
import { ExtenderServer } from './extender-server';
import { PlacementState } from './placement-state';

/** An extender called within this window is the one its (leading) scheduler uses. */
const ACTIVE_WINDOW_MS = 30_000;
/** How often the pods we turned away are checked against the room we have (Extender.sweep). */
const SWEEP_MS = 5_000;

export interface ExtenderComponent extends Component {
  ready(): boolean;
  /** The bound port (useful with port 0). */
  port(): number;
  readonly state: PlacementState;
}

/**
 * Work that runs beside the extender while it serves, and acts only while its allocator is the one in
 * use (`inUse`): the autoscaler's in-place resizer, wired by main.ts. Returns its stop function.
 */
export type AlongsideExtender = (state: PlacementState, inUse: () => Promise<boolean>) => () => Promise<void>;

export interface ExtenderComponentOptions {
  /** Started with the extender, stopped before it. @default none */
  alongside?: AlongsideExtender;
}

export function extenderComponent(ctx: RuntimeContext, opts: ExtenderComponentOptions = {}): ExtenderComponent {
  const c = ctx.caches;
  const logger = ctx.logger.child({ component: 'extender' });
  const pods = c.pods as unknown as Informer<K8sObject>;
  // Only the extender in use signals room (a replica that is not the scheduling leader would only
  // double the writes), a quiet one too, and only while a pod it turned away may be waiting.
  const signal = new RetrySignal({
    cluster: ctx.cluster,
    logger,
    active: async () => extender.hasWaiting() && (await extenderInUse()),
    sent: (at) => extender.announced(at),
  });
  const swept = new Counter({
    name: CONTROLLER_METRICS.extenderSweeps,
    registers: [ctx.metrics.registry],
    help: 'Nodes stamped by the sweep: room for a pod turned away since the last stamp was sent (or a minute before), with no stamp under way.',
  });
  const state = new PlacementState({
    sources: {
      nodes: c.nodes as unknown as Informer<K8sObject>,
      pools: c.pools,
      gpuNodes: c.gpuNodes,
      gpus: c.gpus,
      pods,
      quotas: c.quotas,
      // Started only where the install has `dra` (empty, and never synced, elsewhere).
      ...(ctx.env.dra ? { claims: c.claims } : {}),
    },
    onRoom: (node) => signal.roomAt(node),
  });
  const extender: Extender = new Extender({
    state,
    cluster: ctx.cluster,
    pods,
    logger,
    schedulerTenure: async () => schedulerTenure(await schedulerLease(ctx), hostname(), Date.now()),
  });
  const extenderInUse = inUse(ctx, extender);
  // Counted when scraped: the pods turned away are the extender's own record, nothing to keep in step.
  new Gauge({
    name: CONTROLLER_METRICS.pendingGpuPods,
    help: 'GPU pods this extender turned away that still wait, by pool and reason (InsufficientTflops, OverQuota, ...).',
    labelNames: ['pool', 'reason'] as const,
    registers: [ctx.metrics.registry],
    collect() {
      this.reset();
      for (const w of extender.waiting()) this.set({ pool: w.pool, reason: w.reason }, w.pods);
    },
  });
  const server = new ExtenderServer({
    extender,
    prefix: CONTROLLER_PATHS.extender,
    port: ctx.env.extenderPort,
    logger,
    observe: callObserver(ctx.metrics.registry),
  });
  let listening = false;
  let stopAlongside: (() => Promise<void>) | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  return {
    name: 'extender',
    state,
    async start() {
      await server.listen();
      listening = true;
      stopAlongside = opts.alongside?.(state, extenderInUse);
      // Announcements of room are edges a race can lose; this level check bounds the wait that costs.
      sweeper = setInterval(() => {
        // An announcement on its way retries the waiting pods anyway.
        if (signal.busy()) return;
        const node = extender.sweep();
        if (node === undefined) return;
        swept.inc();
        logger.info({ node }, 'room for a pod turned away since the last stamp found by the sweep; stamping its node');
        signal.roomAt(node);
      }, SWEEP_MS);
      logger.info({ port: server.port }, 'scheduler extender serving');
    },
    async stop() {
      listening = false;
      clearInterval(sweeper);
      signal.stop();
      await stopAlongside?.();
      await server.close();
    },
    // Answers need the GPU topology and the pods (and DRA claims, to score DRA pods): only once the caches are synced.
    ready: () =>
      listening && [c.nodes, c.pools, c.gpuNodes, c.gpus, c.pods, c.quotas, ...(ctx.env.dra ? [c.claims] : [])].every((i) => i.hasSynced()),
    port: () => server.port,
  };
}

/** Counts and times each extender call, by verb. */
function callObserver(registry: Registry): (verb: string, seconds: number, ok: boolean) => void {
  const m = callMetrics(
    registry,
    { name: CONTROLLER_METRICS.extenderCalls, help: 'Scheduler extender calls by verb and outcome.', labelNames: ['verb', 'outcome'] },
    { name: CONTROLLER_METRICS.extenderSeconds, help: 'Time to answer one extender call.', labelNames: ['verb'] },
  );
  return (verb, s, ok) => {
    m.calls.inc({ verb, outcome: ok ? 'ok' : EXTENDER_FAILURE_OUTCOME });
    m.seconds.observe({ verb }, s);
  };
}

/**
 * Whether this replica's allocator is the one in use: its scheduler called it lately or holds the
 * scheduler Lease (a quiet cluster makes no calls).
 */
function inUse(ctx: RuntimeContext, extender: Extender): () => Promise<boolean> {
  return async () => extender.calledWithin(ACTIVE_WINDOW_MS) || holdsSchedulerLease(await schedulerLease(ctx), hostname(), Date.now());
}

/** The scheduler Lease as the API server has it now; undefined when it cannot be read. */
function schedulerLease(ctx: RuntimeContext): Promise<Lease | undefined> {
  return ctx.cluster
    .get<Lease>(RESOURCES.leases, { namespace: ctx.env.namespace, name: CONTROLLER_NAMES.schedulerLease })
    .catch(() => undefined);
}

/**
 * Process entry of the runtime controller (bundled to build/controller/controller.js; the node agent
 * has a bundle of its own, from lib/runtime/agent-main.ts).
 * Environment: see CONTROLLER_ENV in lib/contract/env.ts; cluster access from the in-cluster
 * service account or KUBECONFIG.
 */
import pino from 'pino';
import { loadConnection } from './kube/kubeconfig';
import { startRuntime } from './runtime';
import { ComponentFactory, readEnv } from './shared/runtime-context';
import { extenderComponent } from './extender/component';
import { webhookComponent } from './webhook';
import { usageFromAllocations } from './shared/allocated-usage';
import { autoscaleComponent } from './autoscale/component';
import { startResizer } from './autoscale/resize-component';
import { viewComponent } from './view/component';

/**
 * Components started next to the controller, on every replica: the admission webhook, the
 * scheduler extender that the kube-scheduler in the same pod calls, with autoscaling's in-place
 * resizer beside it (resizes go through that allocator, so only while it is the one in use), and the
 * autoscaling recommender (which acts only on the leader), and the read-only web view when on.
 */
export const COMPONENTS: ComponentFactory[] = [
  webhookComponent,
  (ctx) => extenderComponent(ctx, { alongside: (state, inUse) => startResizer(ctx, state, inUse) }),
  (ctx) => autoscaleComponent(ctx),
  (ctx) => viewComponent(ctx),
];

/** Grace for endpoints to drop this pod before servers close (webhook callers keep using it briefly). */
const SHUTDOWN_DRAIN_MS = 5_000;

async function main(): Promise<void> {
  const env = readEnv();
  const logger = pino({ level: env.logLevel, base: { pod: env.podName } });
  const connection = await loadConnection(`tensor-fusion-controller/${env.podName}`);
  const runtime = await startRuntime({
    env,
    connection,
    logger,
    components: COMPONENTS,
    processMetrics: true,
    // GPU status shows what the webhook allocated, read from the pods' allocation annotations.
    controller: { usage: usageFromAllocations },
  });
  let shuttingDown = false;
  process.on('SIGTERM', () => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info('SIGTERM: draining');
    setTimeout(
      () => {
        runtime.stop().then(
          () => process.exit(0),
          (err) => {
            logger.error({ err: String(err) }, 'shutdown failed');
            process.exit(1);
          },
        );
      },
      env.webhookPort && COMPONENTS.length ? SHUTDOWN_DRAIN_MS : 0,
    ).unref();
  });
  const outcome = await runtime.done;
  if (outcome === 'lost' && !shuttingDown) {
    // Fencing by exit: in-flight promises cannot be cancelled, so a replica that lost the lease ends now.
    logger.fatal('leader election lost; exiting');
    process.exit(1);
  }
}

if (require.main === module) {
  main().catch((err) => {
    // eslint-disable-next-line no-console
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

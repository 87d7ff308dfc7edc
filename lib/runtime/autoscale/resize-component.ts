/**
 * The in-place resizer beside the scheduler extender (started with it by main.ts on every replica):
 * it acts only while this replica's extender is the one its kube-scheduler calls.
 */
import type { K8sObject } from '../kube/cluster';
import { INDEX_BY_WORKLOAD } from '../shared/caches';
import type { RuntimeContext } from '../shared/runtime-context';
import type { Workload } from './loop';
import { ResizablePlacement, ShareResizer } from './resize';

/** How often bound pods are compared with their workload's recommendation (in memory unless one differs). */
export const RESIZE_INTERVAL_MS = 10_000;

/** Starts the resizer's timer; the returned function stops it and waits for a pass under way. */
export function startResizer(
  ctx: RuntimeContext,
  state: ResizablePlacement,
  active: () => boolean | Promise<boolean>,
): () => Promise<void> {
  const c = ctx.caches;
  const resizer = new ShareResizer({
    cluster: ctx.cluster,
    state,
    active,
    workloads: () => c.workloads.list() as Workload[],
    pods: (key) => c.pods.byIndex(INDEX_BY_WORKLOAD, key) as K8sObject[],
    logger: ctx.logger.child({ component: 'resize' }),
  });
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running || !c.hasSynced()) return;
    running = resizer.tick().finally(() => {
      running = undefined;
    });
  }, RESIZE_INTERVAL_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

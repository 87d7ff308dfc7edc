/**
 * The recommender loop as a controller component: started on every replica, it ticks only while this
 * replica leads, and writes only through the leader-fenced client.
 */
import { parseQuantity } from '../../k8s/quantity';
import { CONTROLLER_ENV } from '../../contract/env';
import { INDEX_BY_WORKLOAD } from '../shared/caches';
import type { Component, RuntimeContext } from '../shared/runtime-context';
import { defaultPoolOf } from '../shared/settings-view';
import { AutoscaleLoop, SAMPLE_STEP_S, Workload } from './loop';
import { PrometheusClient } from '../shared/prometheus';
import { scaleClient } from './scale';

/** How often the loop runs: once per sample step. */
export const AUTOSCALE_INTERVAL_MS = SAMPLE_STEP_S * 1000;

/**
 * What the pool can still hold: the replicas there are plus as many as its unallocated TFLOPS fit
 * at the workload's request (GPUPool status.availableTFlops; spec.resources.requests.tflops × gpuCount).
 */
export function poolBound(ctx: RuntimeContext, wl: Workload, current: number): number {
  const pools = ctx.caches.pools.list();
  const name = wl.spec?.poolName ?? defaultPoolOf(pools);
  const pool = pools.find((p) => p.metadata.name === name);
  const available = parseQuantity(String(pool?.status?.availableTFlops ?? '0')) ?? 0;
  const perReplica = (parseQuantity(String(wl.spec?.resources?.requests.tflops ?? '0')) ?? 0) * (wl.spec?.gpuCount ?? 1);
  return perReplica > 0 ? current + Math.floor(available / perReplica) : current;
}

export function autoscaleComponent(ctx: RuntimeContext, env: NodeJS.ProcessEnv = process.env): Component {
  const url = env[CONTROLLER_ENV.prometheusUrl];
  const loop = new AutoscaleLoop({
    cluster: ctx.leaderCluster,
    prometheus: url ? new PrometheusClient(url) : undefined,
    scale: scaleClient(ctx.leaderCluster),
    workloads: () => ctx.caches.workloads.list() as Workload[],
    podNames: (key) => ctx.caches.pods.byIndex(INDEX_BY_WORKLOAD, key).map((p) => p.metadata.name!),
    pods: (key) => ctx.caches.pods.byIndex(INDEX_BY_WORKLOAD, key),
    maxReplicas: (wl, current) => poolBound(ctx, wl, current),
    nowS: () => Math.floor(Date.now() / 1000),
    logger: ctx.logger.child({ component: 'autoscale' }),
  });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  return {
    name: 'autoscale',
    async start() {
      timer = setInterval(() => {
        if (running || !ctx.isLeader() || !ctx.caches.hasSynced()) return;
        running = loop.tick().finally(() => {
          running = undefined;
        });
      }, AUTOSCALE_INTERVAL_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}

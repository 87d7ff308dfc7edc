/**
 * The read-only web view as a component: no server of its own, two GET routes on the ops server
 * (`/view`, `/view.json`) built at each request from the replica's caches, with the pods' use from
 * Prometheus when the controller has `PROMETHEUS_URL`. Off unless `WEB_VIEW` is `true`.
 */
import { CONTROLLER_ENV, CONTROLLER_PATHS } from '../../contract/env';
import { readPodUsage } from '../shared/pod-usage';
import { poolView, PoolView } from '../shared/pool-view';
import { PrometheusClient } from '../shared/prometheus';
import type { Component, RuntimeContext } from '../shared/runtime-context';
import { viewPage } from './page';

/** A page load waits at most this long for Prometheus, then shows no use. */
const USAGE_TIMEOUT_MS = 2_000;

export function viewComponent(ctx: RuntimeContext, env: NodeJS.ProcessEnv = process.env): Component {
  const nothing = async () => undefined;
  if (!ctx.env.webView) return { name: 'view', start: nothing, stop: nothing };
  const url = env[CONTROLLER_ENV.prometheusUrl];
  const prometheus = url ? new PrometheusClient(url, USAGE_TIMEOUT_MS) : undefined;
  const logger = ctx.logger.child({ component: 'view' });
  const current = async (): Promise<PoolView> => {
    const usage = prometheus
      ? await readPodUsage(prometheus, Date.now() / 1000).catch((err: Error) => {
          logger.debug({ err: err.message }, 'pod usage not read');
          return undefined;
        })
      : undefined;
    return poolView(ctx.caches, usage);
  };
  return {
    name: 'view',
    start: nothing,
    stop: nothing,
    routes: {
      [CONTROLLER_PATHS.view]: async () => ({
        contentType: 'text/html; charset=utf-8',
        body: viewPage(await current(), new Date().toISOString()),
      }),
      [CONTROLLER_PATHS.viewJson]: async () => ({ contentType: 'application/json', body: JSON.stringify(await current()) }),
    },
  };
}

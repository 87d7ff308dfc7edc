/**
 * The webhook as a runtime component (`COMPONENTS` in main.ts): it reads the controller's informers
 * (no watch of its own), admits on every replica without writing, and leaves leader-only work
 * (certificates, remote-mode workers) to `ctx.isLeader`.
 */
import type { K8sObject } from '../kube/cluster';
import type { Informer } from '../kube/informer';
import type { Component, RuntimeContext } from '../shared/runtime-context';
import type { ViewInformers } from './cluster-view';
import { startWebhook, WebhookHandle } from './start';

export interface WebhookComponent extends Component {
  /** For the ops server's readiness checks. */
  ready(): boolean;
  /** The running webhook, once started. */
  handle(): WebhookHandle | undefined;
}

export function webhookComponent(ctx: RuntimeContext): WebhookComponent {
  let webhook: WebhookHandle | undefined;
  // A webhook that failed to start (e.g. its port taken) stays down: /healthz reports it so the
  // kubelet restarts the container instead of leaving a replica that never admits.
  let failed = false;
  const c = ctx.caches;
  return {
    name: 'webhook',
    async start() {
      webhook = startWebhook({
        cluster: ctx.cluster,
        namespace: ctx.env.namespace,
        env: ctx.env,
        isLeader: () => ctx.isLeader(),
        logger: ctx.logger.child({ component: 'webhook' }),
        metrics: ctx.metrics,
        informers: {
          pools: c.pools,
          profiles: c.profiles,
          workloads: c.workloads,
          quotas: c.quotas,
          pods: c.pods as unknown as Informer<K8sObject>,
        } as Partial<ViewInformers> & { pods: Informer<K8sObject> },
      });
      webhook.whenReady().catch(() => {
        failed = true;
      });
    },
    async stop() {
      await webhook?.close();
    },
    ready: () => webhook?.ready() ?? false,
    live: () => !failed,
    handle: () => webhook,
  };
}

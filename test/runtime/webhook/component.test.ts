/** The runtime component: shares the controller's informers and serves once they have synced. */
import pino from 'pino';
import { Controller } from '../../../lib/runtime/reconcile/controller';
import { RuntimeMetrics } from '../../../lib/runtime/shared/metrics';
import type { RuntimeContext } from '../../../lib/runtime/shared/runtime-context';
import { webhookComponent } from '../../../lib/runtime/webhook/component';
import { clusterFor } from '../../support/api-server';
import { client, NS, pod, post, review, seedPool, startDouble } from './fixtures';

it('admits through the controller caches once they sync, and stops cleanly', async () => {
  const double = await startDouble();
  seedPool(double, { name: 'pool-a', nodes: 1, gpusPerNode: 1, isDefault: true });
  double.put('secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tf-tls', namespace: NS }, type: 'Opaque' });
  const cluster = clusterFor(double);
  const controller = new Controller({ cluster });
  const ctx = {
    env: {
      namespace: NS,
      webhookPort: 0,
      certMode: 'self-managed',
      tlsDir: '/tls',
      tlsSecretName: 'tf-tls',
      webhookConfigName: 'tf-webhook',
      webhookServiceName: 'tensor-fusion-webhook',
    },
    logger: pino({ level: 'silent' }),
    metrics: new RuntimeMetrics(),
    cluster,
    leaderCluster: cluster,
    caches: controller,
    isLeader: () => true,
  } as unknown as RuntimeContext;
  const component = webhookComponent(ctx);
  let agent: ReturnType<typeof client> | undefined;
  try {
    await component.start();
    expect(component.ready()).toBe(false);
    controller.startInformers();
    await component.handle()!.whenReady();
    expect(component.ready()).toBe(true);
    // The leader issued the serving certificate into the Secret; trust its CA.
    const ca = Buffer.from(double.getObject('secrets', 'tf-tls', NS)!.data['ca.crt'], 'base64').toString('utf8');
    agent = client(ca, 4);
    const answer = await post(
      component.handle()!.port(),
      agent,
      review(
        pod({
          name: 'p',
          annotations: {
            'tensor-fusion.ai/is-local-gpu': 'true',
            'tensor-fusion.ai/tflops-request': '1',
            'tensor-fusion.ai/vram-request': '1Gi',
          },
        }),
      ),
    );
    expect(answer.body.response.allowed).toBe(true);
    expect(answer.body.response.patch).toBeDefined();
  } finally {
    agent?.destroy();
    await component.stop();
    await controller.stop();
    await double.stop();
  }
  expect(component.ready()).toBe(false);
});

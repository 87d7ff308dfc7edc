/**
 * autoSetReplicas' writes against the real kube-apiserver: the Deployment's replicas through its
 * `/scale` subresource, and the HPA lookup that makes the loop stand back.
 */
import { hpaFor, HPA_RESOURCE, scaleClient, SCALABLE_OWNERS, ScaleTarget } from '../../lib/runtime/autoscale/scale';
import { describeControlPlane } from '../support/control-plane';

describeControlPlane('autoscaling on the real API server', {}, (cp) => {
  const deployments = SCALABLE_OWNERS.get('apps/v1 Deployment')!;
  const target: ScaleTarget = { resource: deployments, namespace: 'default', name: 'web', kind: 'Deployment' };

  beforeAll(async () => {
    await cp()
      .cluster()
      .create(deployments, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'default' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
        },
      });
  });

  it('reads replicas from the owner and writes them through /scale', async () => {
    const scale = scaleClient(cp().cluster());
    expect(await scale.getReplicas(target)).toBe(1);
    await scale.setReplicas(target, 3);
    expect(await scale.getReplicas(target)).toBe(3);
    expect(await scale.getReplicas({ ...target, name: 'missing' })).toBeUndefined();
  });

  it('finds the HorizontalPodAutoscaler that targets the owner, and only that one', async () => {
    const cluster = cp().cluster();
    expect(await hpaFor(cluster, target)).toBeUndefined();
    await cluster.create(HPA_RESOURCE, {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'web-hpa', namespace: 'default' },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 3 },
    });
    expect((await hpaFor(cluster, target))?.metadata.name).toBe('web-hpa');
    expect(await hpaFor(cluster, { ...target, name: 'other' })).toBeUndefined();
  });
});

/**
 * The harness itself on the real binaries: every component comes up on loopback, kubectl talks to the
 * API server with the admin kubeconfig, RBAC applies to the extra users, KWOK runs pods on fake nodes,
 * and stop() leaves no process behind.
 */
import { describeControlPlane, KWOK_NODE_ANNOTATION, waitFor } from '../support/control-plane';
import { RESOURCES } from '../../lib/runtime/kube/resources';

const VIEWER = 'alice';

describeControlPlane('control-plane harness', { controllerManager: true, scheduler: true, kwok: true, users: [{ name: VIEWER }] }, (cp) => {
  test('kubectl reports the pinned server version', async () => {
    const out = JSON.parse(await cp().kubectlOk(['version', '-o', 'json']));
    expect(out.serverVersion.gitVersion).toMatch(/^v1\.\d+\.\d+$/);
    expect(out.clientVersion.gitVersion).toBe(out.serverVersion.gitVersion);
  });

  test('RBAC applies: a user with no binding is forbidden, and kubectl says so', async () => {
    const r = await cp().kubectl(['get', 'pods', '-n', 'default'], { user: VIEWER });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('pods is forbidden: User "alice" cannot list resource "pods"');
  });

  test('a Deployment on a KWOK node gets its pods scheduled and Running', async () => {
    const c = cp();
    await c.kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'kwok-harness-0', annotations: { [KWOK_NODE_ANNOTATION.key]: KWOK_NODE_ANNOTATION.value } },
        status: { allocatable: { cpu: '8', memory: '32Gi', pods: '110' }, capacity: { cpu: '8', memory: '32Gi', pods: '110' } },
      }),
    });
    await c.kubectlOk(['create', 'deployment', 'web', '--image=nginx', '--replicas=2', '-n', 'default']);
    const cluster = c.cluster();
    await waitFor(
      '2 Running pods',
      async () => {
        const pods = await cluster.list(RESOURCES.pods, { namespace: 'default', labelSelector: 'app=web' });
        return (
          pods.items.filter(
            (p) =>
              (p as { status?: { phase?: string } }).status?.phase === 'Running' &&
              (p as { spec?: { nodeName?: string } }).spec?.nodeName === 'kwok-harness-0',
          ).length === 2
        );
      },
      60_000,
      250,
    );
  });

  test('after etcd compaction and an API server restart, an old resourceVersion answers 410 Gone', async () => {
    const before = JSON.parse(await cp().kubectlOk(['get', '--raw', '/api/v1/namespaces/default/configmaps'])).metadata;
    await cp().kubectlOk(['create', 'configmap', 'bump', '-n', 'default']);
    await cp().compactEtcd();
    // The watch cache would still serve the old revision from memory; a restarted API server has
    // only what etcd kept.
    await cp().restartApiServer();
    await waitFor(
      '410 on an old resourceVersion',
      async () => {
        const r = await cp().kubectl([
          'get',
          '--raw',
          `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${before.resourceVersion}&timeoutSeconds=1`,
        ]);
        return /Gone|too old|410/.test(r.stdout + r.stderr);
      },
      30_000,
      500,
    );
  });
});

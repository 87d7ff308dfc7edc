/**
 * The runtime's client against a real API server: lists nodes and GPU pools and acquires a Lease.
 * With KUBECONFIG set it runs against that cluster (whose tensor-fusion.ai CRDs must be installed);
 * otherwise against the harness control plane (test/support/control-plane), with the CRDs applied.
 * The connection is loaded in a child node process because client-node 1.4.0 is ESM-only, which
 * jest's CommonJS runtime cannot load.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { HttpCluster, keepAliveAgent } from '../../lib/runtime/kube/http-cluster';
import { LeaderElector } from '../../lib/runtime/kube/leader-election';
import { RESOURCES } from '../../lib/runtime/kube/resources';
import { describeControlPlane, waitFor } from '../support/control-plane';
import { silent } from './fixtures';

/** The runtime's own kubeconfig loading (lib/runtime/kube/kubeconfig.ts), run as the process would. */
function connect(kubeconfig: string): HttpCluster {
  const json = execFileSync(
    process.execPath,
    [
      '-r',
      'ts-node/register/transpile-only',
      '-e',
      "require('./lib/runtime/kube/kubeconfig').loadConnection().then(async (c) => { console.log(JSON.stringify({ server: c.server, headers: await c.headers(), ca: c.agent.options.ca && String(c.agent.options.ca) })); process.exit(0); })",
    ],
    {
      encoding: 'utf8',
      env: { ...process.env, KUBECONFIG: kubeconfig, TS_NODE_COMPILER_OPTIONS: '{"module":"commonjs","moduleResolution":"node"}' },
    },
  );
  const { server, headers, ca } = JSON.parse(json.trim().split('\n').pop()!);
  return new HttpCluster({ server, agent: keepAliveAgent(server, ca ? { ca } : { rejectUnauthorized: false }), headers: () => headers });
}

function suite(kubeconfig: () => string): void {
  test('lists nodes and GPU pools and acquires a Lease', async () => {
    const cluster = connect(kubeconfig());
    const nodes = await cluster.list(RESOURCES.nodes);
    expect(nodes.resourceVersion).not.toBe('');
    await cluster.list(RESOURCES.gpupools);
    const abort = new AbortController();
    const elector = new LeaderElector({
      cluster,
      namespace: 'default',
      name: `e2e-${process.pid}`,
      identity: `e2e-${process.pid}`,
      logger: silent,
    });
    const done = elector.run(abort.signal);
    try {
      await waitFor('leadership', async () => elector.isLeader(), 30_000);
      const lease = await cluster.get<{ metadata: { name: string }; spec?: { holderIdentity?: string } }>(RESOURCES.leases, {
        namespace: 'default',
        name: `e2e-${process.pid}`,
      });
      expect(lease?.spec?.holderIdentity).toBe(`e2e-${process.pid}`);
    } finally {
      abort.abort();
      await done;
      await elector.release();
    }
  });
}

if (process.env.KUBECONFIG) {
  describe('runtime against a real cluster (KUBECONFIG)', () => suite(() => process.env.KUBECONFIG!));
} else {
  describeControlPlane('runtime against the harness control plane', {}, (cp) => {
    beforeAll(async () => {
      await cp().kubectlOk(['apply', '--server-side', '-f', path.resolve(__dirname, '../../crds')]);
      await cp().kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
    });
    suite(() => cp().kubeconfig);
  });
}

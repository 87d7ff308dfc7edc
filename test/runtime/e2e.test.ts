/**
 * Opt-in real-cluster suite: runs when KUBECONFIG is set (and the tensor-fusion.ai CRDs are installed),
 * otherwise skips and says so. It loads the connection in a child node process because client-node
 * 1.4.0 is ESM-only, which jest's CommonJS runtime cannot load.
 */
import { execFileSync } from 'node:child_process';
import { HttpCluster, keepAliveAgent } from '../../lib/runtime/http-cluster';
import { RESOURCES } from '../../lib/runtime/resources';

const enabled = Boolean(process.env.KUBECONFIG);
if (!enabled) {
  // eslint-disable-next-line no-console
  console.log('test/runtime/e2e.test.ts: skipped, KUBECONFIG is not set (set it to run against a real cluster)');
}

(enabled ? describe : describe.skip)('runtime against a real cluster (KUBECONFIG)', () => {
  test('lists nodes and GPU pools and acquires a Lease', async () => {
    const json = execFileSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e',
      "require('./lib/runtime/kubeconfig').loadConnection().then(async (c) => { console.log(JSON.stringify({ server: c.server, headers: await c.headers() })); process.exit(0); })"],
    { encoding: 'utf8', env: { ...process.env, TS_NODE_COMPILER_OPTIONS: '{"module":"commonjs","moduleResolution":"node"}' } });
    const { server, headers } = JSON.parse(json.trim().split('\n').pop()!);
    const cluster = new HttpCluster({ server, agent: keepAliveAgent(server, { rejectUnauthorized: false }), headers: () => headers });
    const nodes = await cluster.list(RESOURCES.nodes);
    expect(nodes.resourceVersion).not.toBe('');
    await cluster.list(RESOURCES.gpupools);
  });
});

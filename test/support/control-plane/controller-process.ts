/**
 * Runs the shipped controller bundle (build/controller/controller.js, the file TensorFusionController
 * puts in its ConfigMap) as a real process against a harness control plane, with the environment the
 * rendered Deployment gives it and the identity of its ServiceAccount, so the rendered RBAC is what it
 * gets. The webhook is reached by URL on 127.0.0.1 (envtest's way), so its certificate also names that IP.
 */
import * as path from 'node:path';
import { CONTROLLER_ENV, CONTROLLER_PATHS } from '../../../lib/contract/env';
import { ControlPlane, User } from './control-plane';
import { ManagedProcess, freePort, httpGet, startProcess, waitFor } from './process';

export const BUNDLE = path.resolve(__dirname, '../../../build/controller/controller.js');

/** The token-file user that stands for a ServiceAccount (RBAC matches ServiceAccount subjects by this name). */
export function serviceAccountUser(namespace: string, name: string): User {
  return {
    name: `system:serviceaccount:${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
  };
}

export interface ControllerReplica {
  readonly name: string;
  readonly metricsPort: number;
  readonly webhookPort: number;
  /** The scheduler extender's port (plain HTTP on 127.0.0.1). */
  readonly extenderPort: number;
  readonly process: ManagedProcess;
  /** GET /readyz is 200. */
  ready(): Promise<boolean>;
  /** The body of /metrics. */
  metrics(): Promise<string>;
}

export interface ReplicaOptions {
  /** POD_NAME, the leader-election identity. */
  name: string;
  namespace: string;
  /** The ServiceAccount user (see {@link serviceAccountUser}) whose token the process uses. */
  user: string;
  /** Extra or overriding environment (CONTROLLER_ENV names). */
  env?: Record<string, string>;
  /** Keep this webhook port across restarts (the webhook configuration names it). */
  webhookPort?: number;
}

function get(port: number, p: string): Promise<{ status: number; body: string }> {
  return httpGet(`http://127.0.0.1:${port}${p}`);
}

/** Starts one replica; resolves once the process listens on its metrics port. */
export async function startReplica(cp: ControlPlane, o: ReplicaOptions): Promise<ControllerReplica> {
  const E = CONTROLLER_ENV;
  const metricsPort = await freePort();
  const webhookPort = o.webhookPort ?? (await freePort());
  const extenderPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    KUBECONFIG: cp.writeKubeconfig(o.user),
    [E.podName]: o.name,
    [E.podNamespace]: o.namespace,
    [E.logLevel]: 'info',
    [E.metricsPort]: String(metricsPort),
    [E.webhookPort]: String(webhookPort),
    [E.extenderPort]: String(extenderPort),
    [E.webhookExtraNames]: '127.0.0.1',
    ...o.env,
  };
  const proc = startProcess(`controller ${o.name}`, process.execPath, [BUNDLE], path.join(cp.dir, `controller-${o.name}.log`), env);
  const replica: ControllerReplica = {
    name: o.name,
    metricsPort,
    webhookPort,
    extenderPort,
    process: proc,
    ready: async () => (await get(metricsPort, CONTROLLER_PATHS.readyz).catch(() => ({ status: 0 }))).status === 200,
    metrics: async () => (await get(metricsPort, CONTROLLER_PATHS.metrics)).body,
  };
  await waitFor(
    `controller ${o.name} /healthz`,
    async () => (await get(metricsPort, CONTROLLER_PATHS.healthz)).status === 200,
    30_000,
    100,
    proc,
  );
  return replica;
}

/** The webhook URL of a replica, for `clientConfig.url`. */
export function webhookUrl(port: number): string {
  return `https://127.0.0.1:${port}${CONTROLLER_PATHS.mutatePods}`;
}

/**
 * What a Service does for the webhook: one loopback address in front of several replicas, round
 * robin, skipping a replica that refuses the connection (a killed one). Plain TCP, so TLS stays
 * end to end between kube-apiserver and the replica.
 */
export interface Balancer {
  readonly port: number;
  /** Replaces the backend ports. */
  setBackends(ports: number[]): void;
  close(): Promise<void>;
}

export async function startBalancer(backends: number[]): Promise<Balancer> {
  const net = await import('node:net');
  let ports = [...backends];
  let next = 0;
  const sockets = new Set<import('node:net').Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    const tryConnect = (attempt: number): void => {
      if (ports.length === 0 || attempt >= ports.length) return void client.destroy();
      const port = ports[next++ % ports.length];
      const upstream = net.connect(port, '127.0.0.1');
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.once('connect', () => {
        // As a Service's DNAT adds no delay: without these, Nagle's algorithm on the proxy's two
        // sockets meets the peers' delayed ACKs, and about half the reviews waited 40 ms.
        client.setNoDelay(true);
        upstream.setNoDelay(true);
        client.pipe(upstream).pipe(client);
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
      });
      upstream.once('error', () => {
        if (!upstream.readyState || upstream.connecting) tryConnect(attempt + 1);
      });
    };
    tryConnect(0);
  });
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as import('node:net').AddressInfo).port)),
  );
  return {
    port,
    setBackends(p) {
      ports = [...p];
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

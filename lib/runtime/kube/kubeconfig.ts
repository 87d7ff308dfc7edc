/**
 * Loads cluster access from KUBECONFIG or the in-cluster service account through client-node's
 * KubeConfig, and turns it into a {@link Connection}: one keep-alive agent with the TLS material, and
 * auth headers fetched per request (client-node re-reads rotated service-account tokens).
 */
// The config module alone: the package index also pulls in the whole generated API client.
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type * as https from 'node:https';
import { Connection, keepAliveAgent } from './http-cluster';

/** Auth headers are recomputed this often (client-node re-reads the token file every 60 s). */
const HEADER_TTL_MS = 10_000;

/** In-cluster config when running in a pod, otherwise KUBECONFIG / ~/.kube/config. */
export async function loadConnection(userAgent?: string): Promise<Connection> {
  const kc = new KubeConfig();
  if (process.env.KUBERNETES_SERVICE_HOST && !process.env.KUBECONFIG) kc.loadFromCluster();
  else kc.loadFromDefault();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig: no current cluster (set KUBECONFIG or run in a pod)');
  const tls: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const agent = keepAliveAgent(cluster.server, {
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
    servername: tls.servername,
    ...(cluster.skipTLSVerify ? { rejectUnauthorized: false } : {}),
  });
  let cached: { at: number; headers: Record<string, string> } | undefined;
  return {
    server: cluster.server,
    agent,
    userAgent,
    headers: async () => {
      if (cached && Date.now() - cached.at < HEADER_TTL_MS) return cached.headers;
      const opts: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(opts);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === 'string') headers[k] = v;
      if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
      cached = { at: Date.now(), headers };
      return headers;
    },
  };
}

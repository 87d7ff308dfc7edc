/**
 * Process entry of the node agent: `node controller.js agent` (the agent travels in the controller
 * bundle; lib/runtime/main.ts dispatches on the argument). Reads AGENT_ENV, names pods through the
 * API server, and serves /metrics and /healthz on AGENT_PORT.
 */
import pino from 'pino';
import { HttpCluster } from '../kube/http-cluster';
import { loadConnection } from '../kube/kubeconfig';
import { NodePodResolver } from './pods';
import { readAgentEnv, startAgent } from './server';

export async function runAgent(): Promise<void> {
  const env = readAgentEnv();
  const logger = pino({ level: env.logLevel, base: { node: env.nodeName } });
  const connection = await loadConnection(`tensor-fusion-agent/${env.nodeName}`);
  const resolver = new NodePodResolver(new HttpCluster({ userAgent: `tensor-fusion-agent/${env.nodeName}`, ...connection }), env.nodeName);
  await resolver.refresh().catch((err) => logger.warn({ err: String(err) }, 'listing the node pods failed; retrying on demand'));
  const agent = await startAgent(env, resolver);
  logger.info({ port: agent.server.port, nvidiaSmi: env.nvidiaSmi, procRoot: env.procRoot }, 'agent started');
  process.on('SIGTERM', () => void agent.stop().then(() => process.exit(0)));
}

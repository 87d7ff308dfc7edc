/**
 * Process entry of the node agent: `node controller.js agent` (the agent travels in the controller
 * bundle; lib/runtime/main.ts dispatches on the argument). Reads AGENT_ENV, names pods through the
 * API server, serves /metrics and /healthz on AGENT_PORT, and (unless NODE_ISOLATION=off) runs the
 * node side of hard isolation: MPS daemons per share and the share device plugin.
 */
import pino from 'pino';
import { HttpCluster } from '../kube/http-cluster';
import { loadConnection } from '../kube/kubeconfig';
import { NodeIsolation } from './isolation';
import { MpsSupervisor } from './mps/supervisor';
import { NodePodResolver } from './pods';
import { readAgentEnv, startAgent } from './agent-server';

export async function runAgent(): Promise<void> {
  const env = readAgentEnv();
  const logger = pino({ level: env.logLevel, base: { node: env.nodeName } });
  const connection = await loadConnection(`tensor-fusion-agent/${env.nodeName}`);
  const cluster = new HttpCluster({ userAgent: `tensor-fusion-agent/${env.nodeName}`, ...connection });
  const resolver = new NodePodResolver(cluster, env.nodeName);
  await resolver.refresh().catch((err) => logger.warn({ err: String(err) }, 'listing the node pods failed; retrying on demand'));
  const agent = await startAgent(env, resolver);
  const log = (msg: string, fields?: Record<string, unknown>) => logger.info(fields ?? {}, msg);
  const isolation = env.isolation
    ? new NodeIsolation({
        cluster,
        nodeName: env.nodeName,
        registry: agent.collector.registry,
        inventory: () => agent.collector.inventory(),
        processes: () => agent.collector.processes(),
        pluginDir: env.pluginDir,
        devRoot: env.devRoot,
        log,
        supervisor: new MpsSupervisor({ controlBin: env.mpsControl, baseDir: env.mpsDir, isolateShm: env.mpsShmIsolation, log }),
      })
    : undefined;
  await isolation?.start();
  logger.info({ port: agent.server.port, nvidiaSmi: env.nvidiaSmi, procRoot: env.procRoot, isolation: env.isolation }, 'agent started');
  // The share daemons are left running: they die with this container (their pods' clients with
  // them) and a new agent takes the shares over; quitting them here would only do it sooner.
  process.on('SIGTERM', () => void Promise.all([isolation?.stop(), agent.stop()]).then(() => process.exit(0)));
}

/**
 * Process entry of the node agent: `node controller.js agent` (the agent travels in the controller
 * bundle; lib/runtime/main.ts dispatches on the argument). Reads AGENT_ENV, names pods through the
 * API server, serves /metrics and /healthz on AGENT_PORT, and (unless NODE_ISOLATION=off) runs the
 * node side of hard isolation: MPS daemons per share, delivered through the device-plugin door.
 */
import { existsSync } from 'node:fs';
import pino from 'pino';
import { HttpCluster } from '../kube/http-cluster';
import { loadConnection } from '../kube/kubeconfig';
import { CdiWriter } from './cdi/writer';
import { DevicePluginDoor } from './device-plugin/door';
import { shareDevices } from './device-plugin/devices';
import { findDriverLibraries } from './host/driver-libraries';
import { readGpuMinors } from './host/gpu-minors';
import { NodeIsolation } from './node/supervision';
import { MpsSupervisor } from './mps/supervisor';
import { NodePodResolver } from './pods';
import { ShareDelivery } from './share/delivery';
import { AgentEnv, readAgentEnv, startAgent } from './agent-server';
import type { Cluster } from '../kube/cluster';
import type { GpuCollector } from './collector';

export async function runAgent(): Promise<void> {
  const env = readAgentEnv();
  const logger = pino({ level: env.logLevel, base: { node: env.nodeName } });
  const connection = await loadConnection(`tensor-fusion-agent/${env.nodeName}`);
  const cluster = new HttpCluster({ userAgent: `tensor-fusion-agent/${env.nodeName}`, ...connection });
  const resolver = new NodePodResolver(cluster, env.nodeName);
  await resolver.refresh().catch((err) => logger.warn({ err: String(err) }, 'listing the node pods failed; retrying on demand'));
  const agent = await startAgent(env, resolver);
  const log = (msg: string, fields?: Record<string, unknown>) => logger.info(fields ?? {}, msg);
  const isolation = env.isolation ? await startNodeSide(env, cluster, agent.collector, log) : undefined;
  logger.info({ port: agent.server.port, nvidiaSmi: env.nvidiaSmi, procRoot: env.procRoot, isolation: env.isolation }, 'agent started');
  // The share daemons are left running: a new agent takes the shares over.
  process.on('SIGTERM', () => void Promise.all([isolation?.stop(), agent.stop()]).then(() => process.exit(0)));
}

/** The supervision round, the share machinery and the device-plugin door, wired. */
async function startNodeSide(
  env: AgentEnv,
  cluster: Cluster,
  collector: GpuCollector,
  log: (msg: string, fields?: Record<string, unknown>) => void,
): Promise<NodeIsolation> {
  const supervisor = new MpsSupervisor({ controlBin: env.mpsControl, baseDir: env.mpsDir, isolateShm: env.mpsShmIsolation, log });
  const delivery = new ShareDelivery({
    nodeName: env.nodeName,
    supervisor,
    cdi: new CdiWriter(env.cdiDir),
    gpus: () => isolation.currentGpus(),
    // Read at each delivery: a driver upgrade or a GPU reset can change either.
    host: () => ({
      minors: readGpuMinors(env.nvidiaProcDir),
      devRoot: env.devRoot,
      exists: existsSync,
      libraries: findDriverLibraries(env.driverRootMount, env.driverRoot),
    }),
    log,
  });
  const isolation: NodeIsolation = new NodeIsolation({
    cluster,
    nodeName: env.nodeName,
    registry: collector.registry,
    inventory: () => collector.inventory(),
    processes: () => collector.processes(),
    delivery,
    log,
    supervisor,
  });
  const door = new DevicePluginDoor({
    cluster,
    delivery,
    pluginDir: env.pluginDir,
    podResourcesSocket: env.podResourcesSocket,
    devices: () => shareDevices(isolation.gpus(), isolation.readiness()),
    registry: collector.registry,
    log,
  });
  await isolation.start([door]);
  return isolation;
}

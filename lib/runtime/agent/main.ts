/**
 * The node agent's process: `node agent.js` (its own bundle, from lib/runtime/agent-main.ts, in a
 * ConfigMap of its own). Reads AGENT_ENV, names pods through the
 * API server, serves /metrics, /healthz and /readyz on AGENT_PORT, and (unless NODE_ISOLATION=off) runs the
 * node side of hard isolation: MPS daemons per share, delivered through the device-plugin and DRA doors.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { HttpCluster } from '../kube/http-cluster';
import { loadConnection } from '../kube/kubeconfig';
import { CdiWriter } from './cdi/writer';
import { DevicePluginDoor } from './device-plugin/door';
import { DraDoor } from './dra/door';
import { SlicePublisher } from './dra/slice-publisher';
import { shareDevices } from './device-plugin/devices';
import { findDriverLibraries } from './host/driver-libraries';
import { readGpuMinors } from './host/gpu-minors';
import { NodeIsolation } from './node/supervision';
import { queryComputeModes } from './nvidia-smi-run';
import { MpsSupervisor } from './mps/supervisor';
import { daemonCgroupLayout, parseMountinfo } from './mps/cgroup-mounts';
import { NodePodResolver } from './pods';
import { nodeBackstop } from './share/backstop-node';
import { ShareDelivery } from './share/delivery';
import { AgentEnv, readAgentEnv, startAgent } from './agent-server';
import type { Cluster } from '../kube/cluster';
import type { GpuCollector } from './collector';

export async function runAgent(): Promise<void> {
  const env = readAgentEnv();
  const logger = pino({ level: env.logLevel, base: { node: env.nodeName } });
  const connection = await loadConnection(`tensor-fusion-agent/${env.nodeName}`);
  const cluster = new HttpCluster({ userAgent: `tensor-fusion-agent/${env.nodeName}`, ...connection });
  const log = (msg: string, fields?: Record<string, unknown>) => logger.info(fields ?? {}, msg);
  const resolver = new NodePodResolver(cluster, env.nodeName, undefined, (msg, fields) => logger.warn(fields ?? {}, msg));
  await resolver.refresh().catch((err) => logger.warn({ err: String(err) }, 'listing the node pods failed; retrying on demand'));
  let isolation: NodeIsolation | undefined;
  // cgroup v2, v1 or both, from what the agent sees mounted: the daemons leave the container's cgroups in each.
  const cgroups = daemonCgroupLayout(parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8')), {
    daemonCgroup: env.mpsDaemonCgroup,
    hostCgroup: env.hostCgroup,
    name: env.mpsDaemonCgroupName,
  });
  if (env.isolation && (env.mpsDaemonCgroup || env.hostCgroup)) logger.info({ ...cgroups, given: env.mpsDaemonCgroup }, 'daemon cgroups');
  const supervisor = env.isolation
    ? new MpsSupervisor({
        controlBin: env.mpsControl,
        baseDir: env.mpsDir,
        isolateShm: env.mpsShmIsolation,
        ...cgroups,
        // pid 1 of the host's PID namespace, which the DaemonSet shares: its cgroup namespace is the host's.
        hostCgroupNamespace: join(env.procRoot, '1', 'ns', 'cgroup'),
        procRoot: env.procRoot,
        onBreach: (b) => void isolation?.limitsBreached(b),
        log,
      })
    : undefined;
  // Each pod's compute is measured on its own MPS server, known from its daemon.
  // Ready once the kubelet has the share's device plugin: a pod it admits before then is refused.
  const readiness: Record<string, () => boolean> = {};
  const agent = await startAgent(env, resolver, undefined, supervisor && ((id) => supervisor.members(id)), readiness);
  if (supervisor) isolation = await startNodeSide(env, cluster, supervisor, agent.collector, readiness, log);
  logger.info({ port: agent.server.port, nvidiaSmi: env.nvidiaSmi, procRoot: env.procRoot, isolation: env.isolation }, 'agent started');
  // The share daemons are left running (their own sessions): a new agent takes them over.
  process.on('SIGTERM', () => void Promise.all([isolation?.stop(), agent.stop()]).then(() => process.exit(0)));
}

/** The supervision round, the backstop, the share machinery and the two doors (device plugin, DRA), wired. */
async function startNodeSide(
  env: AgentEnv,
  cluster: Cluster,
  supervisor: MpsSupervisor,
  collector: GpuCollector,
  readiness: Record<string, () => boolean>,
  log: (msg: string, fields?: Record<string, unknown>) => void,
): Promise<NodeIsolation> {
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
    computeModes: () => queryComputeModes(env.nvidiaSmi, 10_000),
    processes: () => collector.processes(),
    delivery,
    backstop: nodeBackstop({
      cluster,
      shares: () => supervisor.shares(),
      members: (id) => supervisor.members(id),
      nvidiaSmi: env.nvidiaSmi,
      procRoot: env.procRoot,
      // Not awaited: the backstop's poll goes on; a failed pass is logged and the next round writes it again.
      onChange: () => void isolation.writeReadiness().catch((err) => log('readiness pass failed', { err: String(err) })),
      log,
    }),
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
  // Both doors are served: a pod reaches one or the other by what the webhook gave it (the share
  // resource or a claim). The node's slice is published only while its pool delivers by DRA.
  const slices = new SlicePublisher({
    cluster,
    nodeName: env.nodeName,
    gpus: () => isolation.gpus(),
    readiness: () => isolation.readiness(),
    minors: () => readGpuMinors(env.nvidiaProcDir),
    log,
  });
  const dra = new DraDoor({
    cluster,
    nodeName: env.nodeName,
    delivery,
    registryDir: env.pluginRegistryDir,
    pluginDir: env.draPluginDir,
    tflopsOf: (gpu) => slices.tflopsOf(gpu),
    slices,
    log,
  });
  readiness['device-plugin'] = () => door.registered;
  await isolation.start([door, dra]);
  return isolation;
}

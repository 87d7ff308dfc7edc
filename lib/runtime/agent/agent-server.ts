/** The node agent's environment and HTTP server (/metrics, /healthz, /readyz), without cluster access. */
import { FieldIssue, fieldIssue, throwIfInvalid } from '../../model/errors';
import { OpsServer } from '../serving/ops-server';
import { CollectorOptions, GpuCollector, PodResolver } from './collector';
import { AGENT_DEFAULTS, AGENT_ENV, AGENT_NODE_LABEL } from '../../contract/agent';

export interface AgentEnv {
  nodeName: string;
  port: number;
  nvidiaSmi: string;
  procRoot: string;
  logLevel: string;
  /** Run MPS daemons and the share device plugin (`hard` isolation's node side). */
  isolation: boolean;
  mpsControl: string;
  mpsDir: string;
  mpsShmIsolation: boolean;
  /** Where each share's daemon gets a cgroup of its own; undefined: none. */
  mpsDaemonCgroup?: string;
  /** The host's /sys/fs/cgroup as mounted in the agent, for its v1 hierarchies; undefined: none. */
  hostCgroup?: string;
  /** The daemons' folder in each v1 hierarchy. */
  mpsDaemonCgroupName?: string;
  pluginDir: string;
  pluginRegistryDir: string;
  draPluginDir: string;
  devRoot: string;
  cdiDir: string;
  podResourcesSocket: string;
  nvidiaProcDir: string;
  driverRoot: string;
  driverRootMount: string;
}

/** Reads and validates the agent's environment; throws a ValidationError naming every bad variable. */
export function readAgentEnv(env: NodeJS.ProcessEnv = process.env): AgentEnv {
  const E = AGENT_ENV;
  const issues: FieldIssue[] = [];
  const nodeName = env[E.nodeName] ?? '';
  if (!nodeName) issues.push(fieldIssue(E.nodeName, env[E.nodeName], 'the node name (downward API spec.nodeName)'));
  const rawPort = env[E.port];
  const port = rawPort ? Number(rawPort) : AGENT_DEFAULTS.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) issues.push(fieldIssue(E.port, rawPort, 'a port number from 0 to 65535'));
  const flag = (name: string, on: string, off: string) => {
    const v = env[name];
    if (v === undefined || v === '' || v === on) return true;
    if (v !== off) issues.push(fieldIssue(name, v, `"${on}" or "${off}"`));
    return false;
  };
  const isolation = flag(E.isolation, 'on', 'off');
  const mpsShmIsolation = flag(E.mpsShmIsolation, 'true', 'false');
  const mpsDaemonCgroup = env[E.mpsDaemonCgroup] || undefined;
  if (mpsDaemonCgroup !== undefined && !mpsDaemonCgroup.startsWith('/'))
    issues.push(fieldIssue(E.mpsDaemonCgroup, mpsDaemonCgroup, 'an absolute path (a cgroup v2 folder), or unset'));
  const hostCgroup = env[E.hostCgroup] || undefined;
  if (hostCgroup !== undefined && !hostCgroup.startsWith('/'))
    issues.push(fieldIssue(E.hostCgroup, hostCgroup, "an absolute path (the host's /sys/fs/cgroup, mounted), or unset"));
  const mpsDaemonCgroupName = env[E.mpsDaemonCgroupName] || undefined;
  if (mpsDaemonCgroupName !== undefined && (!/^[A-Za-z0-9._-]+$/.test(mpsDaemonCgroupName) || /^\.{1,2}$/.test(mpsDaemonCgroupName)))
    issues.push(fieldIssue(E.mpsDaemonCgroupName, mpsDaemonCgroupName, 'one folder name (letters, digits, ".", "_", "-"), or unset'));
  throwIfInvalid(issues, 'agent environment');
  return {
    nodeName,
    port,
    nvidiaSmi: env[E.nvidiaSmi] || AGENT_DEFAULTS.nvidiaSmi,
    procRoot: env[E.procRoot] || AGENT_DEFAULTS.procRoot,
    logLevel: env[E.logLevel] || 'info',
    isolation,
    mpsShmIsolation,
    mpsControl: env[E.mpsControl] || AGENT_DEFAULTS.mpsControl,
    mpsDir: env[E.mpsDir] || AGENT_DEFAULTS.mpsDir,
    mpsDaemonCgroup,
    hostCgroup,
    mpsDaemonCgroupName,
    pluginDir: env[E.pluginDir] || AGENT_DEFAULTS.pluginDir,
    pluginRegistryDir: env[E.pluginRegistryDir] || AGENT_DEFAULTS.pluginRegistryDir,
    draPluginDir: env[E.draPluginDir] || AGENT_DEFAULTS.draPluginDir,
    devRoot: env[E.devRoot] || AGENT_DEFAULTS.devRoot,
    cdiDir: env[E.cdiDir] || AGENT_DEFAULTS.cdiDir,
    podResourcesSocket: env[E.podResourcesSocket] || AGENT_DEFAULTS.podResourcesSocket,
    nvidiaProcDir: env[E.nvidiaProcDir] || AGENT_DEFAULTS.nvidiaProcDir,
    driverRoot: env[E.driverRoot] || AGENT_DEFAULTS.driverRoot,
    driverRootMount: env[E.driverRootMount] || AGENT_DEFAULTS.driverRootMount,
  };
}

export interface Agent {
  readonly server: OpsServer;
  readonly collector: GpuCollector;
  stop(): Promise<void>;
}

/**
 * Starts the agent's HTTP server; `resolver` names pods (the API server's in production). `/readyz`
 * answers `readiness`, which the caller may fill once its parts start.
 */
export async function startAgent(
  env: Pick<AgentEnv, 'port' | 'nvidiaSmi' | 'procRoot'> & Partial<AgentEnv>,
  resolver: PodResolver,
  host?: string,
  members?: CollectorOptions['members'],
  readiness: Record<string, () => boolean> = {},
): Promise<Agent> {
  const collector = new GpuCollector({ nvidiaSmi: env.nvidiaSmi, procRoot: env.procRoot, resolver, members });
  // The node on every series: the dashboard joins usage to pools through the controller's tf_gpu_shares.
  if (env.nodeName) collector.registry.setDefaultLabels({ [AGENT_NODE_LABEL]: env.nodeName });
  const server = new OpsServer({ port: env.port, host, registry: collector.registry, readiness });
  await server.start();
  return { server, collector, stop: () => server.stop() };
}

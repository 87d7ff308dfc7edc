/**
 * The example install on a harness control plane, as an operator does it: KWOK nodes, the synthesized
 * controller YAML applied with `kubectl apply --server-side`, the controller bundle run as N replica
 * processes behind a loopback balancer (the webhook Service's stand-in), and the webhook configuration
 * pointed at it by URL (envtest's rewrite of `clientConfig.service`).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { CONTROLLER_PATHS } from '../../../lib/contract/env';
import { ENABLED_LABEL, GFD, poolMembershipLabel } from '../../../lib/model/metadata-keys';
import { CONTROLLER_NAMES } from '../../../lib/contract/object-names';
import { renderSchedulerConfiguration } from '../../../lib/render/controller/kube-scheduler';
import { AGENT_NAMES } from '../../../lib/render/controller/agent';
import { synthExample } from '../../../examples/cdk8s/main';
import { ControlPlane, KWOK_NODE_ANNOTATION } from './control-plane';
import { Balancer, ControllerReplica, serviceAccountUser, startBalancer, startReplica } from './controller-process';
import type { ManagedProcess } from './process';

export type Obj = Record<string, any>;

export interface KwokNodeSpec {
  name: string;
  labels?: Record<string, string>;
  taints?: { key: string; value?: string; effect: string }[];
  cpu?: string;
  memory?: string;
  /** Extra allocatable resources, e.g. `{ 'nvidia.com/gpu': '8' }`. */
  extended?: Record<string, string>;
}

/** A Node object KWOK runs (Ready at once, pods on it go Running). */
/** GPU Feature Discovery's labels of a node with `gpus` 80 GiB A100s, in `pool`: a GPU node as the controller reads one. */
export function a100Labels(pool: string, gpus: number): Record<string, string> {
  return {
    [GFD.present]: 'true',
    [GFD.product]: 'NVIDIA-A100-SXM4-80GB',
    [GFD.count]: String(gpus),
    [GFD.memory]: '81920',
    [poolMembershipLabel(pool)]: 'true',
  };
}

/** What {@link localGpuPod} makes. */
export interface LocalGpuPodSpec {
  name: string;
  namespace: string;
  pool: string;
  tflops: string;
  vram: string;
  /** Added to `app: gpu` and the enabled label. */
  labels?: Record<string, string>;
  /** Added to the pool, local-GPU and request annotations. */
  annotations?: Record<string, string>;
  /** Merged over a spec of one container requesting `cpu`. */
  spec?: Obj;
  /** @default '100m' */
  cpu?: string;
}

/** A local-GPU pod of a pool as a user writes it: opted in, with its TFLOPS and VRAM requests. */
export function localGpuPod(p: LocalGpuPodSpec): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: p.name,
      namespace: p.namespace,
      labels: { [ENABLED_LABEL]: 'true', app: 'gpu', ...p.labels },
      annotations: {
        'tensor-fusion.ai/gpupool': p.pool,
        'tensor-fusion.ai/is-local-gpu': 'true',
        'tensor-fusion.ai/tflops-request': p.tflops,
        'tensor-fusion.ai/vram-request': p.vram,
        ...p.annotations,
      },
    },
    spec: { containers: [{ name: 'main', image: 'example.io/app:1', resources: { requests: { cpu: p.cpu ?? '100m' } } }], ...p.spec },
  };
}

export function kwokNode(n: KwokNodeSpec): Obj {
  const resources = { cpu: n.cpu ?? '64', memory: n.memory ?? '512Gi', pods: '110', ...n.extended };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: n.name,
      labels: { 'kubernetes.io/hostname': n.name, ...n.labels },
      annotations: { [KWOK_NODE_ANNOTATION.key]: KWOK_NODE_ANNOTATION.value },
    },
    spec: n.taints ? { taints: n.taints } : {},
    status: { allocatable: resources, capacity: resources },
  };
}

/** The synthesized example (`npm run synth`), in a temp dir: `controller.k8s.yaml` and `platform.k8s.yaml`. */
export function synthToTemp(): { dir: string; controller: Obj[]; platform: Obj[] } {
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-synth-'));
  synthExample(dir);
  const read = (f: string): Obj[] =>
    parseAllDocuments(readFileSync(path.join(dir, f), 'utf8'))
      .map((d) => d.toJS())
      .filter(Boolean);
  return { dir, controller: read('controller.k8s.yaml'), platform: read('platform.k8s.yaml') };
}

/** The controller documents with the webhook reached at `url` instead of the Service (as envtest rewrites it). */
export function withWebhookUrl(docs: Obj[], url: string): Obj[] {
  return docs.map((d) =>
    d.kind !== 'MutatingWebhookConfiguration'
      ? d
      : {
          ...d,
          webhooks: d.webhooks.map((w: Obj) => ({ ...w, clientConfig: { url } })),
        },
  );
}

export function writeYaml(dir: string, file: string, docs: Obj[]): string {
  const p = path.join(dir, file);
  writeFileSync(p, docs.map((d) => stringify(d)).join('---\n'));
  return p;
}

export interface RunningController {
  namespace: string;
  balancer: Balancer;
  replicas: ControllerReplica[];
  /** The kube-scheduler beside each replica (when started with `schedulers`), by replica name. */
  schedulers: Map<string, ManagedProcess>;
  /** Starts another replica (or restarts one by name, with its scheduler) and adds it to the balancer. */
  add(name: string): Promise<ControllerReplica>;
  /** SIGKILL to a replica and its scheduler: the controller pod dies. */
  kill(name: string): Promise<void>;
  /** The Lease holder's replica name, if any (the controller's Lease, or `lease`). */
  leader(lease?: string): Promise<string | undefined>;
  stop(): Promise<void>;
}

export interface InstallOptions {
  /** @default 2 */
  replicas?: number;
  /** Extra or overriding environment of the controller processes. */
  env?: Record<string, string>;
  /** Run our kube-scheduler beside each replica, as the controller pod does. @default false */
  schedulers?: boolean;
}

/** The controller's namespace and ServiceAccount as the example renders them. */
export function controllerIdentity(docs: Obj[]): { namespace: string; user: ReturnType<typeof serviceAccountUser> } {
  const deployment = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === CONTROLLER_NAMES.controller);
  if (!deployment) throw new Error('no controller Deployment in the synthesized YAML');
  return {
    namespace: deployment.metadata.namespace,
    user: serviceAccountUser(deployment.metadata.namespace, deployment.spec.template.spec.serviceAccountName),
  };
}

/**
 * Applies the controller YAML (webhook by URL to a balancer) and starts `replicas` controller
 * processes with the rendered Deployment's environment, as its ServiceAccount.
 */
export async function installController(cp: ControlPlane, docs: Obj[], dir: string, opts: InstallOptions = {}): Promise<RunningController> {
  const balancer = await startBalancer([]);
  // The harness runs the controller as processes and no node agent: a suite that needs one installs
  // its own (test/support/node/gpu-agent.ts), whose DaemonSet (OnDelete) must not start from this one.
  const agentNs = `${controllerIdentity(docs).namespace}${AGENT_NAMES.namespaceSuffix}`;
  const isAgent = (d: Obj) => d.metadata.namespace === agentNs || d.metadata.name === agentNs || d.metadata.name === AGENT_NAMES.agent;
  const file = writeYaml(
    dir,
    'controller.k8s.yaml',
    withWebhookUrl(
      docs.filter((d) => !isAgent(d)),
      `https://127.0.0.1:${balancer.port}${CONTROLLER_PATHS.mutatePods}`,
    ),
  );
  await cp.kubectlOk(['apply', '--server-side', '-f', file]);
  await cp.kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
  const { namespace, user } = controllerIdentity(docs);
  const deployment = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === CONTROLLER_NAMES.controller)!;
  const rendered: Record<string, string> = {};
  for (const e of deployment.spec.template.spec.containers[0].env as { name: string; value?: string }[])
    if (e.value !== undefined) rendered[e.name] = e.value;
  delete rendered.METRICS_PORT;
  delete rendered.WEBHOOK_PORT;
  delete rendered.EXTENDER_PORT;
  const replicas = opts.replicas ?? 2;
  const running: ControllerReplica[] = [];
  const schedulers = new Map<string, ManagedProcess>();
  // Processes we end on purpose; any other exit (a lost lease makes both the controller and
  // kube-scheduler exit) is restarted, as the kubelet restarts a container.
  const ended = new Set<ManagedProcess>();
  let stopping = false;
  const supervise = (p: ManagedProcess, restart: () => Promise<unknown>) => {
    void p.exited.then(() => {
      if (!stopping && !ended.has(p)) void restart().catch(() => undefined);
    });
  };
  const kill = async (name: string): Promise<void> => {
    const procs = [running.find((r) => r.name === name)?.process, schedulers.get(name)].filter((p): p is ManagedProcess => !!p);
    for (const p of procs) ended.add(p);
    await Promise.all(procs.map((p) => p.kill()));
  };
  const startScheduler = async (r: ControllerReplica): Promise<void> => {
    const p = await startSchedulerFor(cp, r, namespace);
    schedulers.set(r.name, p);
    supervise(p, () => startScheduler(r));
  };
  const add = async (name: string): Promise<ControllerReplica> => {
    await kill(name);
    const old = running.findIndex((r) => r.name === name);
    const r = await startReplica(cp, { name, namespace, user: user.name, env: { ...rendered, ...opts.env } });
    if (old >= 0) running.splice(old, 1, r);
    else running.push(r);
    balancer.setBackends(running.map((x) => x.webhookPort));
    supervise(r.process, () => add(name));
    if (opts.schedulers) await startScheduler(r);
    return r;
  };
  for (let i = 0; i < replicas; i++) await add(`controller-${i}`);
  return {
    namespace,
    balancer,
    replicas: running,
    schedulers,
    add,
    kill,
    async leader(lease = rendered.LEADER_ELECTION_ID) {
      const r = await cp.kubectl(['get', 'lease', '-n', namespace, lease, '-o', 'jsonpath={.spec.holderIdentity}']);
      const holder = r.code === 0 ? r.stdout.trim() : '';
      // Our identities are `<pod>_<uuid>`; kube-scheduler's are `<host>_<uuid>`, mapped back by its log file name.
      return holder ? holder.replace(/_[0-9a-f-]{36}$/, '') : undefined;
    },
    async stop() {
      stopping = true;
      await Promise.all([...schedulers.values()].map((p) => p.stop(5_000)));
      await Promise.all(running.map((r) => r.process.stop(5_000)));
      await balancer.close();
    },
  };
}

/**
 * A kube-scheduler for one controller replica, as the controller pod runs it: our profile, calling
 * that replica's extender on loopback, with leader election on the scheduler Lease even when it is the
 * only one (the extender reads the Lease to know whether its state may be stale).
 */
export async function startSchedulerFor(cp: ControlPlane, replica: ControllerReplica, namespace: string): Promise<ManagedProcess> {
  const config = renderSchedulerConfiguration(namespace, replica.extenderPort);
  return cp.startScheduler(
    {
      profiles: config.profiles,
      extenders: config.extenders,
      percentageOfNodesToScore: config.percentageOfNodesToScore,
      leaderElection: { ...config.leaderElection, leaseDuration: '15s', renewDeadline: '10s', retryPeriod: '2s' },
    },
    `kube-scheduler-${replica.name}`,
  );
}

/**
 * A real Kubernetes control plane for integration tests, the way controller-runtime's envtest starts
 * one: etcd and kube-apiserver on loopback with free ports in a temp dir (serving certificate, a
 * service-account key pair, static bearer tokens for an admin in system:masters and for any user a
 * test names), and optionally kube-controller-manager (Deployments -> ReplicaSets -> Pods, namespace
 * deletion, garbage collection), kube-scheduler (any KubeSchedulerConfiguration profiles and
 * extenders) and KWOK (fake nodes whose pods go Running). {@link ControlPlane.stop} stops all of
 * them; the process exit hook kills whatever a failed test left running.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as https from 'node:https';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { HttpCluster, Connection, keepAliveAgent } from '../../../lib/runtime/kube/http-cluster';
import { createCa, issueServingCert, KeyPair } from '../../../lib/runtime/serving/certificates';
import { Binary, binaryPath, karpenterCrdsDir, kwokStagesDir } from '../../envtest/assets';
import { NODE_NET } from '../node/net';
import { ManagedProcess, freePort, httpGet, startProcess, waitFor } from './process';

/** A user the API server knows by a static bearer token. */
export interface User {
  name: string;
  groups?: string[];
}

export interface ControlPlaneOptions {
  /** Run kube-controller-manager (Deployments, ReplicaSets, DaemonSets, Jobs, GC, namespaces). */
  controllerManager?: boolean;
  /** Run kube-scheduler; an object adds profiles/extenders to its KubeSchedulerConfiguration. */
  scheduler?: boolean | SchedulerConfig;
  /** Run KWOK for nodes annotated {@link KWOK_NODE_ANNOTATION}. */
  kwok?: boolean;
  /**
   * Needs Karpenter's KWOK provider, started by the suite with {@link ControlPlane.startKarpenter}
   * once it knows its instance types (implies `kwok`, which runs the nodes Karpenter makes).
   */
  karpenter?: boolean;
  /**
   * Needs the KWOK provider whose instance types also declare DRA devices (`karpenter-dra`), started
   * with {@link ControlPlane.startKarpenter}'s `draSlices` (implies `kwok`).
   */
  karpenterDra?: boolean;
  /** Users besides the admin, e.g. `system:serviceaccount:ns:name` to run a process with its RBAC. */
  users?: User[];
  /** Write an audit log (Metadata level, every request) that {@link ControlPlane.auditEvents} reads. */
  audit?: boolean;
  /** Extra kube-apiserver flags (`--name=value`). */
  apiServerFlags?: string[];
  /**
   * Ready the control plane for a real node (test/support/node): kube-apiserver also listens on the
   * node's address (inside the test network namespace) and advertises it, reaches kubelets by their
   * InternalIP, and knows the kubelet's user {@link NODE_USER}.
   */
  node?: boolean;
}

/** The real node's name and its kubelet's user (in system:nodes, and system:masters as a test node's kubelet may be). */
export const NODE_NAME = 'tf-node-0';
export const NODE_USER: User = { name: `system:node:${NODE_NAME}`, groups: ['system:nodes', 'system:masters'] };

/**
 * kube-controller-manager's user, as a cluster's own is named (in system:masters here, since this one
 * runs every controller under its own identity rather than one ServiceAccount each): admission
 * policies that trust the resourceclaim controller's claims see the name they see in a cluster.
 */
export const CONTROLLER_MANAGER_USER: User = { name: 'system:kube-controller-manager', groups: ['system:masters'] };

/** The parts of a KubeSchedulerConfiguration a test sets (v1). */
export interface SchedulerConfig {
  profiles?: Record<string, unknown>[];
  extenders?: Record<string, unknown>[];
  leaderElection?: Record<string, unknown>;
  percentageOfNodesToScore?: number;
}

/** Nodes with this annotation are run by KWOK. */
export const KWOK_NODE_ANNOTATION = { key: 'kwok.x-k8s.io/node', value: 'fake' } as const;

/** Binaries the harness needs for a set of options. */
export function binariesFor(opts: ControlPlaneOptions): Binary[] {
  const out: Binary[] = ['etcd', 'kube-apiserver', 'kubectl'];
  if (opts.controllerManager) out.push('kube-controller-manager');
  if (opts.scheduler) out.push('kube-scheduler');
  if (opts.kwok || opts.karpenter || opts.karpenterDra) out.push('kwok');
  if (opts.karpenter) out.push('karpenter');
  if (opts.karpenterDra) out.push('karpenter-dra');
  return out;
}

// On 2 busy cores a cold kube-apiserver takes several seconds; envtest's 20 s default is too tight.
const START_TIMEOUT_MS = Number(process.env.KUBEBUILDER_CONTROLPLANE_START_TIMEOUT_MS || 90_000);
/** Starts of the control plane when a port chosen for it was taken before its binary bound it (see start). */
const PORT_ATTEMPTS = 3;

function token(): string {
  return randomBytes(24).toString('hex');
}

function httpOk(url: string, agent?: http.Agent): Promise<boolean> {
  return httpGet(url, agent).then(
    (r) => r.status === 200,
    () => false,
  );
}

/** The fields of an audit.k8s.io/v1 Event the tests read. */
export interface AuditEvent {
  verb: string;
  requestURI: string;
  userAgent?: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  /** Set by admission, e.g. `mutation.webhook.admission.k8s.io/round_<r>_index_<i>` per webhook call. */
  annotations?: Record<string, string>;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class ControlPlane {
  readonly dir: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** The CA that signed the API server's serving certificate. */
  readonly ca: KeyPair;
  /** Admin (system:masters) kubeconfig, for kubectl and child processes. */
  readonly kubeconfig: string;
  /** Wall time of {@link start} in ms, for reports. */
  startMs = 0;

  private readonly tokens = new Map<string, string>();
  private etcd?: ManagedProcess;
  private apiServer?: ManagedProcess;
  private readonly others: ManagedProcess[] = [];
  private etcdPort = 0;
  private readonly apiPort: number;
  private readonly serving: KeyPair;
  private readonly agent: https.Agent;

  private constructor(
    private readonly opts: ControlPlaneOptions,
    apiPort: number,
  ) {
    this.dir = mkdtempSync(path.join(tmpdir(), 'tf-control-plane-'));
    this.apiPort = apiPort;
    this.server = `https://127.0.0.1:${apiPort}`;
    this.ca = createCa('envtest-ca');
    // As a cluster's: the `kubernetes` Service's ClusterIP (the first of the range) and names, which a
    // pod's in-cluster client dials through kube-proxy, and the node's address where it is advertised.
    this.serving = issueServingCert(this.ca, [
      '127.0.0.1',
      'localhost',
      'kubernetes.default.svc',
      NODE_NET.kubernetesServiceIp,
      ...(opts.node ? [NODE_NET.nodeIp] : []),
    ]);
    this.agent = keepAliveAgent(this.server, { ca: this.ca.cert }) as https.Agent;
    for (const u of this.users()) this.tokens.set(u.name, token());
    this.kubeconfig = this.writeKubeconfig('admin');
    const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.file('sa.pub', sa.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    this.file('sa.key', sa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  }

  /**
   * Starts etcd, kube-apiserver and whatever `opts` asks for; stops everything again if any fails.
   * A binary that could not bind its port is started again on fresh ports: freePort's port is free
   * when chosen, but another process (a suite in another jest worker) may take it before the binary
   * binds it.
   */
  static async start(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await ControlPlane.startOnce(opts);
      } catch (err) {
        if (attempt >= PORT_ATTEMPTS || !String(err).includes('address already in use')) throw err;
      }
    }
  }

  private static async startOnce(opts: ControlPlaneOptions): Promise<ControlPlane> {
    const started = Date.now();
    const cp = new ControlPlane(opts, await freePort());
    try {
      await cp.startEtcd();
      await cp.startApiServer();
      if (opts.controllerManager) await cp.startControllerManager();
      if (opts.scheduler) await cp.startScheduler(opts.scheduler === true ? {} : opts.scheduler);
      if (opts.kwok || opts.karpenter || opts.karpenterDra) await cp.startKwok();
    } catch (err) {
      await cp.stop();
      throw err;
    }
    cp.startMs = Date.now() - started;
    return cp;
  }

  private users(): User[] {
    return [
      { name: 'admin', groups: ['system:masters'] },
      CONTROLLER_MANAGER_USER,
      ...(this.opts.node ? [NODE_USER] : []),
      ...(this.opts.users ?? []),
    ];
  }

  private file(name: string, content: string): string {
    const p = path.join(this.dir, name);
    writeFileSync(p, content, { mode: 0o600 });
    return p;
  }

  private log(name: string): string {
    return path.join(this.dir, `${name}.log`);
  }

  /** A kubeconfig for a known user (the admin, one of `opts.users`, or the node's). */
  writeKubeconfig(user: string): string {
    const tok = this.tokens.get(user);
    if (!tok) throw new Error(`control plane: no user ${user}`);
    return this.file(
      `${user.replace(/[^a-z0-9.-]/gi, '_')}.kubeconfig`,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'envtest',
        clusters: [
          { name: 'envtest', cluster: { server: this.server, 'certificate-authority-data': Buffer.from(this.ca.cert).toString('base64') } },
        ],
        users: [{ name: user, user: { token: tok } }],
        contexts: [{ name: 'envtest', context: { cluster: 'envtest', user } }],
      }),
    );
  }

  /** A {@link Connection} for the runtime's HTTP client, as `user`. */
  connection(user = 'admin', userAgent = 'envtest'): Connection {
    const tok = this.tokens.get(user);
    if (!tok) throw new Error(`control plane: no user ${user}`);
    return {
      server: this.server,
      agent: keepAliveAgent(this.server, { ca: this.ca.cert }),
      headers: () => ({ Authorization: `Bearer ${tok}` }),
      userAgent,
    };
  }

  /** The runtime's client as `user` (default admin). */
  cluster(user = 'admin', userAgent?: string): HttpCluster {
    return new HttpCluster(this.connection(user, userAgent));
  }

  // ---- etcd ----

  /** etcd's client URL, e.g. for compaction through its JSON gateway. */
  get etcdUrl(): string {
    return `http://127.0.0.1:${this.etcdPort}`;
  }

  private async startEtcd(): Promise<void> {
    if (!this.etcdPort) this.etcdPort = await freePort();
    const peer = await freePort();
    const url = this.etcdUrl;
    this.etcd = startProcess(
      'etcd',
      binaryPath('etcd'),
      [
        `--data-dir=${path.join(this.dir, 'etcd')}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-cluster=default=http://127.0.0.1:${peer}`,
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      this.log('etcd'),
    );
    await waitFor('etcd /health', () => httpOk(`${url}/health`), START_TIMEOUT_MS, 100, this.etcd);
  }

  /** Compacts etcd's history up to its current revision: every older watch resume then gets 410 Gone. */
  async compactEtcd(): Promise<number> {
    const post = async (p: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await fetch(`${this.etcdUrl}${p}`, { method: 'POST', body: JSON.stringify(body) });
      if (!res.ok) throw new Error(`etcd ${p}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<Record<string, unknown>>;
    };
    const range = await post('/v3/kv/range', { key: Buffer.from('/').toString('base64') });
    const revision = Number((range.header as { revision: string }).revision);
    await post('/v3/kv/compaction', { revision, physical: true });
    return revision;
  }

  // ---- kube-apiserver ----

  private async startApiServer(): Promise<void> {
    const certDir = path.join(this.dir, 'apiserver');
    const cert = this.file('apiserver.crt', this.serving.cert);
    const key = this.file('apiserver.key', this.serving.key);
    const tokenFile = this.file(
      'tokens.csv',
      this.users()
        .map((u, i) => `${this.tokens.get(u.name)},${u.name},uid-${i}${u.groups?.length ? `,"${u.groups.join(',')}"` : ''}`)
        .join('\n') + '\n',
    );
    this.apiServer = startProcess(
      'kube-apiserver',
      binaryPath('kube-apiserver'),
      [
        `--etcd-servers=${this.etcdUrl}`,
        `--cert-dir=${certDir}`,
        `--tls-cert-file=${cert}`,
        `--tls-private-key-file=${key}`,
        `--secure-port=${this.apiPort}`,
        // With a real node: also on the node's address (only loopback and it exist in the test network
        // namespace), advertised there so the kubernetes Service's endpoint is one a pod can reach.
        ...(this.opts.node
          ? ['--bind-address=0.0.0.0', `--advertise-address=${NODE_NET.nodeIp}`, '--kubelet-preferred-address-types=InternalIP']
          : ['--bind-address=127.0.0.1', '--advertise-address=127.0.0.1']),
        `--service-cluster-ip-range=${NODE_NET.serviceCidr}`,
        '--allow-privileged=true',
        '--authorization-mode=RBAC',
        `--token-auth-file=${tokenFile}`,
        `--service-account-issuer=${this.server}/`,
        `--service-account-key-file=${path.join(this.dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${path.join(this.dir, 'sa.key')}`,
        // As envtest: pods need no ServiceAccount object, so tests need not wait for the SA controller.
        // TaintNodesByCondition would give every new node a not-ready taint that only the node lifecycle
        // controller removes; KWOK nodes are Ready at once, and tests want exactly the taints they set.
        // With a real node the ServiceAccount plugin stays on: pods that call the API (the node agent, the
        // controller) need their projected token, as in a cluster.
        `--disable-admission-plugins=${this.opts.node ? '' : 'ServiceAccount,'}TaintNodesByCondition`,
        ...(this.opts.audit ? this.auditFlags() : []),
        ...(this.opts.apiServerFlags ?? []),
      ],
      this.log('kube-apiserver'),
    );
    await waitFor('kube-apiserver /readyz', () => httpOk(`${this.server}/readyz`, this.agent), START_TIMEOUT_MS, 100, this.apiServer);
  }

  private auditFlags(): string[] {
    const policy = this.file(
      'audit-policy.yaml',
      stringify({
        apiVersion: 'audit.k8s.io/v1',
        kind: 'Policy',
        omitStages: ['RequestReceived'],
        rules: [{ level: 'Metadata' }],
      }),
    );
    return [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${path.join(this.dir, 'audit.log')}`,
      '--audit-log-format=json',
      '--audit-log-maxsize=0',
    ];
  }

  /** Every audit event so far (ResponseComplete stage), oldest first; needs `audit: true`. */
  auditEvents(): AuditEvent[] {
    if (!this.opts.audit) throw new Error('control plane: started without audit');
    const text = readFileSync(path.join(this.dir, 'audit.log'), 'utf8');
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEvent & { stage: string })
      .filter((e) => e.stage === 'ResponseComplete');
  }

  /** Kills kube-apiserver with SIGKILL (etcd keeps the data). */
  async killApiServer(): Promise<void> {
    await this.apiServer?.kill();
  }

  /** Starts kube-apiserver again on the same port and etcd. */
  async restartApiServer(): Promise<void> {
    await this.apiServer?.stop();
    await this.startApiServer();
  }

  // ---- controller manager, scheduler, KWOK ----

  private async startControllerManager(): Promise<void> {
    const port = await freePort();
    const kubeconfig = this.writeKubeconfig(CONTROLLER_MANAGER_USER.name);
    const p = startProcess(
      'kube-controller-manager',
      binaryPath('kube-controller-manager'),
      [
        `--kubeconfig=${kubeconfig}`,
        `--authentication-kubeconfig=${kubeconfig}`,
        `--authorization-kubeconfig=${kubeconfig}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        // resourceclaim-controller makes a pod's ResourceClaims from its templates (DRA pools).
        `--controllers=resourceclaim-controller,deployment-controller,replicaset-controller,daemonset-controller,statefulset-controller,job-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller${
          // A projected ServiceAccount token volume also mounts kube-root-ca.crt, which this controller publishes.
          this.opts.node ? ',root-ca-certificate-publisher-controller,endpointslice-controller,endpoints-controller' : ''
        }`,
        `--service-account-private-key-file=${path.join(this.dir, 'sa.key')}`,
        `--root-ca-file=${this.file('ca.crt', this.ca.cert)}`,
        '--kube-api-qps=1000',
        '--kube-api-burst=2000',
        '--concurrent-deployment-syncs=10',
        '--concurrent-replicaset-syncs=10',
      ],
      this.log('kube-controller-manager'),
    );
    this.others.push(p);
    await waitFor(
      'kube-controller-manager /healthz',
      () => httpOk(`https://127.0.0.1:${port}/healthz`, new https.Agent({ rejectUnauthorized: false })),
      START_TIMEOUT_MS,
      100,
      p,
    );
  }

  /**
   * Starts a kube-scheduler with `cfg` (more than one may run, e.g. one per controller replica with
   * leader election on); it is stopped with the control plane, or earlier by the caller.
   */
  async startScheduler(cfg: SchedulerConfig, name = 'kube-scheduler'): Promise<ManagedProcess> {
    const port = await freePort();
    const config = this.file(
      `${name}.yaml`,
      stringify({
        apiVersion: 'kubescheduler.config.k8s.io/v1',
        kind: 'KubeSchedulerConfiguration',
        clientConnection: { kubeconfig: this.kubeconfig, qps: 1000, burst: 2000 },
        leaderElection: cfg.leaderElection ?? { leaderElect: false },
        ...(cfg.percentageOfNodesToScore !== undefined ? { percentageOfNodesToScore: cfg.percentageOfNodesToScore } : {}),
        ...(cfg.profiles ? { profiles: cfg.profiles } : {}),
        ...(cfg.extenders ? { extenders: cfg.extenders } : {}),
      }),
    );
    const p = startProcess(
      name,
      binaryPath('kube-scheduler'),
      [
        `--config=${config}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--authentication-kubeconfig=${this.kubeconfig}`,
        `--authorization-kubeconfig=${this.kubeconfig}`,
      ],
      this.log(name),
    );
    this.others.push(p);
    await waitFor(
      `${name} /healthz`,
      () => httpOk(`https://127.0.0.1:${port}/healthz`, new https.Agent({ rejectUnauthorized: false })),
      START_TIMEOUT_MS,
      100,
      p,
    );
    return p;
  }

  private async startKwok(): Promise<void> {
    const stages = readdirSync(kwokStagesDir()).map((f) => `--config=${path.join(kwokStagesDir(), f)}`);
    const p = startProcess(
      'kwok',
      binaryPath('kwok'),
      [
        `--kubeconfig=${this.kubeconfig}`,
        '--manage-all-nodes=false',
        `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION.key}=${KWOK_NODE_ANNOTATION.value}`,
        '--node-lease-duration-seconds=40',
        ...stages,
      ],
      this.log('kwok'),
      { ...process.env, HOME: this.dir },
    );
    this.others.push(p);
    // KWOK has no readiness endpoint without --server-address; it is ready once it runs and has listed.
    await new Promise((r) => setTimeout(r, 300));
    const code = await Promise.race([p.exited, Promise.resolve(undefined)]);
    if (code !== undefined) throw new Error(`kwok exited with ${code}\n${p.tail()}`);
  }

  /**
   * Starts Karpenter's KWOK provider: applies its CRDs (copied from its module by envtest:setup) and
   * waits until they serve, then runs it with `instanceTypes` (its instance types file's entries) and
   * `env` (e.g. BATCH_IDLE_DURATION) until the control plane stops. Its NodePools need a
   * KWOKNodeClass whose Ready condition someone sets: no controller of its provider does. With
   * `draSlices` (instance type name -> ResourceSlice specs its nodes will publish), runs
   * `karpenter-dra`, whose instance types declare those devices (option `karpenterDra`).
   */
  async startKarpenter(
    instanceTypes: readonly object[],
    env: Record<string, string> = {},
    draSlices?: Record<string, readonly object[]>,
  ): Promise<void> {
    await this.kubectlOk(['apply', '--server-side', '-f', karpenterCrdsDir()]);
    await this.kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', karpenterCrdsDir()]);
    const [metrics, health] = [await freePort(), await freePort()];
    const binary = draSlices ? 'karpenter-dra' : 'karpenter';
    const p = startProcess(binary, binaryPath(binary), [], this.log(binary), {
      ...process.env,
      ...(draSlices ? { DRA_SLICES_FILE_PATH: this.file('dra-slices.json', JSON.stringify(draSlices)) } : {}),
      HOME: this.dir,
      KUBECONFIG: this.kubeconfig,
      INSTANCE_TYPES_FILE_PATH: this.file('instance-types.json', JSON.stringify(instanceTypes)),
      DISABLE_LEADER_ELECTION: 'true',
      METRICS_PORT: String(metrics),
      HEALTH_PROBE_PORT: String(health),
      LOG_LEVEL: 'debug',
      ...env,
    });
    this.others.push(p);
    await waitFor('karpenter /readyz', () => httpOk(`http://127.0.0.1:${health}/readyz`), START_TIMEOUT_MS, 200, p);
  }

  // ---- kubectl ----

  /** Runs kubectl as the admin (or `user`); never throws on a non-zero exit. */
  kubectl(args: readonly string[], opts: { input?: string; user?: string; timeoutMs?: number } = {}): Promise<KubectlResult> {
    const kubeconfig = opts.user ? this.writeKubeconfig(opts.user) : this.kubeconfig;
    return new Promise((resolve) => {
      const child = execFile(
        binaryPath('kubectl'),
        [`--kubeconfig=${kubeconfig}`, ...args],
        { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, HOME: this.dir } },
        (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      );
      if (opts.input !== undefined) child.stdin!.end(opts.input);
    });
  }

  /** Like {@link kubectl} but throws with stderr on failure. */
  async kubectlOk(args: readonly string[], opts: { input?: string; user?: string } = {}): Promise<string> {
    const r = await this.kubectl(args, opts);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
    return r.stdout;
  }

  /** The tail of a component's log, for failure messages. */
  logTail(name: Binary, lines = 40): string {
    const p = [this.etcd, this.apiServer, ...this.others].find((x) => x?.name === name);
    return p ? p.tail(lines) : '';
  }

  /** Stops every process (controllers, then the API server, then etcd) and removes the temp dir. */
  async stop(): Promise<void> {
    for (const p of [...this.others].reverse()) await p.stop();
    await this.apiServer?.stop();
    await this.etcd?.stop();
    this.agent.destroy();
    if (!process.env.TF_ENVTEST_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A real Kubernetes node for integration tests: containerd 2 and runc (with their own root, state and
 * socket; CDI on; a bridge CNI from Debian's plugins), and the kubelet and kube-proxy, all built by
 * `npm run envtest:setup`,
 * registered with a harness control plane started with `node: true`. The facts it relies on were
 * probed on this machine kind (../shared/research/real-node.md) and are checked again here:
 *
 *  - containerd needs `restrict_oom_score_adj` (the sandbox lacks CAP_SYS_RESOURCE; runc fails to
 *    set the pause container's oom_score_adj otherwise) and keeps pod network namespaces under its
 *    state dir;
 *  - the kubelet runs on cgroup v1 only with `failCgroupV1: false`, and refuses a loopback node IP:
 *    it takes the address of the namespace's own interface ({@link NODE_NET}), where kube-apiserver reaches it;
 *  - images come from tarballs made on the machine (test/envtest/images.ts), never from a registry:
 *    pods use `imagePullPolicy: Never`, image garbage collection is off.
 *
 * Some paths are fixed whatever the flags say (the device-plugin socket under /var/lib/kubelet,
 * shim sockets under /run/containerd, the CNI cache under /var/lib/cni, /var/log/containers): each
 * gets a bind mount from the node's directory, made inside the test run's private mount namespace,
 * so the host's own paths are never written. Hence one node per machine at a time: a node holds a
 * lock file for its life, so suites in several jest workers take turns (see {@link describeRealNode}).
 *
 * {@link RealNode.stop} stops both daemons and undoes every change (test/support/node/host.ts);
 * the test runner repeats that after jest exits, however it exits.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { binaryPath } from '../../envtest/assets';
import { IMAGE_REFS, NodeImage, cachedNodeImages } from '../../envtest/images';
import { ControlPlane, NODE_NAME, NODE_USER } from '../control-plane/control-plane';
import { ManagedProcess, freePort, httpGet, startProcess, waitFor } from '../control-plane/process';
import { globalSysctls, killMarked, mountsUnder, recordHost, removeNodeCgroups, takeNodeSlot, undoHost, unmountUnder } from './host';
import { NODE_NET } from './net';

type Obj = Record<string, any>;

/** Debian's packages the node runs on (installed by .ci/run; `apt-get install` them on a developer machine). */
export const NODE_PACKAGES = {
  cni: 'containernetworking-plugins',
  busybox: 'busybox-static',
} as const;
const CNI_BIN = '/usr/lib/cni';

/** Paths the kubelet, containerd or the CNI plugins use whatever their flags say: bind-mounted from the node's dir. */
// /run/tensor-fusion: the node agent's MPS folders (a hostPath of its DaemonSet).
const FIXED_PATHS = [
  '/var/lib/kubelet',
  '/run/containerd',
  '/run/tensor-fusion',
  // The CDI specs the node agent writes for its shares (containerd reads /etc/cdi and /var/run/cdi).
  '/run/cdi',
  '/var/lib/cni',
  '/var/log/containers',
  '/var/log/pods',
] as const;

const START_TIMEOUT_MS = 120_000;

export interface RealNodeOptions {
  /** Labels the Node gets at registration (`--node-labels`), e.g. what GpuNode would apply. */
  labels?: Record<string, string>;
}

/** Why a real node cannot run here, or undefined when it can. */
export function realNodeUnavailable(): string | undefined {
  const netns = process.env[NODE_NET.reasonEnv];
  if (netns) return `no test network namespace (${netns}); run through \`npm test\` as root`;
  if (!process.env[NODE_NET.stateEnv]) return 'not inside the test network namespace: run through `npm test` (scripts/in-netns.ts)';
  const missing: string[] = [];
  for (const b of ['kubelet', 'kube-proxy'] as const) if (!existsSync(binaryPath(b))) missing.push(`${b} (\`npm run envtest:setup\`)`);
  for (const b of ['containerd', 'containerd-shim-runc-v2', 'ctr', 'runc'] as const)
    if (!existsSync(binaryPath(b))) missing.push(`${b} (\`npm run envtest:setup\`)`);
  if (!existsSync(path.join(CNI_BIN, 'bridge'))) missing.push(`CNI plugins (apt-get install ${NODE_PACKAGES.cni})`);
  if (!cachedNodeImages()) missing.push(`node images (apt-get install ${NODE_PACKAGES.busybox}, then \`npm run envtest:setup\`)`);
  return missing.length ? `missing ${missing.join(', ')}` : undefined;
}

function run(cmd: string, args: readonly string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

export class RealNode {
  readonly name = NODE_NAME;
  readonly ip = NODE_NET.nodeIp;
  /** containerd's socket. */
  readonly socket: string;
  /** Wall time of {@link start} in ms. */
  startMs = 0;
  private containerd?: ManagedProcess;
  private kubelet?: ManagedProcess;
  private kubeProxy?: ManagedProcess;
  private kubeletArgs: string[] = [];
  private readonly state: string;

  private constructor(
    private readonly cp: ControlPlane,
    readonly dir: string,
    private readonly images: NodeImage[],
    private readonly unlock: () => void,
  ) {
    this.socket = path.join(dir, 'containerd', 'containerd.sock');
    this.state = process.env[NODE_NET.stateEnv]!;
  }

  /** Starts containerd and the kubelet, loads the images, and waits for the Node to be Ready. */
  static async start(cp: ControlPlane, opts: RealNodeOptions = {}): Promise<RealNode> {
    const why = realNodeUnavailable();
    if (why) throw new Error(`real node: ${why}`);
    const started = Date.now();
    const unlock = await takeNodeSlot(30 * 60_000);
    const node = new RealNode(cp, mkdtempSync(path.join(tmpdir(), 'tf-node-')), cachedNodeImages()!, unlock);
    try {
      // A run killed earlier may have left containers and cgroups behind.
      await undoHost(node.state);
      recordHost(node.state, { sysctls: globalSysctls(), markers: [node.socket], workDirs: [node.dir] });
      node.bindFixedPaths();
      await node.startContainerd();
      await node.loadImages();
      node.writeCni();
      await node.startKubelet(opts);
      await node.startKubeProxy();
    } catch (err) {
      await node.stop();
      throw err;
    }
    node.startMs = Date.now() - started;
    return node;
  }

  private sub(...parts: string[]): string {
    const p = path.join(this.dir, ...parts);
    mkdirSync(p, { recursive: true });
    return p;
  }

  private bindFixedPaths(): void {
    for (const target of FIXED_PATHS) {
      if (!existsSync(target)) {
        // Record the topmost directory made, so undoHost removes exactly what did not exist before.
        let top: string = target;
        while (!existsSync(path.dirname(top))) top = path.dirname(top);
        recordHost(this.state, { madeDirs: [top] });
        mkdirSync(target, { recursive: true });
      }
      const source = this.sub('fixed', target.replace(/\//g, '_'));
      execFileSync('mount', ['--bind', source, target], { stdio: ['ignore', 'ignore', 'pipe'] });
    }
  }

  private async startContainerd(): Promise<void> {
    const c = (...p: string[]) => this.sub('containerd', ...p);
    const config = path.join(this.dir, 'containerd.toml');
    // containerd 2's config format (version 3). Its CRI plugin resolves the CDI devices a device
    // plugin names (the share's delivery) from /etc/cdi and /var/run/cdi at every container create.
    const runtime = "plugins.'io.containerd.cri.v1.runtime'";
    writeFileSync(
      config,
      [
        'version = 3',
        `root = "${c('root')}"`,
        `state = "${c('state')}"`,
        "disabled_plugins = ['io.containerd.snapshotter.v1.btrfs', 'io.containerd.snapshotter.v1.devmapper', 'io.containerd.snapshotter.v1.zfs', 'io.containerd.snapshotter.v1.erofs', 'io.containerd.tracing.processor.v1.otlp']",
        '[grpc]',
        `  address = "${this.socket}"`,
        '[ttrpc]',
        `  address = "${this.socket}.ttrpc"`,
        "[plugins.'io.containerd.cri.v1.images']",
        '  snapshotter = "overlayfs"',
        "  [plugins.'io.containerd.cri.v1.images'.pinned_images]",
        `    sandbox = "${IMAGE_REFS.pause}"`,
        `[${runtime}]`,
        '  restrict_oom_score_adj = true',
        '  netns_mounts_under_state_dir = true',
        '  enable_unprivileged_ports = false',
        "  cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']",
        `  [${runtime}.containerd]`,
        '    default_runtime_name = "runc"',
        `    [${runtime}.containerd.runtimes.runc]`,
        '      runtime_type = "io.containerd.runc.v2"',
        `      [${runtime}.containerd.runtimes.runc.options]`,
        '        SystemdCgroup = false',
        `        BinaryName = "${binaryPath('runc')}"`,
        `  [${runtime}.cni]`,
        `    bin_dirs = ['${CNI_BIN}']`,
        `    conf_dir = "${this.sub('cni', 'net.d')}"`,
        '',
      ].join('\n'),
    );
    await this.runContainerd('containerd');
  }

  /** Starts containerd with the written config; resolves once it answers on its socket. */
  private async runContainerd(what: string): Promise<void> {
    const config = path.join(this.dir, 'containerd.toml');
    // The runc shim is found on PATH, beside containerd in the build cache.
    const bin = path.dirname(binaryPath('containerd'));
    this.containerd = startProcess(
      'containerd',
      binaryPath('containerd'),
      [`--config=${config}`, '--log-level=info'],
      path.join(this.dir, 'containerd.log'),
      { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` },
    );
    await waitFor(
      what,
      async () =>
        existsSync(this.socket) &&
        (await this.ctr(['version']).then(
          () => true,
          () => false,
        )),
      START_TIMEOUT_MS,
      100,
      this.containerd,
    );
  }

  /** Runs `ctr` against this node's containerd in the kubelet's namespace (k8s.io). */
  ctr(args: readonly string[], timeoutMs?: number): Promise<string> {
    return run(binaryPath('ctr'), ['--address', this.socket, '--namespace', 'k8s.io', ...args], timeoutMs);
  }

  private async loadImages(): Promise<void> {
    for (const img of this.images) await this.ctr(['images', 'import', '--platform', 'linux/amd64', img.file], 300_000);
  }

  private writeCni(): void {
    // Bridge with the node's side as the pods' gateway; no masquerade: nothing is routed out anyway.
    writeFileSync(
      path.join(this.sub('cni', 'net.d'), '10-tf-bridge.conflist'),
      JSON.stringify(
        {
          cniVersion: '0.4.0',
          name: 'tf-test',
          plugins: [
            {
              type: 'bridge',
              bridge: NODE_NET.bridge,
              isGateway: true,
              ipMasq: false,
              hairpinMode: true,
              ipam: {
                type: 'host-local',
                ranges: [[{ subnet: NODE_NET.podSubnet }]],
                routes: [{ dst: '0.0.0.0/0' }],
                dataDir: this.sub('cni', 'ipam'),
              },
            },
            { type: 'portmap', capabilities: { portMappings: true } },
          ],
        },
        null,
        2,
      ),
    );
  }

  private async startKubelet(opts: RealNodeOptions): Promise<void> {
    const port = await freePort();
    const healthz = await freePort();
    const config = path.join(this.dir, 'kubelet.yaml');
    writeFileSync(
      config,
      stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        address: this.ip,
        port,
        readOnlyPort: 0,
        healthzBindAddress: '127.0.0.1',
        healthzPort: healthz,
        // kube-apiserver calls the kubelet (logs, exec) without client certificates in the harness.
        authentication: { anonymous: { enabled: true }, webhook: { enabled: false }, x509: {} },
        authorization: { mode: 'AlwaysAllow' },
        cgroupDriver: 'cgroupfs',
        failCgroupV1: false,
        failSwapOn: false,
        containerRuntimeEndpoint: `unix://${this.socket}`,
        volumePluginDir: this.sub('volume-plugins'),
        resolvConf: '',
        // The images exist only as loaded tarballs: never collect them.
        imageGCHighThresholdPercent: 100,
        imageGCLowThresholdPercent: 99,
        evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
        serializeImagePulls: false,
        nodeStatusUpdateFrequency: '2s',
        syncFrequency: '10s',
        shutdownGracePeriod: '0s',
        maxPods: 110,
        kubeAPIQPS: 100,
        kubeAPIBurst: 200,
      }),
    );
    this.kubeletArgs = [
      `--config=${config}`,
      `--kubeconfig=${this.cp.writeKubeconfig(NODE_USER.name)}`,
      '--root-dir=/var/lib/kubelet',
      `--hostname-override=${this.name}`,
      `--node-ip=${this.ip}`,
      '--v=2',
      ...(opts.labels && Object.keys(opts.labels).length
        ? [
            `--node-labels=${Object.entries(opts.labels)
              .map(([k, v]) => `${k}=${v}`)
              .join(',')}`,
          ]
        : []),
    ];
    await this.runKubelet(`node ${this.name} Ready`, 0);
  }

  /** Starts the kubelet with its flags; resolves once the Node is Ready with a heartbeat newer than `since`. */
  private async runKubelet(what: string, since: number): Promise<void> {
    this.kubelet = startProcess('kubelet', binaryPath('kubelet'), this.kubeletArgs, path.join(this.dir, 'kubelet.log'));
    await waitFor(what, () => this.ready(since), START_TIMEOUT_MS, 250, this.kubelet);
  }

  /**
   * kube-proxy (iptables mode, inside the test network namespace): Services work as in a cluster, so a
   * pod reaches kube-apiserver through the `kubernetes` Service and kube-apiserver reaches a webhook
   * through its Service, with no URL rewriting.
   */
  private async startKubeProxy(): Promise<void> {
    const healthz = await freePort();
    const metrics = await freePort();
    const config = path.join(this.dir, 'kube-proxy.yaml');
    writeFileSync(
      config,
      stringify({
        apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
        kind: 'KubeProxyConfiguration',
        clientConnection: { kubeconfig: this.cp.writeKubeconfig(NODE_USER.name) },
        hostnameOverride: this.name,
        mode: 'iptables',
        clusterCIDR: NODE_NET.podSubnet,
        healthzBindAddress: `127.0.0.1:${healthz}`,
        metricsBindAddress: `127.0.0.1:${metrics}`,
        // Zeros leave the conntrack table size and timeouts as they are: the table size is global to the machine.
        conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
        iptables: { syncPeriod: '30s', minSyncPeriod: '0s' },
      }),
    );
    this.kubeProxy = startProcess(
      'kube-proxy',
      binaryPath('kube-proxy'),
      [`--config=${config}`, '--v=2'],
      path.join(this.dir, 'kube-proxy.log'),
    );
    await waitFor(
      'kube-proxy /healthz',
      async () => (await httpGet(`http://127.0.0.1:${healthz}/healthz`)).status === 200,
      START_TIMEOUT_MS,
      250,
      this.kubeProxy,
    );
  }

  /** The Node's Ready condition is True and its heartbeat is newer than `since`. */
  async ready(since = 0): Promise<boolean> {
    const r = await this.cp.kubectl(['get', 'node', this.name, '-o', 'json']);
    if (r.code !== 0) return false;
    const ready = ((JSON.parse(r.stdout) as Obj).status?.conditions ?? []).find((c: Obj) => c.type === 'Ready');
    return ready?.status === 'True' && Date.parse(ready.lastHeartbeatTime) >= since;
  }

  /** Stops the kubelet (SIGTERM) and starts it again with the same flags; resolves once the node is Ready again. */
  async restartKubelet(): Promise<void> {
    await this.kubelet?.stop();
    await this.runKubelet(`node ${this.name} Ready after a kubelet restart`, Date.now() - 1_000);
  }

  /** Stops the kubelet (SIGTERM): its containers keep running; the Node stays Ready until its grace period. */
  async stopKubelet(): Promise<void> {
    await this.kubelet?.stop();
  }

  /** Starts the stopped kubelet again; resolves once the node is Ready again. */
  async resumeKubelet(): Promise<void> {
    await this.runKubelet(`node ${this.name} Ready after a kubelet start`, Date.now() - 1_000);
  }

  /** Stops containerd (SIGTERM; shims and containers keep running, as on a real node) and starts it again. */
  async restartContainerd(): Promise<void> {
    await this.containerd?.stop();
    await this.runContainerd('containerd after a restart');
  }

  /**
   * A reboot, as far as the node's state goes: kube-proxy, the kubelet, every container and containerd
   * stopped; what lives on tmpfs on a real node emptied (/run/containerd, /run/tensor-fusion, /run/cdi
   * and containerd's state); the kubelet's folder (its device checkpoint) and containerd's root (the
   * images) kept; then containerd, the images, the kubelet and kube-proxy started again. Resolves
   * once the Node is Ready again. `alsoWipe`: more folders that stand for tmpfs ones here.
   */
  async reboot(alsoWipe: readonly string[] = []): Promise<void> {
    await this.kubeProxy?.stop();
    await this.kubelet?.stop();
    await removeNodeCgroups();
    await this.containerd?.stop();
    killMarked([this.socket]);
    const tmpfs = [...FIXED_PATHS.filter((p) => p.startsWith('/run/')), path.join(this.dir, 'containerd', 'state'), ...alsoWipe];
    // Mounts under them (containers' root filesystems, network namespaces) go with them, as at a reboot.
    unmountUnder(tmpfs.filter((p) => !FIXED_PATHS.includes(p as never)));
    for (const p of FIXED_PATHS.filter((x) => x.startsWith('/run/'))) unmountUnder(mountsUnder([p]).filter((m) => m !== p));
    for (const p of tmpfs) for (const f of readdirSync(p)) rmSync(path.join(p, f), { recursive: true, force: true });
    await this.runContainerd('containerd after a reboot');
    const since = Date.now();
    await this.runKubelet(`node ${this.name} Ready after a reboot`, since);
    await this.startKubeProxy();
  }

  /** Stops the kubelet and containerd, kills every container, undoes every host change, frees the node slot. */
  async stop(): Promise<void> {
    try {
      await this.kubeProxy?.stop();
      await this.kubelet?.stop();
      await removeNodeCgroups();
      await this.containerd?.stop();
      unmountUnder([this.dir, ...FIXED_PATHS]);
      const left = await undoHost(this.state);
      // eslint-disable-next-line no-console
      if (left.length) console.warn(`real node: could not undo ${left.join('; ')}`);
    } finally {
      this.unlock();
    }
  }
}

/**
 * Where the real control-plane binaries live: one home for their versions (read from the wrapper
 * go.mod files beside this file), the cache directory and the KUBEBUILDER_ASSETS convention. Used by
 * `npm run envtest:setup` (which builds them) and by the test harness (which runs them).
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';

/** A wrapper Go module under test/envtest/ and the main packages it builds. */
export interface GoBuild {
  /** Folder name under test/envtest/, also the cache prefix. */
  name: 'kubernetes' | 'etcd' | 'kwok' | 'pulumi' | 'pulumi-kubernetes' | 'containerd' | 'runc' | 'karpenter';
  /** The module whose version keys the cache. */
  module: string;
  /** Binary name -> Go main package (`.`: the wrapper module's own main package). */
  binaries: Record<string, string>;
  /** Build tags. */
  tags?: readonly string[];
  /** Built with cgo (runc's nsenter is C); every other build is static, CGO_ENABLED=0. */
  cgo?: boolean;
  /**
   * The Go toolchain the build needs when the machine's is too old (GOTOOLCHAIN, fetched through the
   * Go module proxy); every other build uses the local Go (GOTOOLCHAIN=local).
   */
  toolchain?: string;
}

/**
 * The version the Kubernetes provider is stamped with. The proxy serves its module only at commit
 * f47bc2d6 (2026-01-14), made after release 4.24.0; a prerelease of the next minor says so and
 * sorts above every npm release up to 4.24.1, so the engine takes it for the npm
 * `@pulumi/kubernetes` the tests pin (4.23.0, the last release before that commit: every resource
 * that SDK knows, this provider serves).
 */
export const PULUMI_KUBERNETES_PROVIDER_VERSION = '4.25.0-dev.f47bc2d6f199';

export const GO_BUILDS: readonly GoBuild[] = [
  {
    name: 'kubernetes',
    module: 'k8s.io/kubernetes',
    binaries: {
      'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
      'kube-scheduler': 'k8s.io/kubernetes/cmd/kube-scheduler',
      'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
      kubectl: 'k8s.io/kubernetes/cmd/kubectl',
      // The real node's agent (test/support/node): same release as the control plane.
      kubelet: 'k8s.io/kubernetes/cmd/kubelet',
      'kube-proxy': 'k8s.io/kubernetes/cmd/kube-proxy',
    },
  },
  { name: 'etcd', module: 'go.etcd.io/etcd/server/v3', binaries: { etcd: 'go.etcd.io/etcd/server/v3' } },
  { name: 'kwok', module: 'sigs.k8s.io/kwok', binaries: { kwok: 'sigs.k8s.io/kwok/cmd/kwok' } },
  // The Pulumi engine (CLI) at the version of the npm @pulumi/pulumi, and the Kubernetes provider,
  // for the real-engine suites (test/support/pulumi-engine.ts).
  { name: 'pulumi', module: 'github.com/pulumi/pulumi/pkg/v3', binaries: { pulumi: 'github.com/pulumi/pulumi/pkg/v3/cmd/pulumi' } },
  { name: 'pulumi-kubernetes', module: 'github.com/pulumi/pulumi-kubernetes/provider/v4', binaries: { 'pulumi-resource-kubernetes': '.' } },
  // The real node's container runtime (test/support/node): containerd 2, whose CRI plugin resolves
  // CDI devices (the share's delivery), and the runc its release is tested with. Debian 12's are
  // containerd 1.6 (no CDI) and runc 1.1.
  {
    name: 'containerd',
    module: 'github.com/containerd/containerd/v2',
    binaries: {
      containerd: 'github.com/containerd/containerd/v2/cmd/containerd',
      'containerd-shim-runc-v2': 'github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2',
      ctr: 'github.com/containerd/containerd/v2/cmd/ctr',
    },
    tags: ['no_btrfs', 'no_devmapper', 'no_zfs'],
  },
  {
    name: 'runc',
    module: 'github.com/opencontainers/runc',
    binaries: { runc: 'github.com/opencontainers/runc' },
    tags: ['seccomp'],
    cgo: true,
  },
  // A real autoscaler for the growth suites (test/e2e/karpenter-growth.test.ts): Karpenter's KWOK cloud
  // provider, which creates KWOK nodes for pending pods from an instance types file. Its module needs
  // Go >= 1.26.9. karpenter-dra (the wrapper's main.go) is the same provider whose instance types also
  // declare DRA devices, which the stock one cannot (test/e2e/karpenter-dra-growth.test.ts).
  {
    name: 'karpenter',
    module: 'sigs.k8s.io/karpenter',
    binaries: { karpenter: 'sigs.k8s.io/karpenter/kwok', 'karpenter-dra': '.' },
    toolchain: 'go1.27.3',
  },
];

/** Every binary the harness can run. */
export type Binary =
  | 'kube-apiserver'
  | 'kube-scheduler'
  | 'kube-controller-manager'
  | 'kubectl'
  | 'kubelet'
  | 'kube-proxy'
  | 'etcd'
  | 'kwok'
  | 'pulumi'
  | 'pulumi-resource-kubernetes'
  | 'containerd'
  | 'containerd-shim-runc-v2'
  | 'ctr'
  | 'runc'
  | 'karpenter'
  | 'karpenter-dra';

/** What setup-envtest puts in KUBEBUILDER_ASSETS; the rest come from our own cache. */
export const KUBEBUILDER_BINARIES: readonly Binary[] = ['kube-apiserver', 'etcd', 'kubectl'];

export const ENVTEST_DIR = __dirname;

/** `~/.cache/tensor-fusion-iac/envtest`, or `$XDG_CACHE_HOME/...`, or TF_ENVTEST_CACHE. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TF_ENVTEST_CACHE) return env.TF_ENVTEST_CACHE;
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'tensor-fusion-iac', 'envtest');
}

/** The version of `module` required by the wrapper go.mod of `build`. */
export function goModVersion(build: GoBuild): string {
  const gomod = readFileSync(path.join(ENVTEST_DIR, build.name, 'go.mod'), 'utf8');
  const m = new RegExp(`^\\s*(?:require\\s+)?${build.module.replace(/[./]/g, '\\$&')}\\s+(v\\S+)`, 'm').exec(gomod);
  if (!m) throw new Error(`test/envtest/${build.name}/go.mod: no requirement on ${build.module}`);
  return m[1];
}

/** The cache folder of one build, keyed by its version: `<cache>/kubernetes-v1.36.3/bin`. */
export function buildDir(build: GoBuild, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheRoot(env), `${build.name}-${goModVersion(build)}`);
}

/** A folder the setup fills from a build's module, beside its binaries. */
function moduleFilesDir(name: GoBuild['name'], folder: string, env: NodeJS.ProcessEnv): string {
  return path.join(
    buildDir(
      GO_BUILDS.find((b) => b.name === name)!,
      env,
    ),
    folder,
  );
}

/** The KWOK stage files (node and pod lifecycles) copied from its module by the setup. */
export function kwokStagesDir(env: NodeJS.ProcessEnv = process.env): string {
  return moduleFilesDir('kwok', 'stages', env);
}

/** Path of a binary: KUBEBUILDER_ASSETS first for the ones setup-envtest provides, else our cache. */
export function binaryPath(bin: Binary, env: NodeJS.ProcessEnv = process.env): string {
  const assets = env.KUBEBUILDER_ASSETS;
  if (assets && KUBEBUILDER_BINARIES.includes(bin) && existsSync(path.join(assets, bin))) return path.join(assets, bin);
  const build = GO_BUILDS.find((b) => bin in b.binaries)!;
  return path.join(buildDir(build, env), 'bin', bin);
}

/** The binaries among `wanted` that cannot be found. */
export function missingBinaries(wanted: readonly Binary[], env: NodeJS.ProcessEnv = process.env): Binary[] {
  return wanted.filter((b) => !existsSync(binaryPath(b, env)));
}

/** Karpenter's CRDs (NodePool, NodeClaim, KWOKNodeClass, ...) copied from its module by the setup. */
export function karpenterCrdsDir(env: NodeJS.ProcessEnv = process.env): string {
  return moduleFilesDir('karpenter', 'crds', env);
}

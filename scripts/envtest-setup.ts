/**
 * npm run envtest:setup — builds the real control-plane binaries the integration tests run against
 * (kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, kubelet, kube-proxy, etcd, kwok,
 * Karpenter's KWOK provider and its CRDs)
 * and the Pulumi engine and Kubernetes provider of the real-engine suites, from their Go modules,
 * into a cache outside the repo keyed by version (test/envtest/assets.ts). Idempotent: binaries already
 * built from the same go.mod/go.sum are kept. Binaries that KUBEBUILDER_ASSETS provides are not built.
 * Only Go modules come from the network (GOTOOLCHAIN=local, except Karpenter's pinned toolchain,
 * which the Go module proxy serves too).
 *
 * With KUBEBUILDER_ASSETS set (setup-envtest's kube-apiserver, etcd and kubectl), nothing is built
 * unless --all asks for the rest (kube-scheduler, kube-controller-manager, kwok); the suites that need
 * those skip and say so.
 *
 * It also makes the real node's container images (test/envtest/images.ts), cached by content.
 *
 * Flags: --force rebuilds everything; --only=kubernetes,etcd,kwok,pulumi,pulumi-kubernetes,containerd,runc,karpenter,images limits
 * the builds; --all (see above).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { buildNodeImages } from '../test/envtest/images';
import {
  ENVTEST_DIR,
  GO_BUILDS,
  GoBuild,
  KUBEBUILDER_BINARIES,
  PULUMI_KUBERNETES_PROVIDER_VERSION,
  buildDir,
  cacheRoot,
  goModVersion,
  karpenterCrdsDir,
  kwokStagesDir,
} from '../test/envtest/assets';

/** KWOK v0.8 ships no built-in stages: these lifecycles (nodes Ready, pods Running, deletes finish) are copied from its module. */
const KWOK_STAGES = [
  'node/fast/node-initialize.yaml',
  'node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'pod/fast/pod-ready.yaml',
  'pod/fast/pod-complete.yaml',
  'pod/fast/pod-delete.yaml',
];

const args = process.argv.slice(2);
const force = args.includes('--force');
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const all = args.includes('--all');

function goEnv(build?: GoBuild): NodeJS.ProcessEnv {
  return { ...process.env, GOTOOLCHAIN: build?.toolchain ?? 'local', CGO_ENABLED: build?.cgo ? '1' : '0', GOFLAGS: '-mod=mod' };
}

function go(build: GoBuild, goArgs: string[]): string {
  return execFileSync('go', goArgs, {
    cwd: path.join(ENVTEST_DIR, build.name),
    env: goEnv(build),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** What a build's binaries were made from: a change to the wrapper module rebuilds them. */
function fingerprint(build: GoBuild): string {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go']) {
    const file = path.join(ENVTEST_DIR, build.name, f);
    if (existsSync(file)) h.update(readFileSync(file));
  }
  if (build.name === 'pulumi-kubernetes') h.update(PULUMI_KUBERNETES_PROVIDER_VERSION);
  h.update(JSON.stringify([build.tags ?? [], build.cgo ?? false]));
  h.update(execFileSync('go', ['env', 'GOVERSION'], { env: goEnv(build), encoding: 'utf8' }));
  return h.digest('hex');
}

/** -X flags that stamp the Kubernetes version where `kubectl version` and /version read it (hack/lib/version.sh). */
function kubernetesLdflags(version: string): string {
  const [major, minor] = version.replace(/^v/, '').split('.');
  const vars = {
    gitVersion: version,
    gitMajor: major,
    gitMinor: minor,
    gitTreeState: 'clean',
    buildDate: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  const flags: string[] = [];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    for (const [k, v] of Object.entries(vars)) flags.push(`-X ${pkg}.${k}=${v}`);
  }
  return flags.join(' ');
}

/** -X flags that stamp each build's version where it reports it; '' for builds that need none. */
function versionLdflags(build: GoBuild, version: string): string {
  switch (build.name) {
    case 'kubernetes':
      return kubernetesLdflags(version);
    case 'pulumi':
      return `-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=${version}`;
    case 'containerd':
      return `-X github.com/containerd/containerd/v2/version.Version=${version}`;
    case 'runc':
      return `-X main.version=${version.replace(/^v/, '')}`;
    case 'pulumi-kubernetes':
      return `-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=${PULUMI_KUBERNETES_PROVIDER_VERSION}`;
    default:
      return '';
  }
}

/**
 * The provider's main package (test/envtest/pulumi-kubernetes/main.go) embeds the schema and the
 * Terraform mapping, as upstream's does after its `go generate`: written here from the module's own
 * files, the schema with its version set, both minified (they are git-ignored).
 */
function writeProviderEmbeds(build: GoBuild): void {
  // Downloaded first: on a cold module cache `go list -m` knows no folder for it yet.
  const moduleDir = (JSON.parse(go(build, ['mod', 'download', '-json', build.module])) as { Dir: string }).Dir;
  const source = path.join(moduleDir, 'cmd', 'pulumi-resource-kubernetes');
  const schema = JSON.parse(readFileSync(path.join(source, 'schema.json'), 'utf8')) as Record<string, unknown>;
  const dir = path.join(ENVTEST_DIR, build.name);
  writeFileSync(path.join(dir, 'schema-embed.json'), JSON.stringify({ ...schema, version: PULUMI_KUBERNETES_PROVIDER_VERSION }));
  writeFileSync(
    path.join(dir, 'terraform-mapping-embed.json'),
    JSON.stringify(JSON.parse(readFileSync(path.join(source, 'terraform-mapping.json'), 'utf8'))),
  );
}

/** Karpenter's CRDs, from the module its binary was built from: the ones its KWOK chart installs, and KWOKNodeClass. */
const KARPENTER_CRDS = ['kwok/charts/crds', 'kwok/apis/crds'];

function copyKarpenterCrds(build: GoBuild): void {
  const moduleDir = go(build, ['list', '-m', '-f', '{{.Dir}}', build.module]).trim();
  const crds = karpenterCrdsDir();
  rmSync(crds, { recursive: true, force: true });
  mkdirSync(crds, { recursive: true });
  let n = 0;
  for (const dir of KARPENTER_CRDS) {
    for (const f of readdirSync(path.join(moduleDir, dir)).filter((f) => f.endsWith('.yaml'))) {
      copyFileSync(path.join(moduleDir, dir, f), path.join(crds, f));
      n++;
    }
  }
  console.log(`  copied ${n} Karpenter CRDs to ${crds}`);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function setup(build: GoBuild): void {
  const version = goModVersion(build);
  const dir = buildDir(build);
  const binDir = path.join(dir, 'bin');
  const assets = process.env.KUBEBUILDER_ASSETS;
  const wanted = Object.keys(build.binaries).filter(
    (b) => !(assets && KUBEBUILDER_BINARIES.includes(b as never) && existsSync(path.join(assets, b))),
  );
  const skipped = Object.keys(build.binaries).filter((b) => !wanted.includes(b));
  for (const b of skipped) console.log(`  ${b}: from KUBEBUILDER_ASSETS (${assets})`);
  if (wanted.length === 0) return;
  const stampFile = path.join(dir, 'stamp.json');
  const print = fingerprint(build);
  const stamp = existsSync(stampFile) ? (JSON.parse(readFileSync(stampFile, 'utf8')) as { fingerprint?: string }) : {};
  const fresh = !force && stamp.fingerprint === print;
  const cached = fresh ? wanted.filter((b) => existsSync(path.join(binDir, b))) : [];
  if (cached.length === wanted.length) {
    console.log(`  ${build.name} ${version}: cached in ${binDir} (${wanted.join(', ')})`);
    return;
  }
  // Same module and Go: only the binaries missing from the cache are built (a binary added to the list).
  if (cached.length) console.log(`  ${build.name} ${version}: cached ${cached.join(', ')}`);
  mkdirSync(binDir, { recursive: true });
  const ldflags = ['-s', '-w', versionLdflags(build, version)].join(' ').trim();
  if (build.name === 'pulumi-kubernetes') writeProviderEmbeds(build);
  for (const bin of wanted.filter((b) => !cached.includes(b))) {
    const started = Date.now();
    const tmp = path.join(binDir, `.${bin}.tmp`);
    const tags = build.tags?.length ? ['-tags', build.tags.join(',')] : [];
    go(build, ['build', '-trimpath', ...tags, '-ldflags', ldflags, '-o', tmp, build.binaries[bin]]);
    renameSync(tmp, path.join(binDir, bin));
    console.log(`  built ${bin} ${version} in ${seconds(Date.now() - started)}`);
  }
  if (build.name === 'kwok') {
    const moduleDir = go(build, ['list', '-m', '-f', '{{.Dir}}', build.module]).trim();
    const stages = kwokStagesDir();
    rmSync(stages, { recursive: true, force: true });
    mkdirSync(stages, { recursive: true });
    for (const s of KWOK_STAGES) copyFileSync(path.join(moduleDir, 'kustomize', 'stage', s), path.join(stages, path.basename(s)));
    console.log(`  copied ${KWOK_STAGES.length} KWOK stages to ${stages}`);
  }
  if (build.name === 'karpenter') copyKarpenterCrds(build);
  // go.sum as the builds left it (a binary new to the list may have added module sums).
  writeFileSync(stampFile, JSON.stringify({ version, fingerprint: fingerprint(build), builtAt: new Date().toISOString() }, null, 2));
}

/** The real node's images (test/envtest/images.ts); a machine without busybox-static says what to install. */
function setupImages(): void {
  try {
    buildNodeImages((line) => console.log(line));
  } catch (err) {
    if (process.env.CI) throw err;
    console.log(`  node images: not made (${(err as Error).message}); the real-node suites will skip`);
  }
}

function main(): void {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    console.error(
      'envtest:setup: `go` was not found on PATH. Install Go 1.26 or newer, or set KUBEBUILDER_ASSETS to a setup-envtest directory (kube-apiserver, etcd, kubectl).',
    );
    process.exit(1);
  }
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && !all && !only) {
    const missing = KUBEBUILDER_BINARIES.filter((b) => !existsSync(path.join(assets, b)));
    if (missing.length) {
      console.error(`envtest:setup: KUBEBUILDER_ASSETS=${assets} lacks ${missing.join(', ')}`);
      process.exit(1);
    }
    console.log(`envtest:setup: using KUBEBUILDER_ASSETS=${assets} (${KUBEBUILDER_BINARIES.join(', ')}); nothing built.`);
    console.log(
      '  Suites that also need kube-scheduler, kube-controller-manager or kwok will skip; `npm run envtest:setup -- --all` builds those.',
    );
    return;
  }
  console.log(`envtest:setup: cache ${cacheRoot()}`);
  const started = Date.now();
  for (const build of GO_BUILDS) if (!only || only.includes(build.name)) setup(build);
  if (!only || only.includes('images')) setupImages();
  console.log(`envtest:setup: done in ${seconds(Date.now() - started)}`);
}

main();

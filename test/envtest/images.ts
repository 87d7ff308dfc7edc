/**
 * The real node's container images, made on the machine: no registry is reachable here, so each image
 * is packed by hand as an OCI image layout tarball (oci-layout, index.json, manifest, config and one
 * uncompressed layer, every blob named by its sha256) that `ctr images import` loads into containerd.
 *
 *  - busybox: Debian's static busybox with its applet links, a passwd and a group file;
 *  - pause:   the same root filesystem, sleeping forever (the sandbox image containerd starts per pod);
 *  - node:    this machine's own `node` binary with the shared libraries `ldd` lists, plus busybox, for
 *             the controller bundle, the node agent and worker pods;
 *  - kube-scheduler: the static binary envtest:setup built, under the official image's name and tag,
 *             for the scheduler container of the controller pod.
 *
 * Cached by content under `<cache>/images/`: a tarball's name carries the hash of its inputs (the
 * binaries' bytes and this builder's recipe version), so a new Node or busybox makes a new image.
 * Layers are written by GNU tar with fixed owners, modes' order and mtimes, so the same inputs give
 * the same digests.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { GO_BUILDS, binaryPath, cacheRoot, goModVersion } from './assets';

/** Bumped when the recipe below changes, so cached tarballs are rebuilt. */
const RECIPE = 1;

/** Where Debian's busybox-static puts the binary. */
export const BUSYBOX = '/bin/busybox';

/** One image the node can run with `imagePullPolicy: Never`. */
export interface NodeImage {
  /** Short name used by the tests. */
  readonly id: keyof typeof IMAGE_REFS;
  /** The reference pods (and containerd's sandbox_image) name. */
  readonly ref: string;
  /** The OCI tarball in the cache. */
  readonly file: string;
}

export const IMAGE_REFS = {
  /** containerd's `sandbox_image`; the tag kubelet 1.36 itself would name. */
  pause: 'registry.k8s.io/pause:3.10.1',
  busybox: 'tensor-fusion.test/busybox:local',
  node: `tensor-fusion.test/node:${process.version}`,
  /** The official image's name and tag, made from the same release's binary that envtest:setup built. */
  'kube-scheduler': `registry.k8s.io/kube-scheduler:${goModVersion(GO_BUILDS.find((b) => b.name === 'kubernetes')!)}`,
} as const;

export function imagesDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheRoot(env), 'images');
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

function fileHash(file: string): string {
  return sha256(readFileSync(file));
}

/** The shared libraries (and the loader) that `ldd` lists for a binary. */
export function sharedLibraries(binary: string): string[] {
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) libs.push(m[1]);
  }
  return libs;
}

interface Recipe {
  id: NodeImage['id'];
  /** Files copied in: [host path, path in the image]. */
  files: [string, string][];
  cmd: string[];
  env?: string[];
}

function recipes(): Recipe[] {
  const node = path.resolve(process.execPath);
  const busybox: [string, string][] = [[BUSYBOX, '/bin/busybox']];
  return [
    { id: 'busybox', files: busybox, cmd: ['/bin/sh'] },
    // pid 1 ignores SIGTERM without a handler; containerd stops a sandbox with SIGKILL anyway.
    { id: 'pause', files: busybox, cmd: ['/bin/sleep', '2147483647'] },
    {
      id: 'node',
      cmd: ['/usr/local/bin/node'],
      files: [...busybox, [node, '/usr/local/bin/node'], ...sharedLibraries(node).map((l): [string, string] => [l, l])],
      env: ['NODE_ENV=production'],
    },
    {
      id: 'kube-scheduler',
      cmd: ['/usr/local/bin/kube-scheduler'],
      files: [...busybox, [binaryPath('kube-scheduler'), '/usr/local/bin/kube-scheduler']],
    },
  ];
}

function contentKey(r: Recipe): string {
  const h = createHash('sha256');
  h.update(`recipe ${RECIPE} ${r.id} ${JSON.stringify(r.cmd)} ${JSON.stringify(r.env ?? [])}\n`);
  for (const [from, to] of r.files) h.update(`${to} ${fileHash(from)}\n`);
  return h.digest('hex').slice(0, 16);
}

/** A root filesystem for `r` in `dir`: its files, busybox's applet links, passwd/group, empty dirs. */
function rootfs(r: Recipe, dir: string): void {
  for (const d of ['bin', 'etc', 'tmp', 'proc', 'sys', 'dev', 'root', 'var/run']) mkdirSync(path.join(dir, d), { recursive: true });
  chmodSync(path.join(dir, 'tmp'), 0o1777);
  for (const [from, to] of r.files) {
    const dest = path.join(dir, to);
    mkdirSync(path.dirname(dest), { recursive: true });
    copyFileSync(from, dest);
    chmodSync(dest, statSync(from).mode & 0o777);
  }
  const applets = execFileSync(BUSYBOX, ['--list'], { encoding: 'utf8' })
    .split('\n')
    .filter((a) => a && a !== 'busybox');
  for (const a of applets) if (!existsSync(path.join(dir, 'bin', a))) symlinkSync('busybox', path.join(dir, 'bin', a));
  writeFileSync(path.join(dir, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
  writeFileSync(path.join(dir, 'etc/group'), 'root:x:0:\nnobody:x:65534:\n');
}

/** A reproducible tar of `dir`'s contents. */
function tar(dir: string, out: string): void {
  execFileSync('tar', [
    '--sort=name',
    '--mtime=@0',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--format=gnu',
    '-cf',
    out,
    '-C',
    dir,
    '.',
  ]);
}

function blob(layout: string, data: Buffer): { digest: string; size: number } {
  const digest = sha256(data);
  writeFileSync(path.join(layout, 'blobs', 'sha256', digest), data);
  return { digest: `sha256:${digest}`, size: data.length };
}

/** Packs `r` as an OCI image layout tarball at `out`. */
function pack(r: Recipe, ref: string, out: string): void {
  const work = mkdtempSync(path.join(tmpdir(), `tf-image-${r.id}-`));
  try {
    const root = path.join(work, 'rootfs');
    const layout = path.join(work, 'layout');
    mkdirSync(path.join(layout, 'blobs', 'sha256'), { recursive: true });
    rootfs(r, root);
    const layerTar = path.join(work, 'layer.tar');
    tar(root, layerTar);
    const layer = blob(layout, readFileSync(layerTar));
    const config = blob(
      layout,
      Buffer.from(
        JSON.stringify({
          architecture: 'amd64',
          os: 'linux',
          config: { Cmd: r.cmd, Env: ['PATH=/usr/local/bin:/usr/bin:/bin', ...(r.env ?? [])], WorkingDir: '/' },
          rootfs: { type: 'layers', diff_ids: [layer.digest] },
          history: [{ created_by: `tensor-fusion-iac test/envtest/images.ts (${r.id})` }],
        }),
      ),
    );
    const manifest = blob(
      layout,
      Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
          layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
        }),
      ),
    );
    writeFileSync(path.join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(
      path.join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        manifests: [
          {
            mediaType: 'application/vnd.oci.image.manifest.v1+json',
            ...manifest,
            platform: { architecture: 'amd64', os: 'linux' },
            annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref.split(':').pop() },
          },
        ],
      }),
    );
    const tmp = `${out}.tmp`;
    tar(layout, tmp);
    renameSync(tmp, out);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The images' tarballs, built when missing; `log` hears what was built or found. */
export function buildNodeImages(log: (line: string) => void = () => undefined, env: NodeJS.ProcessEnv = process.env): NodeImage[] {
  if (!existsSync(BUSYBOX)) throw new Error(`${BUSYBOX} not found: install Debian's busybox-static (apt-get install busybox-static)`);
  if (!existsSync(binaryPath('kube-scheduler'))) throw new Error('kube-scheduler not built yet');
  const dir = imagesDir(env);
  mkdirSync(dir, { recursive: true });
  const images: NodeImage[] = [];
  for (const r of recipes()) {
    const file = path.join(dir, `${r.id}-${contentKey(r)}.tar`);
    const ref = IMAGE_REFS[r.id];
    if (existsSync(file)) {
      log(`  image ${ref}: cached in ${file}`);
    } else {
      const started = Date.now();
      for (const old of readdirSync(dir).filter((f) => f.startsWith(`${r.id}-`))) rmSync(path.join(dir, old), { force: true });
      pack(r, ref, file);
      log(
        `  image ${ref}: made ${path.basename(file)} (${(statSync(file).size / 1e6).toFixed(1)} MB) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
    }
    images.push({ id: r.id, ref, file });
  }
  return images;
}

/** The cached tarballs, without building: undefined for an image not made yet (or made from other inputs). */
export function cachedNodeImages(env: NodeJS.ProcessEnv = process.env): NodeImage[] | undefined {
  if (!existsSync(BUSYBOX) || !existsSync(binaryPath('kube-scheduler'))) return undefined;
  const images = recipes().map((r) => ({
    id: r.id,
    ref: IMAGE_REFS[r.id],
    file: path.join(imagesDir(env), `${r.id}-${contentKey(r)}.tar`),
  }));
  return images.every((i) => existsSync(i.file)) ? images : undefined;
}

/**
 * Reads the controller bundle shipped in this package (build/controller/controller.js) and gzips it
 * for the bundle ConfigMap. The only file-system access of the TensorFusionController component.
 */
import { createHash } from 'crypto';
import { existsSync, readFileSync, statSync } from 'fs';
import * as path from 'path';
import { constants, gzipSync } from 'zlib';
import { CONTROLLER_BUNDLE_PATH, ControllerBundleRef } from './bundle';

/** Where the build puts the bundle, relative to the package root, with this platform's separators. */
export const CONTROLLER_BUNDLE_FILE = path.join(...CONTROLLER_BUNDLE_PATH.split('/'));

const PACKAGE_NAME = 'tensor-fusion-iac';

/** A loaded bundle with its sizes, for the ConfigMap and for reports. */
export interface ControllerBundle extends ControllerBundleRef {
  /** Absolute path of the bundle file read. */
  readonly path: string;
  /** Bytes of the uncompressed bundle. */
  readonly size: number;
  /** Bytes of the gzipped bundle, what counts against the ConfigMap limit. */
  readonly gzippedSize: number;
}

/**
 * The package root: the nearest directory above `from` whose package.json is this package's. Works
 * from the sources (lib/) and from the compiled output (build/lib/) alike.
 */
export function packageRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (readManifest(dir)?.name === PACKAGE_NAME) return dir;
    if (path.dirname(dir) === dir) throw new Error(`tensor-fusion-iac: no package.json named ${PACKAGE_NAME} above ${from}`);
  }
}

function readManifest(dir: string): { name?: string; version?: string } | undefined {
  const manifest = path.join(dir, 'package.json');
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')) : undefined;
}

/** This package's version, which names the bundle ConfigMap. */
export function packageVersion(): string {
  return readManifest(packageRoot())?.version ?? '0.0.0';
}

/** Absolute path of the shipped bundle. */
export function controllerBundlePath(): string {
  return path.join(packageRoot(), CONTROLLER_BUNDLE_FILE);
}

const cache = new Map<string, { mtimeMs: number; bundle: ControllerBundle }>();

/**
 * Loads and gzips the bundle (cached per file and modification time: one gzip per synth).
 * @throws Error naming the path and the way out when the bundle has not been built.
 */
export function loadControllerBundle(file: string = controllerBundlePath()): ControllerBundle {
  if (!existsSync(file)) {
    throw new Error(
      `TensorFusionController: the controller bundle ${file} does not exist; build it with \`npm run build\` or set the image prop`,
    );
  }
  const { mtimeMs } = statSync(file);
  const hit = cache.get(file);
  if (hit && hit.mtimeMs === mtimeMs) return hit.bundle;
  const source = readFileSync(file);
  const gzipped = gzipSync(source, { level: constants.Z_BEST_COMPRESSION });
  const bundle: ControllerBundle = {
    path: file,
    size: source.length,
    gzippedSize: gzipped.length,
    gzipBase64: gzipped.toString('base64'),
    sha256: createHash('sha256').update(source).digest('hex'),
    version: packageVersion(),
  };
  cache.set(file, { mtimeMs, bundle });
  return bundle;
}

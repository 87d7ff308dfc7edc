/**
 * Reads the bundles shipped in this package (build/controller/controller.js and agent.js) and gzips
 * them for the bundle ConfigMaps. The only file-system access of the TensorFusionController component.
 */
import { createHash } from 'crypto';
import { existsSync, readFileSync, statSync } from 'fs';
import * as path from 'path';
import { constants, gzipSync } from 'zlib';
import { AGENT_BUNDLE_PATH, CONTROLLER_BUNDLE_PATH, ControllerBundleRef, ShippedCode } from './bundle';

/** Where the build puts the bundle, relative to the package root, with this platform's separators. */
export const CONTROLLER_BUNDLE_FILE = path.join(...CONTROLLER_BUNDLE_PATH.split('/'));

/** Where the build puts the agent's bundle, relative to the package root, with this platform's separators. */
export const AGENT_BUNDLE_FILE = path.join(...AGENT_BUNDLE_PATH.split('/'));

const PACKAGE_NAME = 'tensor-fusion-iac';

/** One loaded bundle file with its sizes, for the ConfigMap and for reports. */
export interface LoadedCode extends ShippedCode {
  /** Absolute path of the bundle file read. */
  readonly path: string;
  /** Bytes of the uncompressed bundle. */
  readonly size: number;
  /** Bytes of the gzipped bundle, what counts against the ConfigMap limit. */
  readonly gzippedSize: number;
}

/** The loaded controller bundle, with the agent's beside it. */
export interface ControllerBundle extends ControllerBundleRef, LoadedCode {
  /** The node agent's bundle. */
  readonly agent: LoadedCode;
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

/** Absolute path of the shipped controller bundle. */
export function controllerBundlePath(): string {
  return path.join(packageRoot(), CONTROLLER_BUNDLE_FILE);
}

/** Absolute path of the shipped agent bundle. */
export function agentBundlePath(): string {
  return path.join(packageRoot(), AGENT_BUNDLE_FILE);
}

const cache = new Map<string, { mtimeMs: number; code: LoadedCode }>();

/** Reads and gzips one bundle file (cached per file and modification time: one gzip per synth). */
function loadCode(file: string, what: string): LoadedCode {
  if (!existsSync(file)) {
    throw new Error(
      `TensorFusionController: the ${what} bundle ${file} does not exist; build it with \`npm run build\` or set the image prop`,
    );
  }
  const { mtimeMs } = statSync(file);
  const hit = cache.get(file);
  if (hit && hit.mtimeMs === mtimeMs) return hit.code;
  const source = readFileSync(file);
  const gzipped = gzipSync(source, { level: constants.Z_BEST_COMPRESSION });
  const code: LoadedCode = {
    path: file,
    size: source.length,
    gzippedSize: gzipped.length,
    gzipBase64: gzipped.toString('base64'),
    sha256: createHash('sha256').update(source).digest('hex'),
  };
  cache.set(file, { mtimeMs, code });
  return code;
}

/**
 * Loads and gzips the controller bundle and the agent's.
 * @throws Error naming the path and the way out when a bundle has not been built.
 */
export function loadControllerBundle(file: string = controllerBundlePath(), agentFile: string = agentBundlePath()): ControllerBundle {
  return { ...loadCode(file, 'controller'), version: packageVersion(), agent: loadCode(agentFile, 'node agent') };
}

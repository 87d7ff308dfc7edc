/**
 * How the controller and agent code reach the pods. By default the bundles built into this package
 * travel in a ConfigMap each (gzipped: binaryData) and run on the official Node.js image, so no
 * private registry is needed and the code always matches the IaC version. With the `image` prop a
 * prebuilt image from the package's Dockerfile runs instead.
 */
import { KubeObject } from '../../k8s/object';
import { CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION } from '../../model/metadata-keys';
import { AGENT_BUNDLE_KEY, BUNDLE_KEY, ControllerBundleRef, ShippedCode } from '../../contract/bundle';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import { ResolvedControllerProps } from './props';

export { AGENT_BUNDLE_KEY, BUNDLE_KEY, CONFIGMAP_MAX_BYTES, SHIPPED_CONFIGMAP_BUDGET_BYTES } from '../../contract/bundle';
export type { ControllerBundleRef, ShippedCode } from '../../contract/bundle';

const BUNDLE_DIR = '/bundle';
const APP_DIR = '/app';

/** One program as it ships: its ConfigMap's name prefix and key, and the file it runs as (in the image too). */
export interface Program {
  /** What error messages call it. */
  readonly what: string;
  /** Name prefix of its bundle ConfigMap. */
  readonly configMapPrefix: string;
  /** Its ConfigMap's binaryData key. */
  readonly key: string;
  /** The file the pod runs, unpacked or in the image (the Dockerfile copies both there). */
  readonly entry: string;
}

/** The controller: the image's entrypoint runs it. */
export const CONTROLLER_PROGRAM: Program = {
  what: 'controller',
  configMapPrefix: CONTROLLER_NAMES.bundleConfigMap,
  key: BUNDLE_KEY,
  entry: `${APP_DIR}/controller.js`,
};

/** The node agent: a bundle and ConfigMap of its own, in the agent's namespace. */
export const AGENT_PROGRAM: Program = {
  what: 'node agent',
  configMapPrefix: 'tensor-fusion-node-agent-bundle',
  key: AGENT_BUNDLE_KEY,
  entry: `${APP_DIR}/agent.js`,
};
/** Hex digits of the digest in the ConfigMap's name: enough to tell bundles apart in a diff. */
const NAME_DIGEST_LENGTH = 12;

/**
 * The bundle ConfigMap's name carries the package version and the digest, so that an upgrade reads
 * as "tensor-fusion-controller-bundle-0.1.0-1a2b... -> ...-0.2.0-3c4d..." in a diff, the giant
 * base64 line sits in its own object, and a new bundle rolls the pods by itself.
 * @example bundleConfigMapName({ version: '0.1.0', sha256: '1a2b3c4d5e6f...' }) // 'tensor-fusion-controller-bundle-0.1.0-1a2b3c4d5e6f'
 */
export function bundleConfigMapName(
  bundle: Pick<ControllerBundleRef, 'version' | 'sha256'>,
  program: Program = CONTROLLER_PROGRAM,
): string {
  // A DNS subdomain: lower case, digits, '-' and '.'; a semver's '+build' becomes '.'.
  const version = bundle.version.toLowerCase().replace(/[^a-z0-9.-]/g, '.');
  return `${program.configMapPrefix}-${version}-${bundle.sha256.slice(0, NAME_DIGEST_LENGTH)}`;
}

/**
 * Unpacks with Node itself rather than a shell `gunzip`, so any official Node.js image works
 * (alpine, slim, distroless alike) and the root filesystem stays read-only: it writes to an emptyDir.
 * The digest it checks is written into the pod template, so whoever can write the ConfigMap (nobody
 * but the installer: the controller has no ConfigMap grant) still cannot change the code that runs.
 */
export function unpackScript(sha256: string, program: Program = CONTROLLER_PROGRAM): string {
  if (!/^[0-9a-f]{64}$/.test(sha256))
    throw new Error(`TensorFusionController: bundle sha256: got ${JSON.stringify(sha256)}, expected 64 hex digits`);
  return (
    `const fs=require('fs'),zlib=require('zlib'),crypto=require('crypto');` +
    `const code=zlib.gunzipSync(fs.readFileSync('${BUNDLE_DIR}/${program.key}'));` +
    `const got=crypto.createHash('sha256').update(code).digest('hex');` +
    `if(got!=='${sha256}'){console.error('${program.what} bundle sha256: got '+got+', expected ${sha256}');process.exit(1);}` +
    `fs.writeFileSync('${program.entry}',code);`
  );
}

/** What the pod template needs for one way of shipping. */
export interface Shipping {
  readonly objects: KubeObject[];
  readonly image: string;
  readonly command?: string[];
  readonly initContainers: { name: string; image: string; command: string[]; terminationMessagePolicy?: string; volumeMounts: object[] }[];
  readonly volumes: object[];
  readonly volumeMounts: object[];
  readonly podAnnotations?: Record<string, string>;
}

/**
 * How `program` reaches its pods: the image (the controller by its entrypoint, the agent by its file),
 * or its bundle ConfigMap unpacked by an init container.
 */
export function renderShipping(
  props: ResolvedControllerProps,
  labels: Record<string, string>,
  bundle?: ControllerBundleRef,
  program: Program = CONTROLLER_PROGRAM,
): Shipping {
  if (props.image !== undefined) {
    const command = program === CONTROLLER_PROGRAM ? {} : { command: ['node', program.entry] };
    return { objects: [], image: props.image, ...command, initContainers: [], volumes: [], volumeMounts: [] };
  }
  const code = program === CONTROLLER_PROGRAM ? bundle : bundle?.agent;
  if (bundle === undefined || code === undefined)
    throw new Error(`TensorFusionController: the ${program.what} bundle is required when no image is set`);
  return renderBundleShipping(props, labels, { ...code, version: bundle.version }, program);
}

function renderBundleShipping(
  props: ResolvedControllerProps,
  labels: Record<string, string>,
  bundle: ShippedCode & { version: string },
  program: Program,
): Shipping {
  const name = bundleConfigMapName(bundle, program);
  const configMap: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    // Immutable: a new bundle is a new ConfigMap, never an edit of the running one.
    metadata: { name, namespace: props.namespace, labels, annotations: { [CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION]: bundle.sha256 } },
    immutable: true,
    binaryData: { [program.key]: bundle.gzipBase64 },
  };
  const app = { name: 'app', mountPath: APP_DIR };
  return {
    objects: [configMap],
    image: props.nodeImage,
    command: ['node', program.entry],
    initContainers: [
      {
        name: 'unpack',
        image: props.nodeImage,
        command: ['node', '-e', unpackScript(bundle.sha256, program)],
        // A digest mismatch's message then shows in the pod's status and `kubectl describe pod`.
        terminationMessagePolicy: 'FallbackToLogsOnError',
        volumeMounts: [{ name: 'bundle', mountPath: BUNDLE_DIR, readOnly: true }, app],
      },
    ],
    volumes: [
      { name: 'bundle', configMap: { name, defaultMode: 0o444 } },
      { name: 'app', emptyDir: { sizeLimit: '64Mi' } },
    ],
    volumeMounts: [{ ...app, readOnly: true }],
    // For `kubectl describe pod`: the digest the init container verified.
    podAnnotations: { [CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION]: bundle.sha256 },
  };
}

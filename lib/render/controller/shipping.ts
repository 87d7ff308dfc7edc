/**
 * How the controller code reaches the pods. By default the bundle built into this package travels in
 * a ConfigMap (gzipped: binaryData) and runs on the official Node.js image, so no private registry
 * is needed and the controller always matches the IaC version. With the `image` prop a prebuilt
 * image from the package's Dockerfile runs instead.
 */
import { KubeObject } from '../../k8s-object';
import { CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION } from '../../labels';
import { CONTROLLER_NAMES } from './names';
import { ResolvedControllerProps } from './props';

/** The shipped bundle as the render functions need it (read from disk by lib/controller-bundle.ts). */
export interface ControllerBundleRef {
  /** The gzipped bundle, base64-encoded (ConfigMap binaryData). */
  readonly gzipBase64: string;
  /** sha256 (hex) of the uncompressed bundle. */
  readonly sha256: string;
}

/** Kubernetes rejects a ConfigMap whose data and binaryData (decoded) exceed 1 MiB. */
export const CONFIGMAP_MAX_BYTES = 1024 * 1024;

export const BUNDLE_KEY = 'controller.js.gz';
const BUNDLE_DIR = '/bundle';
const APP_DIR = '/app';
const ENTRY = `${APP_DIR}/controller.js`;

/**
 * Unpacks with Node itself rather than a shell `gunzip`, so any official Node.js image works
 * (alpine, slim, distroless alike) and the root filesystem stays read-only: it writes to an emptyDir.
 */
const UNPACK_SCRIPT =
  `const fs=require('fs'),zlib=require('zlib');` +
  `fs.writeFileSync('${ENTRY}',zlib.gunzipSync(fs.readFileSync('${BUNDLE_DIR}/${BUNDLE_KEY}')));`;

/** What the pod template needs for one way of shipping. */
export interface Shipping {
  readonly objects: KubeObject[];
  readonly image: string;
  readonly command?: string[];
  readonly initContainers: { name: string; image: string; command: string[]; volumeMounts: object[] }[];
  readonly volumes: object[];
  readonly volumeMounts: object[];
  readonly podAnnotations?: Record<string, string>;
}

export function renderShipping(props: ResolvedControllerProps, labels: Record<string, string>, bundle?: ControllerBundleRef): Shipping {
  if (props.image !== undefined) {
    return { objects: [], image: props.image, initContainers: [], volumes: [], volumeMounts: [] };
  }
  if (bundle === undefined) throw new Error('TensorFusionController: the controller bundle is required when no image is set');
  const configMap: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CONTROLLER_NAMES.bundleConfigMap, namespace: props.namespace, labels },
    binaryData: { [BUNDLE_KEY]: bundle.gzipBase64 },
  };
  const app = { name: 'app', mountPath: APP_DIR };
  return {
    objects: [configMap],
    image: props.nodeImage,
    command: ['node', ENTRY],
    initContainers: [{
      name: 'unpack',
      image: props.nodeImage,
      command: ['node', '-e', UNPACK_SCRIPT],
      volumeMounts: [{ name: 'bundle', mountPath: BUNDLE_DIR, readOnly: true }, app],
    }],
    volumes: [
      { name: 'bundle', configMap: { name: CONTROLLER_NAMES.bundleConfigMap, defaultMode: 0o444 } },
      { name: 'app', emptyDir: { sizeLimit: '64Mi' } },
    ],
    volumeMounts: [{ ...app, readOnly: true }],
    // The ConfigMap's name never changes, so without this a new bundle would not roll the pods.
    podAnnotations: { [CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION]: bundle.sha256 },
  };
}

/**
 * Where the controller and agent bundles are built and how they travel: facts shared by the build script
 * (scripts/bundle-controller.js reads this file), the loader (lib/contract/bundle-loader.ts) and the
 * renderer (lib/render/controller/shipping.ts). Kept free of imports so the script can load it alone.
 */

/** The runtime entry point the bundle is built from, relative to the package root. */
export const CONTROLLER_ENTRY = 'lib/runtime/main.ts';

/** Where the build puts the bundle, relative to the package root (POSIX separators). */
export const CONTROLLER_BUNDLE_PATH = 'build/controller/controller.js';

/** The node agent's entry: a bundle of its own, so that each process ships only what it runs. */
export const AGENT_ENTRY = 'lib/runtime/agent-main.ts';

/** Where the build puts the agent's bundle, relative to the package root (POSIX separators). */
export const AGENT_BUNDLE_PATH = 'build/controller/agent.js';

/** The `kubectl tf` plugin's entry, bundled beside the controller (it needs the runtime's dependencies). */
export const CLI_ENTRY = 'lib/runtime/cli/main.ts';

/** Where the build puts the plugin: the package's `kubectl-tf` bin. */
export const CLI_BUNDLE_PATH = 'build/controller/kubectl-tf.js';

/** Kubernetes rejects a ConfigMap whose data and binaryData (decoded) exceed 1 MiB. */
export const CONFIGMAP_MAX_BYTES = 1024 * 1024;

/**
 * What any ConfigMap the install ships may weigh, serialized: a fifth of the limit stays free for the
 * code to grow, and a test fails past it.
 */
export const SHIPPED_CONFIGMAP_BUDGET_BYTES = 800 * 1024;

/** The bundle ConfigMap's binaryData key. */
export const BUNDLE_KEY = 'controller.js.gz';

/** The agent bundle ConfigMap's binaryData key. */
export const AGENT_BUNDLE_KEY = 'agent.js.gz';

/** One shipped program: its gzipped code and digest. */
export interface ShippedCode {
  /** The gzipped bundle, base64-encoded (ConfigMap binaryData). */
  readonly gzipBase64: string;
  /** sha256 (hex) of the uncompressed bundle. */
  readonly sha256: string;
}

/** The shipped bundles as the render functions need them (read from disk by lib/contract/bundle-loader.ts). */
export interface ControllerBundleRef extends ShippedCode {
  /** Version of the package that built it; part of the ConfigMap's name. */
  readonly version: string;
  /** The node agent's bundle; required to render the agent without an image (`nodeAgent`). */
  readonly agent?: ShippedCode;
}

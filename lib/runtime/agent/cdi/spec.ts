/**
 * Container Device Interface specs (github.com/cncf-tags/container-device-interface, SPEC.md): what a
 * container runtime adds to a container that names a CDI device (`vendor/class=name`). containerd
 * (2.x, and 1.7 with CDI on) and CRI-O read them from /etc/cdi and /var/run/cdi at every container
 * create. Written by hand: CDI has no JavaScript library, and the agent needs only the container
 * edits of one device per spec.
 */

/** The CDI kind of a delivered share: vendor `tensor-fusion.ai`, class `share`. */
export const CDI_KIND = 'tensor-fusion.ai/share';
/** The spec version written: spec-level annotations need 0.6.0. */
export const CDI_VERSION = '0.6.0';

/** A device node the container gets: `path` in the container, from `hostPath` on the host. */
export interface CdiDeviceNode {
  readonly path: string;
  readonly hostPath: string;
  readonly permissions: 'rw' | 'r' | 'rwm';
}

/** A bind mount. */
export interface CdiMount {
  readonly hostPath: string;
  readonly containerPath: string;
  readonly options: readonly string[];
}

/** What one device adds to a container: variables (`NAME=value`), device nodes, mounts. */
export interface ContainerEdits {
  readonly env: readonly string[];
  readonly deviceNodes: readonly CdiDeviceNode[];
  readonly mounts: readonly CdiMount[];
}

export interface CdiSpec {
  readonly cdiVersion: string;
  readonly kind: string;
  readonly annotations: Readonly<Record<string, string>>;
  readonly devices: readonly { readonly name: string; readonly containerEdits: ContainerEdits }[];
}

/** A device name CDI accepts: letters, digits and `_.:-`, starting with a letter or digit. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;

/** The fully qualified name a device plugin or DRA driver hands the runtime. */
export function cdiDeviceName(name: string): string {
  return `${CDI_KIND}=${name}`;
}

/** The spec of one device. @throws Error for a name CDI would refuse */
export function cdiSpec(name: string, edits: ContainerEdits, annotations: Record<string, string> = {}): CdiSpec {
  if (!NAME.test(name))
    throw new Error(`CDI device name "${name}" is not allowed: letters, digits and _.:- only, starting with a letter or digit`);
  return { cdiVersion: CDI_VERSION, kind: CDI_KIND, annotations, devices: [{ name, containerEdits: edits }] };
}

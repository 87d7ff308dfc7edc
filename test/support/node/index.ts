/**
 * Entry of the real-node harness for test files: {@link describeRealNode} starts a control plane
 * (with `node: true`) and one real node per test file, and always stops both; or skips the file with
 * one line when the node or the control plane cannot run here. Under CI=true it fails instead: the
 * suites must run.
 *
 * One node per machine: a node holds a lock file for its life (test/support/node/node.ts), so test
 * files in several jest workers take turns, each with a fresh node on its own control plane.
 */
import { ControlPlane, ControlPlaneOptions, describeControlPlane, waitFor } from '../control-plane';
import { IMAGE_REFS } from '../../envtest/images';
import { RealNode, RealNodeOptions, realNodeUnavailable } from './node';

export { RealNode } from './node';
export { dialOutside, NODE_NET, OUTSIDE_ADDRESS } from './net';
export { NODE_NAME } from '../control-plane/control-plane';

/** Whether a real node can run; logs one line (or throws under CI) when not. */
export function realNodeAvailable(file: string): boolean {
  const why = realNodeUnavailable();
  if (!why) return true;
  const msg = `${file}: needs a real node: ${why}`;
  if (process.env.CI) throw new Error(`${msg} (CI=true: the real-node suites may not skip)`);
  // eslint-disable-next-line no-console
  console.log(`skipped ${msg}`);
  return false;
}

/** What a busybox script runs by default: stays up, and stops at once on SIGTERM (sh as pid 1 ignores it otherwise). */
export const SLEEP_SCRIPT = 'trap "exit 0" TERM; sleep 3600 & wait';

/** A container of the node's busybox image (never pulled) running `script`. */
export function busyboxContainer(name: string, script = SLEEP_SCRIPT): Record<string, unknown> {
  return { name, image: IMAGE_REFS.busybox, imagePullPolicy: 'Never', command: ['sh', '-c', script] };
}

export interface NodeHarness {
  cp: ControlPlane;
  node: RealNode;
}

/**
 * `describe` with a control plane (describeControlPlane, with `node: true`) and a real node registered
 * with it: `get()` returns both inside tests. The node starts after the control plane and stops after
 * the body's own afterAll hooks, before the control plane does. The wait for the node slot is part of
 * its `beforeAll`'s time, hence the long timeout.
 */
export function describeRealNode(
  name: string,
  opts: ControlPlaneOptions,
  nodeOpts: RealNodeOptions,
  body: (get: () => NodeHarness) => void,
): void {
  const file = (expect.getState().testPath ?? name).replace(/^.*\/test\//, 'test/');
  if (!realNodeAvailable(file)) {
    describe.skip(name, () =>
      body(() => {
        throw new Error('skipped');
      }),
    );
    return;
  }
  describeControlPlane(name, { ...opts, node: true }, (cp) => {
    let node: RealNode | undefined;
    beforeAll(async () => {
      node = await RealNode.start(cp(), nodeOpts);
      // eslint-disable-next-line no-console
      console.log(`${name}: node started in ${node.startMs} ms`);
    }, 30 * 60_000);
    body(() => {
      if (!node) throw new Error('node did not start');
      return { cp: cp(), node };
    });
    afterAll(async () => {
      await node?.stop();
    }, 120_000);
  });
}

/**
 * Waits for a namespace's `default` ServiceAccount: with a real node the ServiceAccount admission
 * plugin is on, and refuses pods of a namespace until kube-controller-manager has made it.
 */
export async function defaultServiceAccount(cp: ControlPlane, namespace: string): Promise<void> {
  await waitFor(
    `ServiceAccount ${namespace}/default`,
    async () => (await cp.kubectl(['get', 'serviceaccount', '-n', namespace, 'default'])).code === 0,
    30_000,
    200,
  );
}

/**
 * Entry of the real-node harness for test files: {@link describeRealNode} starts a control plane
 * (with `node: true`) and one real node per test file, and always stops both; or skips the file with
 * one line when the node cannot run here. Under CI=true it fails instead: the suites must run.
 *
 * One node per machine: a node holds a lock file for its life (test/support/node/node.ts), so test
 * files in several jest workers take turns, each with a fresh node on its own control plane.
 */
import { ControlPlane, ControlPlaneOptions, controlPlaneAvailable, waitFor } from '../control-plane';
import { IMAGE_REFS } from '../../envtest/images';
import { RealNode, RealNodeOptions, realNodeUnavailable } from './node';

export { RealNode } from './node';
export { NODE_NET, OUTSIDE_ADDRESS } from './net';
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
 * `describe` with a control plane and a real node registered with it: `get()` returns both inside
 * tests. Start times are printed once so reports can quote them. The wait for the node slot is part
 * of `beforeAll`'s time, hence its long timeout.
 */
export function describeRealNode(name: string, opts: ControlPlaneOptions, nodeOpts: RealNodeOptions, body: (get: () => NodeHarness) => void): void {
  const file = (expect.getState().testPath ?? name).replace(/^.*\/test\//, 'test/');
  const cpOpts = { ...opts, node: true };
  const enabled = controlPlaneAvailable(file, cpOpts) && realNodeAvailable(file);
  (enabled ? describe : describe.skip)(name, () => {
    let h: Partial<NodeHarness> = {};
    beforeAll(async () => {
      const cp = await ControlPlane.start(cpOpts);
      h = { cp };
      h.node = await RealNode.start(cp, nodeOpts);
      // eslint-disable-next-line no-console
      console.log(`${name}: control plane started in ${cp.startMs} ms, node in ${h.node.startMs} ms`);
    }, 30 * 60_000);
    body(() => {
      if (!h.cp || !h.node) throw new Error('control plane or node did not start');
      return h as NodeHarness;
    });
    afterAll(async () => {
      await h.node?.stop();
      await h.cp?.stop();
    }, 120_000);
  });
}

/**
 * Waits for a namespace's `default` ServiceAccount: with a real node the ServiceAccount admission
 * plugin is on, and refuses pods of a namespace until kube-controller-manager has made it.
 */
export async function defaultServiceAccount(cp: ControlPlane, namespace: string): Promise<void> {
  await waitFor(`ServiceAccount ${namespace}/default`, async () => (await cp.kubectl(['get', 'serviceaccount', '-n', namespace, 'default'])).code === 0, 30_000, 200);
}

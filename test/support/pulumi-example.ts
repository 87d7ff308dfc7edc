/**
 * The example platform as the real-engine suite and `npm run bench:pulumi` run it: `examples/pulumi`
 * with what the test cluster adds, and why:
 *
 *  - the example's four nodes, run by KWOK (GPU pods placed there go Running), one of them with a
 *    taint and a label another manager owns (it must keep them);
 *  - the controller on the node's own Node.js image, held on the real node (`nodeSelector`: the
 *    KWOK nodes run no real process);
 *  - the T9k pods not awaited (`pulumi.com/skipAwait`): no T9k Scheduler runs here, so they stay
 *    Pending, as in any cluster without it.
 */
import * as pulumi from '@pulumi/pulumi';
import { TensorFusionController } from '../../components/pulumi';
import { controller as exampleController, nodes, pool, pytorchGpu, t9kPods } from '../../examples/platform';
import { buildPlatform, PlatformProps } from '../../examples/pulumi/index';
import { IMAGE_REFS } from '../envtest/images';
import type { ControlPlane } from './control-plane';
import { kwokNode } from './control-plane/install';
import { NODE_NAME } from './node';

type Obj = Record<string, any>;

/** The node another manager provisioned, and that manager. */
export const TAINTED_NODE = 't9k-sgn-0';
export const OTHER_MANAGER = 'node-provisioner';
export const OTHER_TAINT = { key: 'dedicated', value: 'ml', effect: 'NoSchedule' };

const T9K_POD_NAMES = new Set(t9kPods.map((p) => p.name));

/** The controller's props here: the example's, on the node's image, held on the real node. */
export const testController = { ...exampleController, nodeImage: IMAGE_REFS.node, nodeSelector: { 'kubernetes.io/hostname': NODE_NAME } };

/** The example's nodes, created by another manager with server-side apply, as a provisioner would. */
export async function createExampleNodes(cp: ControlPlane): Promise<void> {
  for (const name of Object.keys(nodes)) {
    const node = kwokNode({ name });
    if (name === TAINTED_NODE) {
      node.metadata.labels.team = 'ml';
      node.spec = { taints: [OTHER_TAINT] };
    }
    await cp.kubectlOk(['apply', '--server-side', `--field-manager=${OTHER_MANAGER}`, '-f', '-'], { input: JSON.stringify(node) });
  }
}

/** The example program (`examples/pulumi`) with the test cluster's additions. */
export function exampleProgram(props: PlatformProps = { pool, pytorchGpu }): () => Promise<void> {
  return async () => {
    pulumi.runtime.registerStackTransformation((args) => {
      if (args.type !== 'kubernetes:core/v1:Pod' || !T9K_POD_NAMES.has(args.name)) return undefined;
      const p = args.props as Obj;
      return {
        props: { ...p, metadata: { ...p.metadata, annotations: { ...p.metadata?.annotations, 'pulumi.com/skipAwait': 'true' } } },
        opts: args.opts,
      };
    });
    buildPlatform(new TensorFusionController('tensor-fusion', testController), props);
  };
}

import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { GpuNodeProps, renderGpuNode } from '../../lib/render/gpu-node';
import { InputArgs, outputOf, Owner, renderArgs } from './inputs';
import { claimNames, registerObject } from './register';

export { t9kPoolNodes } from '../../lib/render/gpu-node';
export type { GpuInventory } from '../../lib/render/gpu-node';

/**
 * Arguments of GpuNode: the props of the cdk8s construct, each a `pulumi.Input` (`nodeName` may be
 * the Output of the resource that creates the node). Plain values are validated in the constructor,
 * values held in Outputs at preview.
 */
export type GpuNodeArgs = InputArgs<GpuNodeProps>;

/**
 * Labels an existing node with pool membership and GPU inventory through a server-side-apply
 * NodePatch that owns only these label keys; taints are left to the runtime controller. The Node is
 * read first and the patch waits for the read: a server-side apply would create a Node that does not
 * exist, and labelling must never create one, so a missing node fails `preview` and `up`, naming it.
 *
 * @example
 * new GpuNode('a100-0', { nodeName: 'gpu-a100-0', pools: ['default-pool'],
 *   gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' } });
 * @throws ValidationError `GpuNode <name>: ...` naming every bad plain prop
 */
export class GpuNode extends pulumi.ComponentResource {
  /** Name of the labelled node. */
  public readonly nodeName: pulumi.Output<string>;
  /** The server-side-apply patch of the Node (named as cdk8s's `apiObject`). */
  public readonly apiObject: k8s.core.v1.NodePatch;

  /**
   * The same as `apiObject`.
   * @deprecated Use `apiObject`, the name both frameworks use.
   */
  get patch(): k8s.core.v1.NodePatch {
    return this.apiObject;
  }

  constructor(name: string, args: GpuNodeArgs, opts?: pulumi.ComponentResourceOptions) {
    const context = `GpuNode ${name}`;
    const owner: Owner = {};
    const node = renderArgs<GpuNodeProps, ReturnType<typeof renderGpuNode>>(args, context, owner, (props) => renderGpuNode(props, context));
    super('tensor-fusion:index:GpuNode', name, {}, opts);
    owner.resource = this;
    this.nodeName = outputOf(node, (n) => n.metadata.name);
    /** The Node as the cluster has it (a read: `destroy` leaves it). */
    const existing = k8s.core.v1.Node.get(name, this.nodeName, { parent: this });
    this.apiObject = <k8s.core.v1.NodePatch>(
      registerObject(
        name,
        claimNames(this, context, node),
        { apiVersion: 'v1', kind: 'Node' },
        ['metadata'],
        { parent: this, dependsOn: [existing] },
        k8s.core.v1.NodePatch,
      )
    );
    this.registerOutputs({ nodeName: this.nodeName });
  }
}

import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { GpuNodeProps, renderGpuNode } from '../../lib/render/gpu-node';

/** Arguments of GpuNode: the same props as the cdk8s construct. */
export type GpuNodeArgs = GpuNodeProps;

/**
 * Labels an existing node with pool membership and GPU inventory through a server-side-apply
 * NodePatch that owns only these label keys; taints are left to the runtime controller.
 *
 * @example
 * new GpuNode('a100-0', { nodeName: 'gpu-a100-0', pools: ['default-pool'],
 *   gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' } });
 */
export class GpuNode extends pulumi.ComponentResource {
  /** Name of the labelled node. */
  public readonly nodeName: string;
  /** The server-side-apply patch. */
  public readonly patch: k8s.core.v1.NodePatch;

  constructor(name: string, args: GpuNodeArgs, opts?: pulumi.ComponentResourceOptions) {
    super('tensor-fusion:index:GpuNode', name, {}, opts);
    const node = renderGpuNode(args);
    this.nodeName = node.metadata.name;
    this.patch = new k8s.core.v1.NodePatch(name, node as k8s.core.v1.NodePatchArgs, { parent: this });
    this.registerOutputs({ nodeName: this.nodeName });
  }
}


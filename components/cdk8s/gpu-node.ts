import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuNodeProps, renderGpuNode } from '../../lib/render/gpu-node';
import { addObjects, childPath, claimNames } from './register';

export type { GpuInventory, GpuNodeProps } from '../../lib/render/gpu-node';
export { t9kPoolNodes } from '../../lib/render/gpu-node';

/**
 * Labels an existing node with pool membership and GPU inventory. The synthesized Node manifest
 * holds only `metadata.labels`; apply it with `kubectl apply --server-side` so that only these label
 * keys are owned (a client-side apply would try to replace the whole object).
 *
 * @example
 * new GpuNode(chart, 'a100-0', { nodeName: 'gpu-a100-0', pools: ['default-pool'],
 *   gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' } });
 * @throws ValidationError `GpuNode <id>: ...` naming every bad prop; nothing is added then
 */
export class GpuNode extends Construct {
  /** The Node manifest. */
  public readonly apiObject: ApiObject;
  /** Name of the labelled node. */
  public readonly nodeName: string;

  constructor(scope: Construct, id: string, props: GpuNodeProps) {
    const context = `GpuNode ${id}`;
    const node = renderGpuNode(props, context);
    claimNames(scope, childPath(scope, id), [node], context);
    super(scope, id);
    [this.apiObject] = addObjects(this, [node]);
    this.nodeName = node.metadata.name;
  }
}

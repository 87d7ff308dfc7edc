/**
 * The node guard: GpuNode labels Nodes that exist and must never create one. Its manifest is applied
 * with a server-side apply, which creates what does not exist (a bare Node of labels, reported as
 * created, that a destroy leaves behind). The manifest carries GPU_NODE_ANNOTATION; this policy refuses
 * the create of any Node that carries it, whoever applies it (Pulumi, kubectl, Argo CD, Flux). Kubelets
 * register Nodes without it, and an update of an existing Node is not matched.
 */
import { KubeObject } from '../../k8s/object';
import { GPU_NODE_ANNOTATION } from '../../model/metadata-keys';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import { deniedByPolicy, present } from './integrity';

/** The refusal, as the API server words it after the policy's name (tested against the real one). */
export function nodeGuardMessage(node: string): string {
  return `node ${node} does not exist: a GpuNode labels an existing Node and never creates one (register the node first, or remove the GpuNode)`;
}

/** The policy and its binding (Deny). */
export function renderNodeGuard(labels: Record<string, string>): KubeObject[] {
  return deniedByPolicy(CONTROLLER_NAMES.nodeGuardPolicy, labels, {
    matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['nodes'] }] },
    validations: [
      {
        expression: `!${present('object', 'annotations', GPU_NODE_ANNOTATION)}`,
        // The message has no quote of its own: the node's name is spliced into one CEL string.
        messageExpression: `'${nodeGuardMessage("' + object.metadata.name + '")}'`,
        reason: 'Forbidden',
      },
    ],
  });
}

/**
 * Kubernetes NodeSelector matching (terms ORed, requirements ANDed), as the scheduler evaluates a
 * pool's `spec.nodeManagerConfig.nodeSelector` against a node.
 */
import type { GPUPool, NodeSelector } from '../../api';
import type { K8sObject } from '../kube/cluster';

type Term = NodeSelector['nodeSelectorTerms'][number];
type Requirement = NonNullable<Term['matchExpressions']>[number];

function matchesRequirement(value: string | undefined, req: Requirement): boolean {
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
      return value !== undefined && values.length === 1 && Number(value) > Number(values[0]);
    case 'Lt':
      return value !== undefined && values.length === 1 && Number(value) < Number(values[0]);
    default:
      return false;
  }
}

/**
 * True when the node matches. A missing selector matches no node (a pool must say which nodes it
 * takes); an empty term matches nothing, as in Kubernetes.
 */
export function matchesNodeSelector(node: { name: string; labels?: Record<string, string> }, selector: NodeSelector | undefined): boolean {
  if (!selector) return false;
  const labels = node.labels ?? {};
  return (selector.nodeSelectorTerms ?? []).some((term: Term) => {
    const exprs = term.matchExpressions ?? [];
    const fields = term.matchFields ?? [];
    if (exprs.length === 0 && fields.length === 0) return false;
    return (
      exprs.every((r) => matchesRequirement(labels[r.key], r)) &&
      fields.every((r) => matchesRequirement(r.key === 'metadata.name' ? node.name : undefined, r))
    );
  });
}

/** The pools whose node selector matches the node, by name: the node belongs to the first (deleted pools take none). */
export function matchingPools<P extends GPUPool & K8sObject>(pools: readonly P[], node: K8sObject): P[] {
  return pools
    .filter(
      (p) =>
        !p.metadata.deletionTimestamp &&
        matchesNodeSelector({ name: node.metadata.name ?? '', labels: node.metadata.labels }, p.spec?.nodeManagerConfig?.nodeSelector),
    )
    .sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
}

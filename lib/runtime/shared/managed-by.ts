/**
 * Which object a controller-made object belongs to: the pool of a GPUNode, the node of a GPU. The
 * `managed-by` label names it where the name fits a label value (at most 63 characters); a node name
 * may run to 253, so the controlling owner reference (the GPUPool, the GPUNode of the same name as its
 * node), which every such object carries, names it always.
 */
import { isLabelValue } from '../../k8s/names';
import { MANAGED_BY_LABEL } from '../../model/metadata-keys';

interface Owned {
  metadata?: {
    labels?: Record<string, string>;
    ownerReferences?: ReadonlyArray<{ name?: string; controller?: boolean }>;
  };
}

/** The `managed-by` label naming `owner`; none for a name no label value can hold. */
export function managedByLabels(owner: string): Record<string, string> {
  return isLabelValue(owner) ? { [MANAGED_BY_LABEL]: owner } : {};
}

/** The owner `o` belongs to, by its `managed-by` label or else its controlling owner reference; `[]` for none (an index key list). */
export function managedBy(o: Owned): string[] {
  const name = o.metadata?.labels?.[MANAGED_BY_LABEL] ?? o.metadata?.ownerReferences?.find((r) => r.controller)?.name;
  return name ? [name] : [];
}

/**
 * Rules over a whole pod template that uses T9k GPU resources. They look at the template as it is, so
 * they hold whichever order the T9k and tensor-fusion.ai helpers were applied in.
 */
import { entryPath, FieldIssue, fieldIssue } from '../model/errors';
import { ANNOTATION_PREFIX, ENABLED_LABEL } from '../model/metadata-keys';
import { T9K } from './keys';
import { T9kAllocMode } from './node';
import { T9kPodTemplateLike, limitPath } from './field-paths';

/** Every T9k extended resource; the first two need xgn nodes, the percent one sgn nodes. */
export const T9K_RESOURCES = [T9K.exclusiveGpuResource, T9K.sharedGpuPercentResource, T9K.exclusiveNodeResource] as const;
/** A T9k extended resource name. */
export type T9kResource = (typeof T9K_RESOURCES)[number];

/** One T9k resource limit found in a template. */
export interface T9kResourceUse {
  /** Index of the container in `spec.containers`. */
  readonly index: number;
  /** Name of the container. */
  readonly container: string;
  /** The T9k resource it requests. */
  readonly resource: T9kResource;
  /** The amount, as written in the limits. */
  readonly value: unknown;
  /** Message path, e.g. `spec.containers[0].resources.limits["tensorstack.dev/nvidia-gpu"]`. */
  readonly field: string;
}

/** The T9k resource limits of the template's containers, in container order. */
export function t9kResourceUses(template: T9kPodTemplateLike): T9kResourceUse[] {
  const uses: T9kResourceUse[] = [];
  (template.spec?.containers ?? []).forEach((container, index) => {
    const limits = container.resources?.limits ?? {};
    for (const resource of T9K_RESOURCES) {
      if (limits[resource] !== undefined) {
        uses.push({ index, container: container.name, resource, value: limits[resource], field: limitPath(index, resource) });
      }
    }
  });
  return uses;
}

/**
 * The tensor-fusion.ai keys on the template that hand the pod to the tensor-fusion webhook: every
 * `tensor-fusion.ai/*` annotation, and the `tensor-fusion.ai/enabled` label.
 */
function tensorFusionKeys(template: T9kPodTemplateLike): { field: string; value: unknown }[] {
  const annotations = Object.entries(template.metadata?.annotations ?? {})
    .filter(([key]) => key.startsWith(ANNOTATION_PREFIX))
    .map(([key, value]) => ({ field: entryPath('metadata.annotations', key), value }));
  const enabled = template.metadata?.labels?.[ENABLED_LABEL];
  return enabled === undefined ? annotations : [...annotations, { field: entryPath('metadata.labels', ENABLED_LABEL), value: enabled }];
}

/**
 * A pod is either a T9k GPU pod or a tensor-fusion.ai GPU pod, never both: the two systems would each
 * hand out GPUs for the same containers. Call it on the template after adding either set of keys.
 */
export function checkNoTensorFusionMix(template: T9kPodTemplateLike): FieldIssue | undefined {
  const [use] = t9kResourceUses(template);
  const [tf] = tensorFusionKeys(template);
  if (!use || !tf) return undefined;
  return fieldIssue(
    tf.field,
    tf.value,
    `no tensor-fusion.ai GPU key on a pod that requests T9k resources (${use.field}); use one GPU-sharing system per pod`,
  );
}

/**
 * Every problem with the template's T9k resources: more than one T9k resource in a container, more
 * than one container requesting a whole node, shared and exclusive resources in one pod (they need
 * sgn and xgn nodes, which are distinct), and a mix with tensor-fusion.ai keys.
 */
export function checkT9kPod(template: T9kPodTemplateLike): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const uses = t9kResourceUses(template);
  const firstIn = new Map<number, T9kResourceUse>();
  let nodeOwner: T9kResourceUse | undefined;
  for (const use of uses) {
    const first = firstIn.get(use.index);
    if (first) {
      issues.push(
        fieldIssue(
          use.field,
          use.value,
          `at most one T9k resource per container (container "${use.container}" already requests ${first.resource})`,
        ),
      );
      continue;
    }
    firstIn.set(use.index, use);
    if (use.resource !== T9K.exclusiveNodeResource) continue;
    if (nodeOwner) {
      issues.push(
        fieldIssue(
          use.field,
          use.value,
          `one container per pod requesting ${use.resource} (container "${nodeOwner.container}" already does; a pod runs on one node)`,
        ),
      );
    } else {
      nodeOwner = use;
    }
  }
  const exclusive = uses.find((u) => allocModeOf(u.resource) === 'xgn');
  const shared = uses.find((u) => allocModeOf(u.resource) === 'sgn');
  if (exclusive && shared) {
    issues.push(
      fieldIssue(
        shared.field,
        shared.value,
        `no shared-GPU resource in a pod that requests ${exclusive.resource} (container "${exclusive.container}"): shared GPUs are on sgn nodes, exclusive ones on xgn nodes`,
      ),
    );
  }
  const mix = checkNoTensorFusionMix(template);
  if (mix) issues.push(mix);
  return issues;
}

/** The node allocation mode a T9k resource is scheduled on. */
export function allocModeOf(resource: T9kResource): T9kAllocMode {
  return resource === T9K.sharedGpuPercentResource ? 'sgn' : 'xgn';
}

/** A pool member as far as T9k cares; `allocMode` is absent on nodes that are not T9k NVIDIA nodes. */
export interface T9kPoolNode {
  /** Name of the node. */
  readonly name: string;
  /** Its T9k allocation mode: `xgn` (exclusive) or `sgn` (shared). @default not a T9k NVIDIA node */
  readonly allocMode?: T9kAllocMode;
}

/**
 * A shared-GPU request cannot run on a pool whose nodes are all xgn. Returns the issue for that case
 * (field `mode`), and nothing when the pool is empty or any node may be sgn.
 * @example
 * checkSharedGpuPool('training', [{ name: 'gpu-a100-0', allocMode: 'xgn' }])?.message
 */
export function checkSharedGpuPool(poolName: string, nodes: readonly T9kPoolNode[]): FieldIssue | undefined {
  if (nodes.length === 0 || nodes.some((n) => n.allocMode !== 'xgn')) return undefined;
  const names = nodes.map((n) => n.name).join(', ');
  return fieldIssue(
    'mode',
    'shared-gpu',
    `exclusive-gpu or exclusive-node: every node of pool "${poolName}" is xgn (${names}); shared GPUs need an sgn node`,
  );
}

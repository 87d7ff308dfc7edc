/**
 * GpuNode: labels an existing node with pool membership and GPU inventory. It renders only
 * `metadata.labels`: labels are a map, so a server-side-apply patch owns just our keys, while
 * `spec.taints` is an atomic list that would take over taints owned by the kubelet, the cloud
 * provider or the node lifecycle controller. Taints are merged in by the runtime controller.
 */
import { FieldIssue, fieldIssue, throwIfInvalid } from '../model/errors';
import { KubeObject } from '../k8s/object';
import { GFD, GPU_NODE_ANNOTATION, HARDWARE_VENDOR_LABEL, poolMembershipLabel } from '../model/metadata-keys';
import { checkLabelValue, checkObjectName, checkPoolName } from '../model/name-checks';
import { checkVram } from '../model/share-quantity';
import { GPU_COUNT_MAX, GPU_COUNT_MIN } from '../model/rules';
import { checkT9kNodeOptions, T9kNodeOptions, t9kNodeLabels, T9kPoolNode } from '../t9k';

/** The GPUs of a node, written as NVIDIA GPU Feature Discovery labels. */
export interface GpuInventory {
  /**
   * GPU product, as GFD writes it in `nvidia.com/gpu.product`.
   * @example 'NVIDIA-A100-SXM4-80GB'
   */
  readonly model: string;
  /** Number of GPUs on the node (`nvidia.com/gpu.count`). */
  readonly count: number;
  /**
   * Memory of one GPU, as a quantity; written in MiB to `nvidia.com/gpu.memory` as GFD does.
   * @example '80Gi'
   */
  readonly memory: string | number;
}

/** Props of GpuNode, the same in Pulumi and cdk8s. */
export interface GpuNodeProps {
  /** Name of the existing Kubernetes node to label. */
  readonly nodeName: string;
  /**
   * Pools the node belongs to; each adds the label `tensor-fusion.ai/pool-<pool>: "true"`, which is
   * what a GpuPool selects by default.
   * @default []
   */
  readonly pools?: readonly string[];
  /** GPU inventory. Omit it when NVIDIA GPU Feature Discovery already labels the node. */
  readonly gpu?: GpuInventory;
  /**
   * GPU vendor, written to `tensor-fusion.ai/hardware-vendor`.
   * @default 'NVIDIA' when `gpu` is given, otherwise no label
   */
  readonly vendor?: string;
  /**
   * T9k Scheduler preparation: the accelerator label and, for NVIDIA nodes, the allocation mode
   * (`xgn` exclusive GPU or node, `sgn` shared GPU). The xgn taint is added by the scheduler or the
   * runtime controller, never by this component.
   * @default no T9k labels
   */
  readonly t9k?: T9kNodeOptions;
  /** Extra labels to apply to the node. @default {} */
  readonly labels?: Readonly<Record<string, string>>;
}

const MIB = 2 ** 20;

/** Validates GpuNode props; returns every issue found. */
export function checkGpuNodeProps(props: GpuNodeProps): FieldIssue[] {
  const issues: (FieldIssue | undefined)[] = [checkObjectName('nodeName', props.nodeName)];
  (props.pools ?? []).forEach((pool, i) => issues.push(checkPoolName(`pools[${i}]`, pool)));
  if (props.gpu) {
    const { model, count, memory } = props.gpu;
    issues.push(checkLabelValue('gpu.model', model));
    if (!Number.isInteger(count) || count < GPU_COUNT_MIN || count > GPU_COUNT_MAX) {
      issues.push(fieldIssue('gpu.count', count, `an integer from ${GPU_COUNT_MIN} to ${GPU_COUNT_MAX}`));
    }
    const vram = checkVram('gpu.memory', memory);
    issues.push(...vram.issues);
    if (vram.value !== undefined && vram.value % MIB !== 0) {
      issues.push(fieldIssue('gpu.memory', memory, 'a whole number of MiB, as GFD labels it (e.g. 80Gi or 81920Mi)'));
    }
  }
  if (props.t9k) issues.push(...checkT9kNodeOptions(props.t9k));
  if (props.vendor !== undefined) issues.push(checkLabelValue('vendor', props.vendor));
  for (const [key, value] of Object.entries(props.labels ?? {})) issues.push(checkLabelValue(`labels["${key}"]`, value));
  return issues.filter((i): i is FieldIssue => i !== undefined);
}

/** The labels GpuNode applies. */
export function gpuNodeLabels(props: GpuNodeProps): Record<string, string> {
  const labels: Record<string, string> = { ...props.labels };
  for (const pool of props.pools ?? []) labels[poolMembershipLabel(pool)] = 'true';
  if (props.gpu) {
    labels[GFD.present] = 'true';
    labels[GFD.product] = props.gpu.model;
    labels[GFD.count] = String(props.gpu.count);
    labels[GFD.memory] = String(checkVram('gpu.memory', props.gpu.memory).value! / MIB);
  }
  if (props.t9k) Object.assign(labels, t9kNodeLabels(props.t9k));
  const vendor = props.vendor ?? (props.gpu ? 'NVIDIA' : undefined);
  if (vendor) labels[HARDWARE_VENDOR_LABEL] = vendor;
  return labels;
}

/**
 * Renders the Node object to apply with server-side apply: name, labels and the
 * {@link GPU_NODE_ANNOTATION} marker, never taints. A server-side apply creates what does not exist;
 * with the marker, the controller's node guard policy refuses that create (renderNodeGuard).
 * @throws ValidationError naming every bad prop
 */
export function renderGpuNode(props: GpuNodeProps, context = `GpuNode ${props.nodeName}`): KubeObject {
  throwIfInvalid(checkGpuNodeProps(props), context);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: props.nodeName, labels: gpuNodeLabels(props), annotations: { [GPU_NODE_ANNOTATION]: 'true' } },
  };
}

/**
 * The T9k view of a pool's members, for `t9kGpuWorkload`'s `pool` option: the GpuNodes whose `pools`
 * include `pool`, with their allocation mode.
 * @example t9kPoolNodes('training', [a100Props, t4Props])
 */
export function t9kPoolNodes(pool: string, nodes: readonly GpuNodeProps[]): T9kPoolNode[] {
  return nodes.filter((n) => n.pools?.includes(pool)).map((n) => ({ name: n.nodeName, allocMode: n.t9k?.allocMode }));
}

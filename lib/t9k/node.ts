/**
 * Node preparation for the T9k Scheduler: which labels IaC writes on a GPU node, and which
 * taint the node must carry (written at runtime, never by IaC).
 */
import { FieldIssue, fieldIssue, throwIfInvalid } from '../model/errors';
import { T9K, XGN_TAINT } from './keys';
import type { Taint } from '../k8s/toleration';
import { checkEnum, oneOf } from '../model/rules';

/** Accelerator kinds the T9k Scheduler documents; only `nvidia-gpu` is scheduled by T9k itself. */
export const T9K_ACCELERATORS = ['nvidia-gpu', 'amd-gpu', 'huawei-npu'] as const;
/** A T9k accelerator kind. */
export type T9kAccelerator = (typeof T9K_ACCELERATORS)[number];

/** NVIDIA node allocation modes: `xgn` = exclusive GPU / exclusive node, `sgn` = shared GPU. */
export const T9K_ALLOC_MODES = ['xgn', 'sgn'] as const;
/** A T9k NVIDIA node allocation mode. */
export type T9kAllocMode = (typeof T9K_ALLOC_MODES)[number];

/** The `t9k` prop of a GPU node. */
export interface T9kNodeOptions {
  /** Value of the `sched.tensorstack.dev/accelerator` label. */
  readonly accelerator: T9kAccelerator;
  /**
   * How the node's NVIDIA GPUs are handed out. Required for `nvidia-gpu` and forbidden otherwise: the
   * two modes place different workloads (and `xgn` repels every pod that requests no GPU), so there is
   * no safe default to pick for the user.
   */
  readonly allocMode?: T9kAllocMode;
}

/** Every problem with `options`, in field order; field names start with `t9k.` (the GpuNode prop). */
export function checkT9kNodeOptions(options: T9kNodeOptions): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const accelerator = checkEnum('t9k.accelerator', options?.accelerator, T9K_ACCELERATORS);
  if (accelerator) return [accelerator];
  const { allocMode } = options;
  if (options.accelerator === 'nvidia-gpu') {
    if (allocMode === undefined) {
      issues.push(fieldIssue('t9k.allocMode', allocMode, `${oneOf(T9K_ALLOC_MODES)} for accelerator "nvidia-gpu"`));
    } else {
      const bad = checkEnum('t9k.allocMode', allocMode, T9K_ALLOC_MODES);
      if (bad) issues.push(bad);
    }
  } else if (allocMode !== undefined) {
    issues.push(
      fieldIssue('t9k.allocMode', allocMode, `nothing for accelerator "${options.accelerator}" (xgn and sgn apply to nvidia-gpu only)`),
    );
  }
  return issues;
}

/**
 * The labels IaC writes on a T9k node: the accelerator, and for NVIDIA the allocation mode.
 * Throws a ValidationError on bad options.
 * @example
 * t9kNodeLabels({ accelerator: 'nvidia-gpu', allocMode: 'xgn' })
 * // { 'sched.tensorstack.dev/accelerator': 'nvidia-gpu', 'sched.tensorstack.dev/node-alloc-mode': 'xgn' }
 */
export function t9kNodeLabels(options: T9kNodeOptions): Record<string, string> {
  throwIfInvalid(checkT9kNodeOptions(options));
  const labels: Record<string, string> = { [T9K.acceleratorLabel]: options.accelerator };
  if (options.allocMode) labels[T9K.allocModeLabel] = options.allocMode;
  return labels;
}

/**
 * The taints a node with these labels must carry: the xgn taint on an `xgn` node, nothing otherwise.
 * For the runtime controller, which merges them key by key where no T9k Scheduler does it. IaC must not
 * write them: `spec.taints` is an atomic list under server-side apply, so applying it would take over
 * taints owned by the kubelet, the cloud provider and the node lifecycle controller.
 */
export function t9kRequiredTaints(labels: Readonly<Record<string, string>> | undefined): Taint[] {
  return labels?.[T9K.allocModeLabel] === 'xgn' ? [{ ...XGN_TAINT }] : [];
}

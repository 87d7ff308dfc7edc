/**
 * The three T9k Scheduler NVIDIA modes applied to any pod template.
 */
import { entryPath, FieldIssue, fieldIssue, formatValue, throwIfInvalid } from '../model/errors';
import { T9K, XGN_TAINT } from './keys';
import { isLabelValue } from '../k8s/names';
import { checkEnum, checkGpuCount } from '../model/rules';
import { T9kAllocMode } from './node';
import type { ContainerLike } from '../k8s/pod-template';
import { Toleration, tolerates, tolerationFor } from '../k8s/toleration';
import { T9kPodTemplateLike } from './field-paths';
import { T9kPoolNode, T9kResource, allocModeOf, checkSharedGpuPool, checkT9kPod } from './pod-rules';

/** The NVIDIA GPU modes of the T9k Scheduler: one GPU, a percent of a shared GPU, or a whole node. */
export const T9K_GPU_MODES = ['exclusive-gpu', 'shared-gpu', 'exclusive-node'] as const;
/** A T9k GPU mode. */
export type T9kGpuMode = (typeof T9K_GPU_MODES)[number];

/** The extended resource each mode requests. */
export const T9K_MODE_RESOURCE: Readonly<Record<T9kGpuMode, T9kResource>> = {
  'exclusive-gpu': T9K.exclusiveGpuResource,
  'shared-gpu': T9K.sharedGpuPercentResource,
  'exclusive-node': T9K.exclusiveNodeResource,
};

/** Least percent of a shared GPU a pod may request. */
export const GPU_PERCENT_MIN = 1;
/** Most percent of a shared GPU a pod may request. */
export const GPU_PERCENT_MAX = 100;

interface T9kGpuCommon {
  /**
   * Container that gets the resource.
   * @default the pod's only container (an error when it has several)
   */
  readonly container?: string;
  /** Value of the `scheduler.tensorstack.dev/group-name` label (the pod's PodGroup). */
  readonly groupName?: string;
  /**
   * The pool the pod is meant for, when known: a shared-GPU request on a pool whose nodes are all
   * xgn is rejected (see `t9kPoolNodes` to build `nodes` from GpuNode props).
   * @default not checked
   */
  readonly pool?: {
    /** Name of the pool, for the message. */
    readonly name: string;
    /** Its members, e.g. `t9kPoolNodes(name, nodeProps)`. */
    readonly nodes: readonly T9kPoolNode[];
  };
}

/** N whole GPUs for one container, on an xgn node: `tensorstack.dev/nvidia-gpu: N`. */
export interface T9kExclusiveGpu extends T9kGpuCommon {
  /** Whole GPUs for one container. */
  readonly mode: 'exclusive-gpu';
  /** Whole GPUs, an integer >= 1. */
  readonly gpus: number;
}

/**
 * P percent of one GPU's memory, on an sgn node: `tensorstack.dev/nvidia-gpu-percent: P`. The
 * container's own cpu/memory requests are kept. The limit is advisory: the scheduler only tells the
 * container its share (T9K_GPU_PERCENT, T9K_GPU_MEMORY).
 */
export interface T9kSharedGpu extends T9kGpuCommon {
  /** A percent of one GPU's memory. */
  readonly mode: 'shared-gpu';
  /** Percent of one GPU's memory, an integer from 1 to 100. */
  readonly percent: number;
}

/** The whole node (CPU, memory, all GPUs) for one container, on an xgn node: `tensorstack.dev/nvidia-gpu-node: 1`. */
export interface T9kExclusiveNode extends T9kGpuCommon {
  /** The whole node for one container. */
  readonly mode: 'exclusive-node';
}

/** How a pod uses NVIDIA GPUs under the T9k Scheduler: the `t9k` prop of the GPU-workload helpers. */
export type T9kGpuOptions = T9kExclusiveGpu | T9kSharedGpu | T9kExclusiveNode;

/** Every problem with `options`, in field order; field names are the option names. */
export function checkT9kGpuOptions(options: T9kGpuOptions): FieldIssue[] {
  const mode = checkEnum('mode', options?.mode, T9K_GPU_MODES);
  if (mode) return [mode];
  const issues: FieldIssue[] = [];
  const given = options as { gpus?: unknown; percent?: unknown };
  if (options.mode === 'exclusive-gpu') {
    const bad = checkGpuCount('gpus', options.gpus);
    if (bad) issues.push(bad);
  } else if (given.gpus !== undefined) {
    issues.push(fieldIssue('gpus', given.gpus, `nothing for mode "${options.mode}" (gpus is for exclusive-gpu)`));
  }
  if (options.mode === 'shared-gpu') {
    if (!Number.isInteger(options.percent) || options.percent < GPU_PERCENT_MIN || options.percent > GPU_PERCENT_MAX) {
      issues.push(fieldIssue('percent', options.percent, `an integer from ${GPU_PERCENT_MIN} to ${GPU_PERCENT_MAX}`));
    }
  } else if (given.percent !== undefined) {
    issues.push(fieldIssue('percent', given.percent, `nothing for mode "${options.mode}" (percent is for shared-gpu)`));
  }
  if (options.container !== undefined && (typeof options.container !== 'string' || options.container === '')) {
    issues.push(fieldIssue('container', options.container, 'a container name'));
  }
  if (options.groupName !== undefined && (options.groupName === '' || !isLabelValue(options.groupName))) {
    issues.push(
      fieldIssue(
        'groupName',
        options.groupName,
        "a label value: 1 to 63 characters, alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
      ),
    );
  }
  if (options.mode === 'shared-gpu' && options.pool) {
    const allXgn = checkSharedGpuPool(options.pool.name, options.pool.nodes);
    if (allXgn) issues.push(allXgn);
  }
  return issues;
}

/** The index of the container that gets the resource, or the issue that says why there is none. */
function pickContainer(containers: readonly ContainerLike[], wanted: string | undefined): number | FieldIssue {
  const names = containers.map((c) => formatValue(c.name)).join(', ');
  if (wanted !== undefined) {
    const index = containers.findIndex((c) => c.name === wanted);
    return index >= 0 ? index : fieldIssue('container', wanted, `one of the pod's containers: ${names}`);
  }
  return containers.length === 1 ? 0 : fieldIssue('container', wanted, `one of the pod's containers: ${names}`);
}

/** A value the template already sets must be the one the mode sets; an absent one is fine. */
function checkUnset(field: string, current: string | undefined, wanted: string, why: string): FieldIssue | undefined {
  return current === undefined || current === wanted
    ? undefined
    : fieldIssue(field, current, `${JSON.stringify(wanted)} or nothing (${why})`);
}

/**
 * Returns a copy of `template` that requests a T9k GPU mode. It sets, exactly as T9k's documentation writes them:
 * - `spec.schedulerName: t9k-scheduler`;
 * - the mode's resource in the container's `resources.limits`, as an integer
 *   (`tensorstack.dev/nvidia-gpu: N`, `tensorstack.dev/nvidia-gpu-percent: P`, `tensorstack.dev/nvidia-gpu-node: 1`);
 * - the `scheduler.tensorstack.dev/group-name` label when `groupName` is given;
 *
 * and, so that the manifest says where it schedules even before any webhook runs:
 * - a nodeSelector `sched.tensorstack.dev/node-alloc-mode: xgn` (exclusive modes) or `sgn` (shared);
 * - for the exclusive modes, a toleration of the xgn taint `sched.tensorstack.dev/xgn-mode=true:NoSchedule`
 *   (unless one already tolerates it). Shared pods need none: sgn nodes carry no T9k taint.
 *
 * The input is never mutated: only the objects on the changed paths are copied, so values that are not
 * plain data (Pulumi Outputs, cdk8s Quantities) pass through untouched. Throws a ValidationError that
 * lists every problem (options, container choice, conflicting scheduler/label/selector, and the
 * {@link checkT9kPod} rules on the result).
 * @example
 * t9kPodTemplate({ spec: { containers: [{ name: 'shared', image: 'example.io/app' }] } }, { mode: 'shared-gpu', percent: 30 })
 */
export function t9kPodTemplate<T extends T9kPodTemplateLike>(template: T, options: T9kGpuOptions): T {
  const optionIssues = checkT9kGpuOptions(options);
  throwIfInvalid(optionIssues);
  const containers = template.spec?.containers ?? [];
  if (containers.length === 0) throwIfInvalid([fieldIssue('spec.containers', template.spec?.containers, 'at least one container')]);

  const resource = T9K_MODE_RESOURCE[options.mode];
  const allocMode: T9kAllocMode = allocModeOf(resource);
  const amount = options.mode === 'exclusive-gpu' ? options.gpus : options.mode === 'shared-gpu' ? options.percent : 1;
  const spec = template.spec!;
  const labels = template.metadata?.labels;

  const issues: FieldIssue[] = [];
  const index = pickContainer(containers, options.container);
  if (typeof index !== 'number') issues.push(index);
  const conflicts = [
    checkUnset('spec.schedulerName', spec.schedulerName, T9K.schedulerName, 'T9k resources are scheduled by the T9k Scheduler'),
    options.groupName === undefined
      ? undefined
      : checkUnset(entryPath('metadata.labels', T9K.groupNameLabel), labels?.[T9K.groupNameLabel], options.groupName, 'groupName sets it'),
    checkUnset(
      entryPath('spec.nodeSelector', T9K.allocModeLabel),
      spec.nodeSelector?.[T9K.allocModeLabel],
      allocMode,
      `mode ${options.mode} runs on ${allocMode} nodes`,
    ),
  ];
  for (const issue of conflicts) if (issue) issues.push(issue);
  throwIfInvalid(issues);
  const at = index as number;

  const container = containers[at];
  const newContainer: ContainerLike = {
    ...container,
    resources: { ...container.resources, limits: { ...container.resources?.limits, [resource]: amount } },
  };
  const tolerations: readonly Toleration[] = spec.tolerations ?? [];
  const needsToleration = allocMode === 'xgn' && !tolerations.some((t) => tolerates(t, XGN_TAINT));
  const result = {
    ...template,
    ...(options.groupName === undefined
      ? {}
      : { metadata: { ...template.metadata, labels: { ...labels, [T9K.groupNameLabel]: options.groupName } } }),
    spec: {
      ...spec,
      schedulerName: T9K.schedulerName,
      containers: containers.map((c, i) => (i === at ? newContainer : c)),
      nodeSelector: { ...spec.nodeSelector, [T9K.allocModeLabel]: allocMode },
      ...(needsToleration ? { tolerations: [...tolerations, tolerationFor(XGN_TAINT)] } : {}),
    },
  } as T;
  throwIfInvalid(checkT9kPod(result));
  return result;
}

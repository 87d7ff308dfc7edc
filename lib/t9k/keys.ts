/** The T9k Scheduler's names, labels, taint and resources that our objects and controller use. */

/** T9k Scheduler keys. */
export const T9K = {
  schedulerName: 't9k-scheduler',
  acceleratorLabel: 'sched.tensorstack.dev/accelerator',
  allocModeLabel: 'sched.tensorstack.dev/node-alloc-mode',
  xgnTaintKey: 'sched.tensorstack.dev/xgn-mode',
  groupNameLabel: 'scheduler.tensorstack.dev/group-name',
  exclusiveGpuResource: 'tensorstack.dev/nvidia-gpu',
  sharedGpuPercentResource: 'tensorstack.dev/nvidia-gpu-percent',
  exclusiveNodeResource: 'tensorstack.dev/nvidia-gpu-node',
} as const;

/** The taint the T9k Scheduler (or, without it, our controller) puts on xgn nodes. */
export const XGN_TAINT = { key: T9K.xgnTaintKey, value: 'true', effect: 'NoSchedule' } as const;

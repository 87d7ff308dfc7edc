/** T9k Scheduler support: node labels, the xgn taint, and the three NVIDIA GPU modes. */
export * from './node';
export * from './pod-template';
export * from './pod-rules';
export * from './toleration';
export * from './workload';

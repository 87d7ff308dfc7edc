/** T9k Scheduler support: node labels, the xgn taint, and the three NVIDIA GPU modes. */
export * from './node';
export * from './field-paths';
export * from './pod-rules';
// Kubernetes vocabulary the T9k functions take, re-exported while lib/index.ts does not export lib/k8s.
export { tolerates, tolerationFor } from '../k8s/toleration';
export type { Taint } from '../k8s/toleration';
export * from './gpu-modes';

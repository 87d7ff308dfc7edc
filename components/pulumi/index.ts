/** Pulumi components of tensor-fusion-iac: the same names and props as `tensor-fusion-iac/cdk8s`. */
export * from './gpu-pool';
export * from './gpu-node';
export * from './workload-profile';
export * from './gpu-resource-quota';
export * from './gpu-workload';
export * from './tensor-fusion-controller';
export type { InputArgs, Inputs } from './inputs';

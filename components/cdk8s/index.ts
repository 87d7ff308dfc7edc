/** cdk8s constructs of tensor-fusion-iac: the same names and props as `tensor-fusion-iac/pulumi`. */
export * from './gpu-pool';
export * from './gpu-node';
export * from './workload-profile';
export * from './gpu-resource-quota';
export * from './gpu-workload';
export * from './tensor-fusion-controller';

/** Autoscaling: the WorkloadProfile's autoScalingConfig decoded and turned into recommendations (see README.md). */
export * from './formats';
export * from './forecast';
export * from './histogram';
export * from './recommender';
export * from './replicas';
export * from './settings';
export * from './apply';

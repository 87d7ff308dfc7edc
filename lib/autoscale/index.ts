/** Autoscaling: recommendations from usage, for the settings the WorkloadProfile's autoScalingConfig decodes to (lib/api/autoscaling-settings.ts; see README.md). */
export * from './forecast';
export * from './histogram';
export * from './recommender';
export * from './replicas';
export * from './apply';

/**
 * TensorFusionWorkload (namespaced): a group of GPU workers. Created per workload by the admission
 * webhook, or authored directly for a fixed pool of remote workers (`spec.replicas` set).
 */
import { Static, Type } from '@sinclair/typebox';
import { Conditions, Int32, StringEnum } from './common';
import { WorkloadProfileSpec } from './workload-profile';

/** Lifecycle of a workload's workers, as upstream. */
export const WORKLOAD_PHASES = ['Pending', 'Running', 'Failed', 'Unknown'] as const;
export type WorkloadPhase = (typeof WORKLOAD_PHASES)[number];

/** Same fields as {@link WorkloadProfileSpec}. */
export const TensorFusionWorkloadSpec = WorkloadProfileSpec;
export type TensorFusionWorkloadSpec = Static<typeof TensorFusionWorkloadSpec>;

export const TensorFusionWorkloadStatus = Type.Object(
  {
    phase: Type.Optional(StringEnum(WORKLOAD_PHASES, { description: 'Overall state of the workers.' })),
    conditions: Type.Optional(Conditions),
    workerCount: Int32({ description: 'Workers that exist.', minimum: 0 }),
    readyWorkers: Type.Optional(Int32({ description: 'Workers that are ready.', minimum: 0 })),
  },
  { description: 'Observed state of the workers.' },
);
export type TensorFusionWorkloadStatus = Static<typeof TensorFusionWorkloadStatus>;

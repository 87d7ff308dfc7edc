/**
 * TensorFusionWorkload (namespaced): a group of GPU workers. Created per workload by the admission
 * webhook, or authored directly for a fixed pool of remote workers (`spec.replicas` set).
 */
import { Static, Type } from '@sinclair/typebox';
import { Conditions, GpuResources, Int32, StringEnum } from './common';
import { WorkloadProfileSpec } from './workload-profile';
import type { TensorFusionWorkloadStatusFields, WorkloadProfileSpecProps } from './generated/api-props';

/** Lifecycle of a workload's workers, as upstream. */
export const WORKLOAD_PHASES = ['Pending', 'Running', 'Failed', 'Unknown'] as const;
/** A workload phase. */
export type WorkloadPhase = (typeof WORKLOAD_PHASES)[number];

/** Same fields as {@link WorkloadProfileSpec}. */
export const TensorFusionWorkloadSpec = WorkloadProfileSpec;
/** Desired resources of a TensorFusionWorkload: the fields of a WorkloadProfile spec. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type TensorFusionWorkloadSpec = WorkloadProfileSpecProps;

/**
 * What the recommender (lib/runtime/autoscale/) last recommended; the conditions AutoscalingActive and
 * ReplicaScaling say whether it runs and acts, and why not.
 */
export const AutoscalingStatus = Type.Object(
  {
    recommendation: Type.Optional(GpuResources),
    confidence: Type.Optional(Type.Number({ minimum: 0, description: 'History behind the recommendation, in aggregation periods.' })),
    desiredReplicas: Type.Optional(Int32({ minimum: 0, description: 'Replicas autoSetReplicas last asked the owner for.' })),
    lastUpdateTime: Type.Optional(Type.String({ format: 'date-time', description: 'When the recommendation last changed.' })),
  },
  { description: 'Autoscaling recommendations and actions.' },
);
export type AutoscalingStatus = Static<typeof AutoscalingStatus>;

/** The schema of the TensorFusionWorkload status (TypeBox), the source of its CRD schema, its type and its validation. */
export const TensorFusionWorkloadStatus = Type.Object(
  {
    phase: Type.Optional(StringEnum(WORKLOAD_PHASES, { description: 'Overall state of the workers.' })),
    conditions: Type.Optional(Conditions),
    workerCount: Int32({ description: 'Workers that exist.', minimum: 0 }),
    readyWorkers: Type.Optional(Int32({ description: 'Workers that are ready.', minimum: 0 })),
    autoscaling: Type.Optional(AutoscalingStatus),
  },
  { description: 'Observed state of the workers.' },
);
/** Observed state of the workers. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type TensorFusionWorkloadStatus = TensorFusionWorkloadStatusFields;

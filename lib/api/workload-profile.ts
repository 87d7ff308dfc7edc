/**
 * WorkloadProfile (namespaced): reusable GPU settings a pod references with the
 * `tensor-fusion.ai/workload-profile` annotation. TensorFusionWorkload shares this spec.
 */
import { Type } from '@sinclair/typebox';
import { QOS_LEVELS, REPLICAS_MAX } from '../model/rules';
import { EXPECTED_KEYWORD, GpuResources, Int32, NodeAffinity, StringEnum } from './common';
import { FORECAST_MODELS } from './autoscaling-formats';
import * as F from './autoscaling-formats';
import type { WorkloadProfileSpecProps } from './generated/api-props';

/** A string field with a format of lib/api/autoscaling-formats.ts: the pattern goes into the CRD too. */
const formatted = (pattern: string, expected: string) => (description: string) =>
  Type.Optional(Type.String({ description, pattern, [EXPECTED_KEYWORD]: expected }));
const duration = formatted(F.DURATION_PATTERN, F.DURATION_EXPECTED);
const ratio = formatted(F.RATIO_PATTERN, F.RATIO_EXPECTED);
const fraction = formatted(F.FRACTION_PATTERN, F.FRACTION_EXPECTED);
const percentile = formatted(F.PERCENTILE_PATTERN, F.PERCENTILE_EXPECTED);
const multiplier = formatted(F.MULTIPLIER_PATTERN, F.MULTIPLIER_EXPECTED);
const targetResource = (description: string) => Type.Optional(StringEnum(F.TARGET_RESOURCES, { description }));
const enable = Type.Optional(Type.Boolean({ description: 'Turns this autoscaler on.' }));

const Prediction = Type.Optional(
  Type.Object(
    {
      enable,
      historyDataPeriod: duration('How much metric history the predictor reads, e.g. 7d.'),
      model: Type.Optional(
        StringEnum(FORECAST_MODELS, { description: 'Forecasting model: seasonal-naive (a day repeats) or linear-trend.' }),
      ),
      predictionPeriod: duration('How far ahead the predictor looks, e.g. 1h.'),
    },
    { description: 'Forecast-based tuning on top of the observed metrics.' },
  ),
);

/** Autoscaling settings; all numbers and durations are strings (`"0.95"`, `"30m"`), as upstream. */
export const AutoScalingConfig = Type.Object(
  {
    autoSetLimits: Type.Optional(
      Type.Object(
        {
          enable,
          evaluationPeriod: duration('Window of metrics used for each decision (short, under a minute).'),
          extraTFlopsBufferRatio: ratio('Extra TFLOPS headroom over observed use, as a ratio.'),
          ignoredDeltaRange: fraction('Changes smaller than this ratio are ignored.'),
          maxRatioToRequests: multiplier('Upper bound of the limit as a multiple of the request, e.g. "5.0".'),
          prediction: Prediction,
          scaleUpStep: ratio('Ratio by which a limit grows per step.'),
          targetResource: targetResource('Which limits to tune: tflops, vram or all (the default).'),
        },
        { description: 'Vertical autoscaling of limits: burst on the GPUs already assigned.' },
      ),
    ),
    autoSetReplicas: Type.Optional(
      Type.Object(
        {
          enable,
          evaluationPeriod: duration('Window of metrics used for each decision (1m to 1h).'),
          scaleDownCoolDownTime: duration('Minimum time between two scale-downs.'),
          scaleDownStep: fraction('Ratio of replicas removed per scale-down.'),
          scaleUpCoolDownTime: duration('Minimum time between two scale-ups.'),
          scaleUpStep: ratio('Ratio of replicas added per scale-up.'),
          targetTFlopsOfLimits: fraction('Scale out when TFLOPS use exceeds this ratio of the limits.'),
        },
        { description: 'Horizontal autoscaling of workers onto more GPUs when limits are reached.' },
      ),
    ),
    autoSetRequests: Type.Optional(
      Type.Object(
        {
          aggregationPeriod: duration('Period over which usage is aggregated.'),
          enable,
          evaluationPeriod: duration('Window of metrics used for each decision (1 day to 2 weeks).'),
          extraBufferRatio: ratio('Headroom added to the observed usage, e.g. "0.1" for 10%.'),
          percentileForAutoRequests: percentile('Usage percentile used as the new request.'),
          prediction: Prediction,
          targetResource: targetResource('Which requests to tune: tflops, vram or all (the default).'),
        },
        { description: 'Long-term adjustment of requests to the observed usage (remote mode).' },
      ),
    ),
  },
  { description: 'Autoscaling of requests, limits and replicas; overrides the pool defaults.' },
);
/** Autoscaling of a workload's requests, limits and replicas (the documented type of the schema). */
export type AutoScalingConfig = NonNullable<WorkloadProfileSpecProps['autoScalingConfig']>;

/** Spec of WorkloadProfile and of TensorFusionWorkload. */
export const WorkloadProfileSpec = Type.Object(
  {
    resources: Type.Optional(GpuResources),
    qos: Type.Optional(StringEnum(QOS_LEVELS, { description: 'Quality-of-service level; medium when unset.' })),
    replicas: Type.Optional(
      Int32({
        description: `Fixed number of GPU workers, at most ${REPLICAS_MAX}. Unset means one worker per client pod (dynamic).`,
        minimum: 0,
        maximum: REPLICAS_MAX,
      }),
    ),
    isLocalGPU: Type.Optional(Type.Boolean({ description: 'Run the pod on the GPU server of its worker for lower latency.' })),
    poolName: Type.Optional(Type.String({ description: 'GPUPool to allocate from; the default pool when unset.' })),
    gpuCount: Type.Optional(
      Int32({ description: 'GPU devices per worker; requests and limits apply to each. Default 1.', minimum: 1, maximum: 128 }),
    ),
    gpuModel: Type.Optional(
      Type.String({
        description:
          'Required GPU model, matched case-insensitively by family (H100 selects H100, H100-PCIe and H100-NVL) or by an upstream catalog name such as A100_SXM_80G.',
      }),
    ),
    nodeAffinity: Type.Optional(NodeAffinity),
    autoScalingConfig: Type.Optional(AutoScalingConfig),
  },
  { description: 'GPU settings of a workload.' },
);
/** GPU settings of a workload. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type WorkloadProfileSpec = WorkloadProfileSpecProps;

/** Fields older TensorFusion examples used that are not part of the schema, with the field that replaced them. */
export const RETIRED_PROFILE_FIELDS: Readonly<Record<string, string>> = {
  autoScaling: 'autoScalingConfig',
  minReplicas: 'autoScalingConfig',
  maxReplicas: 'autoScalingConfig',
};

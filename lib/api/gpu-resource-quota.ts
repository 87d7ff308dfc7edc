/**
 * GPUResourceQuota (namespaced): GPU quotas of one namespace, wire-compatible with upstream
 * TensorFusion's kind for the fields it implements. `spec.total` bounds the sum over the namespace's
 * GPU pods (like a ResourceQuota), `spec.single` bounds one pod (like a LimitRange's max). The
 * scheduler extender enforces `total` at placement, the admission webhook `single`; quota changes
 * apply to new placements, and shares already bound are never revoked.
 */
import { Type } from '@sinclair/typebox';
import { formatBytes } from '../k8s/quantity';
import { QUOTA_TFLOPS_MAX, QUOTA_VRAM_MAX, TFLOPS_MAX, VRAM_MAX } from '../model/limits';
import { GPU_COUNT_MAX, GPU_COUNT_MIN } from '../model/rules';
import { Bytes, Conditions, Int32, ShareBytes, ShareTflops, Tflops } from './common';
import type { GPUResourceQuotaSpecFields, GPUResourceQuotaStatusFields } from './generated/api-props';

/** `spec.total.maxWorkers` when unset: upstream's default, kept as the CRD's schema default. */
export const DEFAULT_QUOTA_MAX_WORKERS = 32768;
/** `spec.total.alertThresholdPercent` when unset (upstream's default). */
export const DEFAULT_QUOTA_ALERT_THRESHOLD_PERCENT = 95;

/**
 * The condition types of a GPUResourceQuota status: `Ready` (the usage is counted), and
 * `AlertThresholdReached` (some bounded total is used at or above `spec.total.alertThresholdPercent`).
 */
export const QUOTA_CONDITION_TYPES = ['Ready', 'AlertThresholdReached'] as const;
/** A condition type of a GPUResourceQuota status. */
export type QuotaConditionType = (typeof QUOTA_CONDITION_TYPES)[number];

/** TFLOPS and VRAM, each optional: a quota bounds only what it sets. */
const QuotaAmounts = (description: string, scope: string, tflopsMax: number, vramMax: number) =>
  Type.Object(
    {
      tflops: Type.Optional(ShareTflops(`FP16 TFLOPS ${scope}, at most ${tflopsMax}; unbounded when unset.`, tflopsMax)),
      vram: Type.Optional(ShareBytes(`Video memory in bytes ${scope}, at most ${formatBytes(vramMax)}; unbounded when unset.`, vramMax)),
    },
    { description },
  );

const TOTAL_SCOPE = 'summed over the namespace (per-GPU amount x GPU count of every pod)';
const SINGLE_SCOPE = 'per GPU of one pod';

/** The schema of the GPUResourceQuota spec (TypeBox), the source of its CRD schema, its type and its validation. */
export const GPUResourceQuotaSpec = Type.Object(
  {
    total: Type.Optional(
      Type.Object(
        {
          requests: Type.Optional(
            QuotaAmounts('Most requests of all GPU pods of the namespace together.', TOTAL_SCOPE, QUOTA_TFLOPS_MAX, QUOTA_VRAM_MAX),
          ),
          limits: Type.Optional(
            QuotaAmounts('Most limits of all GPU pods of the namespace together.', TOTAL_SCOPE, QUOTA_TFLOPS_MAX, QUOTA_VRAM_MAX),
          ),
          maxWorkers: Type.Optional(
            Int32({
              description: `Most pods holding or reserving a GPU share in the namespace. Default ${DEFAULT_QUOTA_MAX_WORKERS}.`,
              minimum: 0,
              default: DEFAULT_QUOTA_MAX_WORKERS,
            }),
          ),
          alertThresholdPercent: Type.Optional(
            Int32({
              description: `Percent of a total at which the AlertThresholdReached condition turns True. Default ${DEFAULT_QUOTA_ALERT_THRESHOLD_PERCENT}.`,
              minimum: 0,
              maximum: 100,
              default: DEFAULT_QUOTA_ALERT_THRESHOLD_PERCENT,
            }),
          ),
        },
        { description: 'Bounds of the whole namespace, like a ResourceQuota; enforced at placement.' },
      ),
    ),
    single: Type.Optional(
      Type.Object(
        {
          maxRequests: Type.Optional(QuotaAmounts('Most a pod may request per GPU.', SINGLE_SCOPE, TFLOPS_MAX, VRAM_MAX)),
          maxLimits: Type.Optional(QuotaAmounts('Most a pod may set as its limits per GPU.', SINGLE_SCOPE, TFLOPS_MAX, VRAM_MAX)),
          maxGPUCount: Type.Optional(
            Int32({
              description: `Most GPUs one pod may take, ${GPU_COUNT_MIN} to ${GPU_COUNT_MAX}; unbounded when unset.`,
              minimum: GPU_COUNT_MIN,
              maximum: GPU_COUNT_MAX,
            }),
          ),
        },
        { description: 'Bounds of one pod, like a LimitRange max; enforced at admission.' },
      ),
    ),
  },
  { description: 'GPU quotas of a namespace: totals over its GPU pods and bounds of each pod.' },
);
/** GPU quotas of a namespace. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type GPUResourceQuotaSpec = GPUResourceQuotaSpecFields;

/**
 * What the components write for the unset half of a TFLOPS/VRAM pair of bounds: the most the field
 * allows, which bounds nothing a pod can ask for. Upstream's CRD requires `tflops` and `vram`
 * together in each of `total.requests`, `total.limits`, `single.maxRequests` and `single.maxLimits`.
 */
export const UNBOUNDED_QUOTA_AMOUNTS = {
  total: { tflops: String(QUOTA_TFLOPS_MAX), vram: formatBytes(QUOTA_VRAM_MAX) },
  single: { tflops: String(TFLOPS_MAX), vram: formatBytes(VRAM_MAX) },
} as const;

/** `spec` with each TFLOPS/VRAM pair of bounds that sets one half given the other as {@link UNBOUNDED_QUOTA_AMOUNTS} (a copy). */
export function withBothQuotaAmounts(spec: GPUResourceQuotaSpec): GPUResourceQuotaSpec {
  type Pair = { tflops?: unknown; vram?: unknown };
  const fill = (parent: Record<string, unknown> | undefined, keys: readonly string[], scope: 'total' | 'single') => {
    if (!parent) return parent;
    const out = { ...parent };
    for (const k of keys) {
      const a = out[k] as Pair | undefined;
      if (a && (a.tflops !== undefined || a.vram !== undefined)) out[k] = { ...UNBOUNDED_QUOTA_AMOUNTS[scope], ...a };
    }
    return out;
  };
  const { total, single } = spec;
  return {
    ...spec,
    ...(total ? { total: fill(total, ['requests', 'limits'], 'total') } : {}),
    ...(single ? { single: fill(single, ['maxRequests', 'maxLimits'], 'single') } : {}),
  } as GPUResourceQuotaSpec;
}

/** TFLOPS and VRAM counted over the namespace, both always reported. */
const UsedAmounts = (description: string) =>
  Type.Object(
    {
      tflops: Tflops('FP16 TFLOPS, e.g. "420".'),
      vram: Bytes('Video memory, e.g. "96Gi".'),
    },
    { description },
  );

/** A percent as a decimal string, as upstream writes it. */
const Percent = (description: string) =>
  Type.Optional(
    Type.String({
      description,
      pattern: '^-?[0-9]+(\\.[0-9]+)?$',
    }),
  );

const FREE =
  'still free, as a decimal string, e.g. "12.5"; negative when a lowered quota is below what is already bound. Absent when the total sets no bound.';

/** The free percents of the TFLOPS and VRAM totals of `spec.total.<total>`. */
const FreePercents = (total: 'requests' | 'limits', description: string) =>
  Type.Optional(
    Type.Object(
      {
        tflops: Percent(`Percent of spec.total.${total}.tflops ${FREE}`),
        vram: Percent(`Percent of spec.total.${total}.vram ${FREE}`),
      },
      { description },
    ),
  );

/** The schema of the GPUResourceQuota status (TypeBox), the source of its CRD schema, its type and its validation. */
export const GPUResourceQuotaStatus = Type.Object(
  {
    used: Type.Object(
      {
        requests: UsedAmounts('Requests of the GPU pods of the namespace together.'),
        limits: UsedAmounts('Limits of the GPU pods of the namespace together.'),
        workers: Int32({ description: 'Pods holding or reserving a GPU share.', minimum: 0 }),
      },
      { description: 'What the namespace uses, counted like spec.total.' },
    ),
    availablePercent: Type.Optional(
      Type.Object(
        {
          requests: FreePercents('requests', 'Free percent of the request totals.'),
          limits: FreePercents('limits', 'Free percent of the limit totals.'),
          workers: Percent(`Percent of spec.total.maxWorkers ${FREE}`),
        },
        { description: 'Free percent of each bounded total.' },
      ),
    ),
    conditions: Type.Optional(Conditions),
    lastUpdateTime: Type.Optional(Type.String({ format: 'date-time', description: 'When the status was last written.' })),
  },
  { description: 'Usage of the namespace against its quota; conditions Ready and AlertThresholdReached.' },
);
/** Usage of a namespace against its quota. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type GPUResourceQuotaStatus = GPUResourceQuotaStatusFields;

/** The amounts objects of a quota spec, where upstream also has `compute`. */
const AMOUNTS = ['requests', 'limits', 'maxRequests', 'maxLimits'];

/** Upstream's defaults of `spec.single`, with what they would fill and the annotations that set it on a pod. */
const UPSTREAM_DEFAULTS: Readonly<Record<string, readonly [string, string]>> = {
  defaultRequests: ['requests', 'tflops-request and vram-request'],
  defaultLimits: ['limits', 'tflops-limit and vram-limit'],
};

/**
 * What to write instead of an upstream GPUResourceQuota field this runtime does not implement, for
 * the field `name` of the object at `parent` (a field path such as `spec.total.requests`); undefined
 * for any other field, which gets the generic unknown-field message.
 */
export function upstreamOnlyQuotaField(parent: string, name: string): string | undefined {
  const last = parent.slice(parent.lastIndexOf('.') + 1);
  if (name === 'compute' && AMOUNTS.includes(last)) {
    return `${parent}.tflops instead: compute (upstream's percent of one GPU) is not provided by this runtime's quotas`;
  }
  const filled = last === 'single' && Object.hasOwn(UPSTREAM_DEFAULTS, name) ? UPSTREAM_DEFAULTS[name] : undefined;
  if (!filled) return undefined;
  return (
    `nothing: this runtime does not fill defaults from quotas (upstream's single.${name}); ` +
    `set ${filled[0]} on the pods (the tensor-fusion.ai/${filled[1]} annotations) or their WorkloadProfile`
  );
}

/**
 * Schema building blocks shared by the tensor-fusion.ai/v1 kinds. Every helper emits a node that is
 * valid in a structural CRD schema (typed, no patternProperties, no anyOf of literals), so the same
 * TypeBox value feeds the CRD generator, the static types and the Ajv validators.
 */
// TypeBox's declarations name AsyncIterableIterator (ES2018): kept in our .d.ts so that projects on an
// older `lib` (cdk8s init's es2016) that do not skip lib checks still compile against this package.
/// <reference lib="es2018.asynciterable" preserve="true" />
import { Static, TSchema, Type } from '@sinclair/typebox';
import { formatBytes, QUANTITY_PATTERN } from '../k8s/quantity';
import { QUANTITY_MAX_LENGTH, TFLOPS_MAX, VRAM_MAX } from '../model/limits';
import type { ConditionFields, GpuResourcesFields, WorkloadProfileSpecProps } from './generated/api-props';

/**
 * Schema keyword that replaces the generic "what is allowed" text in validation messages. It is
 * ours only: the CRD generator strips it.
 */
export const EXPECTED_KEYWORD = 'x-tf-expected';

/** A Kubernetes quantity: an integer or a quantity string (`4Gi`, `'10'`, `500m`). */
export type Quantity = string | number;

/**
 * Every quantity string is bounded in length and exponent (QUANTITY_PATTERN); `maximum` bounds the
 * integer form where one share per GPU is meant. The exact bounds of string values are the codec's
 * (lib/model/share-quantity.ts), checked at admission and by the components.
 */
function quantity(description: string, expected: string, maximum?: number) {
  return Type.Unsafe<Quantity>({
    description,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    ...(maximum !== undefined ? { maximum } : {}),
    pattern: QUANTITY_PATTERN,
    maxLength: QUANTITY_MAX_LENGTH,
    'x-kubernetes-int-or-string': true,
    [EXPECTED_KEYWORD]: expected,
  });
}

/** A size in bytes (VRAM, memory, disk) as a Kubernetes quantity. */
export const Bytes = (description: string) => quantity(description, 'a Kubernetes quantity such as 4Gi or 512Mi');

/** FP16 TFLOPS as a Kubernetes quantity (`'10'`, `'0.5'`, `500m`; fractions must be strings). */
export const Tflops = (description: string) =>
  quantity(description, "a Kubernetes quantity such as '10', '0.5' or 500m (fractions as strings)");

/** VRAM of one share per GPU: at most 1Pi (VRAM_MAX) as an integer; the codec bounds strings alike. */
export const ShareBytes = (description: string, max = VRAM_MAX) =>
  quantity(description, `a Kubernetes quantity such as 4Gi or 512Mi, at most ${formatBytes(max)}`, max);

/** TFLOPS of one share per GPU: at most TFLOPS_MAX as an integer; the codec bounds strings alike. */
export const ShareTflops = (description: string, max = TFLOPS_MAX) =>
  quantity(description, `a Kubernetes quantity such as '10', '0.5' or 500m (fractions as strings), at most ${max}`, max);

/** CPU cores as a Kubernetes quantity. */
export const Cpu = (description: string) => quantity(description, 'a Kubernetes quantity such as 8 or 500m');

/** A string restricted to `values`, emitted as `type: string` + `enum` (structural, unlike a literal union). */
// `D` keeps `default` out of the inference of `T` (a default would widen `T` to string).
export function StringEnum<T extends string, D extends T = T>(
  values: readonly T[],
  options: {
    /** What the field means, in words. */
    description: string;
    /** Value when unset. */
    default?: D;
  },
) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });
}

/** A map with string keys, emitted as `additionalProperties` (TypeBox's Record uses patternProperties). */
export function MapOf<T extends TSchema>(value: T, description: string) {
  return Type.Unsafe<Record<string, Static<T>>>({ type: 'object', additionalProperties: value, description });
}

/** An embedded object kept as-is (pod templates): the only place unknown fields are allowed. */
export function Embedded(description: string) {
  return Type.Unsafe<Record<string, unknown>>({
    type: 'object',
    description,
    'x-kubernetes-preserve-unknown-fields': true,
  });
}

/** 32-bit integer, as Go's int32 fields are declared upstream. */
export const Int32 = (options: { description: string; minimum?: number; maximum?: number; default?: number }) =>
  Type.Integer({ format: 'int32', ...options });

/** TFLOPS and VRAM of one GPU share; both are required wherever the pair appears (as upstream). */
export const GpuAmounts = (description: string) =>
  Type.Object(
    {
      tflops: ShareTflops(`FP16 TFLOPS, at most ${TFLOPS_MAX}.`),
      vram: ShareBytes(`Video memory in bytes, at most ${formatBytes(VRAM_MAX)}.`),
    },
    { description },
  );
export type GpuAmounts = Static<ReturnType<typeof GpuAmounts>>;

/** Requests and limits per GPU device of one worker. */
export const GpuResources = Type.Object(
  {
    requests: GpuAmounts('Guaranteed TFLOPS and VRAM per GPU device.'),
    limits: GpuAmounts('Ceiling of TFLOPS and VRAM per GPU device; must be at least the request.'),
  },
  { description: 'GPU share of each worker, per GPU device. When set, requests and limits both need tflops and vram.' },
);
/** GPU share per device (the documented type of the schema, generated into lib/api/generated/api-props.ts). */
export type GpuResources = GpuResourcesFields;

/** Operators of a Kubernetes node selector requirement. */
export const NODE_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'] as const;

const NodeSelectorRequirement = Type.Object(
  {
    key: Type.String({ description: 'Label (or field) key the requirement tests.' }),
    operator: StringEnum(NODE_SELECTOR_OPERATORS, { description: 'How the key relates to the values.' }),
    values: Type.Optional(
      Type.Array(Type.String(), {
        description: 'Values to compare with: non-empty for In/NotIn, empty for Exists/DoesNotExist, one integer for Gt/Lt.',
      }),
    ),
  },
  { description: 'One label or field test on a node.' },
);

/** Kubernetes NodeSelectorTerm: its requirements are ANDed. */
export const NodeSelectorTerm = Type.Object(
  {
    matchExpressions: Type.Optional(Type.Array(NodeSelectorRequirement, { description: 'Tests on node labels.' })),
    matchFields: Type.Optional(Type.Array(NodeSelectorRequirement, { description: 'Tests on node fields.' })),
  },
  { description: 'Requirements that must all hold for a node to match.' },
);

/** Kubernetes NodeSelector: its terms are ORed. */
export const NodeSelector = Type.Object(
  {
    nodeSelectorTerms: Type.Array(NodeSelectorTerm, { description: 'A node matches when any term matches.' }),
  },
  { description: 'Selects nodes by label or field requirements (Kubernetes NodeSelector).' },
);
export type NodeSelector = Static<typeof NodeSelector>;

/** Kubernetes NodeAffinity, as in a pod spec. */
export const NodeAffinity = Type.Object(
  {
    requiredDuringSchedulingIgnoredDuringExecution: Type.Optional(NodeSelector),
    preferredDuringSchedulingIgnoredDuringExecution: Type.Optional(
      Type.Array(
        Type.Object(
          {
            weight: Int32({ description: 'Weight added to a matching node, 1 to 100.', minimum: 1, maximum: 100 }),
            preference: NodeSelectorTerm,
          },
          { description: 'A weighted node preference.' },
        ),
        { description: 'Soft preferences: the node with the highest total weight wins.' },
      ),
    ),
  },
  { description: 'Node affinity (Kubernetes NodeAffinity shape).' },
);
/** Node affinity, as in a pod spec (the documented type of the schema). */
export type NodeAffinity = NonNullable<WorkloadProfileSpecProps['nodeAffinity']>;

/** Status of a condition, as in metav1.Condition. */
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

/** metav1.Condition list, as every Kubernetes status carries it. */
export const Conditions = Type.Array(
  Type.Object(
    {
      type: Type.String({ description: 'Condition type in CamelCase, e.g. Ready.', maxLength: 316 }),
      status: StringEnum(CONDITION_STATUSES, { description: 'Whether the condition holds.' }),
      reason: Type.String({
        description: 'Machine-readable CamelCase reason of the last transition.',
        minLength: 1,
        maxLength: 1024,
        pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
      }),
      message: Type.String({ description: 'Human-readable detail.', maxLength: 32768 }),
      lastTransitionTime: Type.String({ format: 'date-time', description: 'When the status last changed.' }),
      observedGeneration: Type.Optional(
        Type.Integer({ format: 'int64', minimum: 0, description: 'metadata.generation the condition was computed from.' }),
      ),
    },
    { description: 'One observed condition.' },
  ),
  { description: 'Latest observations of the object state.' },
);
/** One observed condition (metav1.Condition). The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type Condition = ConditionFields;

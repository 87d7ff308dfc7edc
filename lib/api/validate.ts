/**
 * Runtime validation of tensor-fusion.ai/v1 objects against the same schemas that generate the
 * CRDs, with messages that name the field, the value and what is allowed (lib/model/errors.ts).
 * Ajv checks shape, types, enums and ranges; the semantic rules (limit >= request, positive
 * quantities) come from lib/model/rules.ts and lib/model/share-quantity.ts so that every entry point
 * reports them alike.
 */
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { checked, didYouMean, FieldIssue, fieldIssue, throwIfInvalid } from '../model/errors';
import { API_VERSION } from '../model/group';
import { checkTflops, checkVram } from '../model/share-quantity';
import { QUOTA_TFLOPS_MAX, QUOTA_VRAM_MAX } from '../model/limits';
import { parseQuantity } from '../k8s/quantity';
import { checkLimitAtLeastRequest, oneOf } from '../model/rules';
import { EXPECTED_KEYWORD } from './common';
import { JsonSchema, toPlainSchema } from './crd';
import type { GPUStatus } from './gpu';
import type { GPUNodeSpec } from './gpu-node';
import type { GPUPoolSpec } from './gpu-pool';
import { type GPUResourceQuotaSpec, upstreamOnlyQuotaField } from './gpu-resource-quota';
import { isKindName, KIND_NAMES, KINDS, KindName } from './kinds';
import type { TensorFusionWorkloadSpec } from './tensor-fusion-workload';
import { RETIRED_PROFILE_FIELDS, WorkloadProfileSpec } from './workload-profile';
import { isDnsLabel, isDnsSubdomain } from '../k8s/names';
import { autoScalingIssues } from './autoscaling-settings';

const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, strictTypes: false });
addFormats(ajv, ['date-time', 'int32', 'int64']);
for (const keyword of [
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-map-type',
  'x-kubernetes-list-type',
  EXPECTED_KEYWORD,
]) {
  ajv.addKeyword(keyword);
}

/**
 * Kubernetes prunes unknown fields silently; we reject them instead, so every object node gets
 * `additionalProperties: false` here (never in the CRD, which must stay structural).
 */
function closed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closed);
  if (node === null || typeof node !== 'object') return node;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === 'enum' || k === 'default' ? v : closed(v);
  const isOpenObject = out.type === 'object' && out.additionalProperties === undefined;
  if (isOpenObject && !out['x-kubernetes-preserve-unknown-fields']) out.additionalProperties = false;
  return out;
}

type Part = 'spec' | 'status';
interface Compiled {
  readonly schema: JsonSchema;
  readonly validate: ValidateFunction;
}
const compiled = new Map<string, Compiled>();

/** Compiles each kind's spec/status schema once, on first use. */
function compiledFor(kind: KindName, part: Part): Compiled | undefined {
  const key = `${kind}.${part}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  const source = KINDS[kind][part];
  if (!source) return undefined;
  const schema = closed(toPlainSchema(source, true)) as JsonSchema;
  const entry = { schema, validate: ajv.compile(schema) };
  compiled.set(key, entry);
  return entry;
}

/** Words for what a schema node allows, used as the `expected` part of a message. */
export function describeSchema(s: JsonSchema): string {
  if (typeof s[EXPECTED_KEYWORD] === 'string') return s[EXPECTED_KEYWORD] as string;
  if (Array.isArray(s.enum)) return oneOf(s.enum as string[]);
  const min = s.minimum as number | undefined;
  const max = s.maximum as number | undefined;
  switch (s.type) {
    case 'integer':
      if (min !== undefined && max !== undefined) return `an integer from ${min} to ${max}`;
      if (min === 0) return 'a non-negative integer';
      return min !== undefined ? `an integer of at least ${min}` : 'an integer';
    case 'boolean':
      return 'true or false';
    case 'string': {
      if (s.format === 'date-time') return 'an RFC 3339 date-time such as 2024-01-31T12:00:00Z';
      const parts = [s.minLength ? 'a non-empty string' : 'a string'];
      if (s.maxLength !== undefined) parts.push(`of at most ${s.maxLength as number} characters`);
      if (s.pattern) parts.push(`matching ${s.pattern as string}`);
      return parts.join(' ');
    }
    case 'array':
      return s.items ? `a list of ${plural(describeSchema(s.items as JsonSchema))}` : 'a list';
    case 'object':
      if (s.properties) return `an object with fields ${Object.keys(s.properties).join(', ')}`;
      if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        return `a map of names to ${plural(describeSchema(s.additionalProperties as JsonSchema))}`;
      }
      return 'an object';
    default:
      return 'a valid value';
  }
}

/** `an object with fields a, b` -> `objects with fields a, b`; leaves other phrases alone. */
function plural(phrase: string): string {
  const m = /^an? (string|integer|object|list)\b(.*)$/.exec(phrase);
  return m ? `${m[1]}s${m[2]}` : phrase;
}

/** Renders a path segment: `.name` for plain keys, `[0]` for list items, `["a/b"]` otherwise. */
function segment(key: string, parentIsArray: boolean): string {
  if (parentIsArray) return `[${key}]`;
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** Converts an Ajv instancePath (JSON pointer) to `spec.a.b[0].c`, walking `data` to spot arrays. */
function fieldPath(prefix: string, pointer: string, data: unknown): string {
  if (pointer === '') return prefix;
  let path = prefix;
  let node = data;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path += segment(key, Array.isArray(node));
    node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
  }
  return path;
}

/**
 * The message for a field that the schema does not know. A close known name becomes a
 * did-you-mean hint; otherwise the known names are listed.
 */
export function unknownFieldIssue(field: string, value: unknown, name: string, parentLabel: string, known: readonly string[]): FieldIssue {
  const guess = didYouMean(name, known);
  const expected =
    guess !== undefined
      ? `a known field of ${parentLabel} (did you mean ${guess}?)`
      : `a known field of ${parentLabel}: ${known.join(', ')}`;
  return fieldIssue(field, value, expected);
}

function ajvIssue(e: ErrorObject, prefix: string, root: unknown, part: Part, kind: KindName): FieldIssue {
  const parent = fieldPath(prefix, e.instancePath, root);
  const schema = e.parentSchema as JsonSchema;
  if (e.keyword === 'additionalProperties') {
    const name = (e.params as { additionalProperty: string }).additionalProperty;
    const field = parent + segment(name, false);
    const value = (e.data as Record<string, unknown>)[name];
    const replacement = part === 'spec' && e.instancePath === '' ? RETIRED[kind]?.[name] : undefined;
    if (replacement) {
      return fieldIssue(field, value, `${prefix}.${replacement} instead: ${name} is not a ${kind} field`);
    }
    const upstreamOnly = part === 'spec' ? UPSTREAM_ONLY[kind]?.(parent, name) : undefined;
    if (upstreamOnly) return fieldIssue(field, value, upstreamOnly);
    return unknownFieldIssue(field, value, name, parent, Object.keys((schema.properties ?? {}) as object));
  }
  if (e.keyword === 'required') {
    const name = (e.params as { missingProperty: string }).missingProperty;
    const child = (schema.properties as Record<string, JsonSchema>)[name];
    return fieldIssue(parent + segment(name, false), undefined, `${describeSchema(child)} (required in ${parent})`);
  }
  return fieldIssue(parent, e.data, describeSchema(schema));
}

function schemaIssues(kind: KindName, part: Part, value: unknown, prefix: string): FieldIssue[] {
  const entry = compiledFor(kind, part);
  if (!entry) return [];
  if (entry.validate(value)) return [];
  const seen = new Set<string>();
  const issues: FieldIssue[] = [];
  for (const e of entry.validate.errors ?? []) {
    // Errors inside the anyOf branches of a quantity repeat the anyOf error itself.
    if (e.schemaPath.includes('/anyOf/')) continue;
    const issue = ajvIssue(e, prefix, value, part, kind);
    if (seen.has(issue.field)) continue;
    seen.add(issue.field);
    issues.push(issue);
  }
  return issues;
}

const RETIRED: Partial<Record<KindName, Readonly<Record<string, string>>>> = {
  WorkloadProfile: RETIRED_PROFILE_FIELDS,
  TensorFusionWorkload: RETIRED_PROFILE_FIELDS,
};

/** Upstream fields a kind does not implement, refused with what to do instead (the parent is a field path). */
const UPSTREAM_ONLY: Partial<Record<KindName, (parent: string, name: string) => string | undefined>> = {
  GPUResourceQuota: upstreamOnlyQuotaField,
};

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const child = (v: unknown, key: string): unknown => (isObj(v) ? v[key] : undefined);

/**
 * TFLOPS and VRAM of a requests object and a limits object (under `parent`, named `requests` and
 * `limits`): each set amount valid (`bounds` when they are not a share's per GPU), and each limit at least its request.
 */
function amountRules(
  parent: unknown,
  prefix: string,
  requests: string,
  limits: string,
  bounds?: { per: string; tflops: number; vram: number },
): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const checks = {
    tflops: (field: string, input: unknown) => checkTflops(field, input, bounds?.per, bounds?.tflops),
    vram: (field: string, input: unknown) => checkVram(field, input, bounds?.per, bounds?.vram),
  };
  for (const [name, check] of Object.entries(checks)) {
    const reqField = `${prefix}.${requests}.${name}`;
    const limField = `${prefix}.${limits}.${name}`;
    const reqInput = child(child(parent, requests), name);
    const limInput = child(child(parent, limits), name);
    const req = reqInput === undefined ? checked(undefined) : check(reqField, reqInput);
    const lim = limInput === undefined ? checked(undefined) : check(limField, limInput);
    issues.push(...req.issues, ...lim.issues);
    const order = checkLimitAtLeastRequest(limField, lim.value, limInput, reqField, req.value, reqInput);
    if (order) issues.push(order);
  }
  return issues;
}

/** Requests and limits must be positive and each limit at least its request. */
function resourceRules(spec: unknown, prefix: string): FieldIssue[] {
  const resources = child(spec, 'resources');
  return isObj(resources) ? amountRules(resources, `${prefix}.resources`, 'requests', 'limits') : [];
}

/**
 * A quota's amounts valid as every TFLOPS and VRAM field, limits at least requests (in total and in
 * single), and at least one bound set.
 */
function quotaRules(spec: unknown, prefix: string): FieldIssue[] {
  const quota = (isObj(spec) ? spec : {}) as GPUResourceQuotaSpec;
  const { total, single } = quota;
  const amounts = (a: { tflops?: unknown; vram?: unknown } | undefined) => a?.tflops !== undefined || a?.vram !== undefined;
  const bounded =
    amounts(total?.requests) ||
    amounts(total?.limits) ||
    total?.maxWorkers !== undefined ||
    amounts(single?.maxRequests) ||
    amounts(single?.maxLimits) ||
    single?.maxGPUCount !== undefined;
  return [
    ...amountRules(total, `${prefix}.total`, 'requests', 'limits', {
      per: 'per namespace',
      tflops: QUOTA_TFLOPS_MAX,
      vram: QUOTA_VRAM_MAX,
    }),
    ...amountRules(single, `${prefix}.single`, 'maxRequests', 'maxLimits'),
    ...(bounded
      ? []
      : [
          fieldIssue(
            prefix,
            spec,
            `at least one bound: ${prefix}.total.requests, ${prefix}.total.limits (tflops, vram) or ${prefix}.total.maxWorkers for the namespace, ` +
              `or ${prefix}.single.maxRequests, ${prefix}.single.maxLimits (tflops, vram) or ${prefix}.single.maxGPUCount for each pod`,
          ),
        ]),
  ];
}

/** A pool's maxResources must not be below its minResources; per-model TFLOPS must be positive. */
function poolRules(spec: unknown, prefix: string): FieldIssue[] {
  const capacity = child(spec, 'capacityConfig');
  if (!isObj(capacity)) return [];
  const issues: FieldIssue[] = [];
  for (const name of ['tflops', 'vram', 'cpu', 'memory']) {
    const minInput = child(capacity.minResources, name);
    const maxInput = child(capacity.maxResources, name);
    const parse = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? parseQuantity(v) : undefined);
    const issue = checkLimitAtLeastRequest(
      `${prefix}.capacityConfig.maxResources.${name}`,
      parse(maxInput),
      maxInput,
      `${prefix}.capacityConfig.minResources.${name}`,
      parse(minInput),
      minInput,
    );
    if (issue) issues.push(issue);
  }
  const table = capacity.gpuTflops;
  if (isObj(table)) {
    for (const [model, tflops] of Object.entries(table)) {
      issues.push(...checkTflops(`${prefix}.capacityConfig.gpuTflops${segment(model, false)}`, tflops).issues);
    }
  }
  return issues;
}

/** Resource rules plus the autoscaling values a pattern cannot rule out (lib/api/autoscaling-settings.ts). */
const profileRules = (spec: unknown, prefix: string) => [...resourceRules(spec, prefix), ...autoScalingIssues(spec, prefix)];

const SEMANTIC: Partial<Record<KindName, (spec: unknown, prefix: string) => FieldIssue[]>> = {
  WorkloadProfile: profileRules,
  TensorFusionWorkload: profileRules,
  GPUPool: poolRules,
  GPUResourceQuota: quotaRules,
};

function withoutRepeats(first: FieldIssue[], more: FieldIssue[]): FieldIssue[] {
  const seen = new Set(first.map((i) => i.field));
  return [...first, ...more.filter((i) => !seen.has(i.field))];
}

/**
 * Problems with the spec of a `kind`, each naming its field under `fieldPrefix`. Empty when valid.
 * GPU has no spec: anything given is reported.
 * @example validateSpec('WorkloadProfile', { qos: 'urgent' }) // [{ field: 'spec.qos', ... }]
 */
export function validateSpec(kind: KindName, spec: unknown, fieldPrefix = 'spec'): FieldIssue[] {
  if (!KINDS[kind].spec) {
    return spec === undefined ? [] : [fieldIssue(fieldPrefix, spec, `nothing: ${kind} has only a status`)];
  }
  const issues = schemaIssues(kind, 'spec', spec, fieldPrefix);
  const semantic = SEMANTIC[kind];
  return semantic ? withoutRepeats(issues, semantic(spec, fieldPrefix)) : issues;
}

/** Problems with the status of a `kind` (what the controller writes). Empty when valid. */
export function validateStatus(kind: KindName, status: unknown, fieldPrefix = 'status'): FieldIssue[] {
  return schemaIssues(kind, 'status', status, fieldPrefix);
}

function metadataIssues(kind: KindName, metadata: unknown): FieldIssue[] {
  if (!isObj(metadata)) return [fieldIssue('metadata', metadata, 'an object with a name')];
  const issues: FieldIssue[] = [];
  const { name, namespace } = metadata;
  if (!isDnsSubdomain(name)) {
    issues.push(fieldIssue('metadata.name', name, 'a lowercase RFC 1123 name of at most 253 characters such as default-pool'));
  }
  if (KINDS[kind].scope === 'Cluster') {
    if (namespace !== undefined) issues.push(fieldIssue('metadata.namespace', namespace, `nothing: ${kind} is cluster-scoped`));
  } else if (namespace !== undefined && !isDnsLabel(namespace)) {
    issues.push(fieldIssue('metadata.namespace', namespace, 'a lowercase RFC 1123 label of at most 63 characters such as team-a'));
  }
  return issues;
}

/**
 * Problems with a whole tensor-fusion.ai/v1 object: apiVersion, kind, metadata (name; no namespace on
 * cluster-scoped kinds; namespaced kinds may omit it and take the namespace they are applied to),
 * unknown top-level fields, spec and status.
 */
export function validateObject(obj: unknown): FieldIssue[] {
  if (!isObj(obj)) return [fieldIssue('object', obj, `a ${API_VERSION} object`)];
  const issues: FieldIssue[] = [];
  if (obj.apiVersion !== API_VERSION) issues.push(fieldIssue('apiVersion', obj.apiVersion, API_VERSION));
  const kind = obj.kind;
  if (!isKindName(kind)) return [...issues, fieldIssue('kind', kind, oneOf(KIND_NAMES))];
  const info = KINDS[kind];
  const known = ['apiVersion', 'kind', 'metadata', ...(info.spec ? ['spec'] : []), 'status'];
  for (const [key, value] of Object.entries(obj)) {
    if (!known.includes(key)) issues.push(unknownFieldIssue(key, value, key, kind, known));
  }
  issues.push(...metadataIssues(kind, obj.metadata));
  if (info.spec) issues.push(...validateSpec(kind, obj.spec ?? {}));
  if (obj.status !== undefined) issues.push(...validateStatus(kind, obj.status));
  return issues;
}

/** Throws a ValidationError unless `spec` is a valid spec of its kind (`field` names it in messages). */
export type SpecAssertion<T> = (spec: unknown, field?: string) => asserts spec is T;

const specAssertion =
  (kind: KindName) =>
  (spec: unknown, field = 'spec'): void =>
    throwIfInvalid(validateSpec(kind, spec, field));

/** Throws a ValidationError unless `spec` is a valid WorkloadProfile spec. */
export const assertWorkloadProfileSpec: SpecAssertion<WorkloadProfileSpec> = specAssertion('WorkloadProfile');

/** Throws a ValidationError unless `spec` is a valid TensorFusionWorkload spec. */
export const assertTensorFusionWorkloadSpec: SpecAssertion<TensorFusionWorkloadSpec> = specAssertion('TensorFusionWorkload');

/** Throws a ValidationError unless `spec` is a valid GPUPool spec. */
export const assertGpuPoolSpec: SpecAssertion<GPUPoolSpec> = specAssertion('GPUPool');

/** Throws a ValidationError unless `spec` is a valid GPUNode spec. */
export const assertGpuNodeSpec: SpecAssertion<GPUNodeSpec> = specAssertion('GPUNode');

/** Throws a ValidationError unless `spec` is a valid GPUResourceQuota spec. */
export const assertGpuResourceQuotaSpec: SpecAssertion<GPUResourceQuotaSpec> = specAssertion('GPUResourceQuota');

/** Throws a ValidationError unless `status` is a valid GPU status. */
export function assertGpuStatus(status: unknown, field = 'status'): asserts status is GPUStatus {
  throwIfInvalid(validateStatus('GPU', status, field));
}

/** Throws a ValidationError unless `obj` is a valid tensor-fusion.ai/v1 object. */
export function assertObject(obj: unknown): void {
  throwIfInvalid(validateObject(obj));
}

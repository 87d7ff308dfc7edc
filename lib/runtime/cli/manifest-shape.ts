/**
 * The shape a manifest given to `kubectl tf plan` must have before anything reads it: a file can hold
 * anything, and the plan's code reads objects as the API server would have stored them. Each issue
 * names the field under the object, the value and what is allowed; the plan says them with the file
 * and the document, and exits 2.
 */
import { isKindName, validateSpec } from '../../api';
import { FieldIssue, fieldIssue, formatValue } from '../../model/errors';
import { GROUP } from '../../model/group';

/** The most pods one object, and all the manifests together, may create in a plan: each is planned as an object. */
export const MAX_PLAN_PODS = 100_000;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `field` is absent or a map of strings. */
function stringMap(field: string, v: unknown): FieldIssue[] {
  if (v === undefined) return [];
  if (!isObject(v)) return [fieldIssue(field, v, 'a map of strings')];
  return Object.entries(v)
    .filter(([, s]) => typeof s !== 'string')
    .map(([k, s]) => fieldIssue(`${field}[${JSON.stringify(k)}]`, s, 'a string'));
}

/** `field` is absent or an object. */
const objectOrAbsent = (field: string, v: unknown): FieldIssue[] =>
  v === undefined || isObject(v) ? [] : [fieldIssue(field, v, 'an object')];

function metadataIssues(field: string, m: unknown): FieldIssue[] {
  if (m === undefined) return [];
  if (!isObject(m)) return [fieldIssue(field, m, 'an object')];
  const strings = ['name', 'namespace', 'generateName']
    .filter((k) => m[k] !== undefined && typeof m[k] !== 'string')
    .map((k) => fieldIssue(`${field}.${k}`, m[k], 'a string'));
  return [...strings, ...stringMap(`${field}.labels`, m.labels), ...stringMap(`${field}.annotations`, m.annotations)];
}

function containerIssues(field: string, list: unknown, required: boolean): FieldIssue[] {
  if (list === undefined && !required) return [];
  if (!Array.isArray(list) || (required && list.length === 0))
    return [fieldIssue(field, list, `a list of containers${required ? ', at least one' : ''}`)];
  return list.flatMap((c, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(c)) return [fieldIssue(at, c, 'a container (an object with a name)')];
    if (typeof c.name !== 'string' || c.name === '') return [fieldIssue(`${at}.name`, c.name, 'a container name')];
    const r = c.resources;
    if (r === undefined) return [];
    if (!isObject(r)) return [fieldIssue(`${at}.resources`, r, 'an object')];
    return [...stringOrNumberMap(`${at}.resources.requests`, r.requests), ...stringOrNumberMap(`${at}.resources.limits`, r.limits)];
  });
}

function stringOrNumberMap(field: string, v: unknown): FieldIssue[] {
  if (v === undefined) return [];
  if (!isObject(v)) return [fieldIssue(field, v, 'a map of quantities')];
  return Object.entries(v)
    .filter(([, q]) => typeof q !== 'string' && typeof q !== 'number')
    .map(([k, q]) => fieldIssue(`${field}[${JSON.stringify(k)}]`, q, 'a quantity'));
}

function podSpecIssues(field: string, spec: unknown): FieldIssue[] {
  if (!isObject(spec)) return [fieldIssue(field, spec, 'a pod spec (an object with containers)')];
  const scheduler = spec.schedulerName !== undefined && typeof spec.schedulerName !== 'string';
  return [
    ...containerIssues(`${field}.containers`, spec.containers, true),
    ...containerIssues(`${field}.initContainers`, spec.initContainers, false),
    ...stringOrNumberMap(`${field}.overhead`, spec.overhead),
    ...(scheduler ? [fieldIssue(`${field}.schedulerName`, spec.schedulerName, 'a string')] : []),
  ];
}

/** A pod count field: absent (1) or a whole number from 0 to {@link MAX_PLAN_PODS}. */
function countIssues(field: string, v: unknown): FieldIssue[] {
  if (v === undefined || (Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_PLAN_PODS)) return [];
  return [fieldIssue(field, v, `a whole number of pods from 0 to ${MAX_PLAN_PODS}`)];
}

function templateIssues(field: string, t: unknown): FieldIssue[] {
  if (!isObject(t)) return [fieldIssue(field, t, 'a pod template (an object with metadata and spec)')];
  return [...metadataIssues(`${field}.metadata`, t.metadata), ...podSpecIssues(`${field}.spec`, t.spec)];
}

/** The kinds whose pods the plan places (lib/runtime/cli/workload-pods.ts). */
const POD_MAKERS = new Set(['Pod', 'Deployment', 'StatefulSet', 'ReplicaSet', 'ReplicationController', 'Job', 'CronJob']);

/** A pod-making kind's spec: its pod spec or template, and the field that counts its pods. */
function workloadIssues(kind: string, spec: Json): FieldIssue[] {
  switch (kind) {
    case 'Pod':
      return podSpecIssues('spec', spec);
    case 'Deployment':
    case 'StatefulSet':
    case 'ReplicaSet':
    case 'ReplicationController':
      return [...countIssues('spec.replicas', spec.replicas), ...templateIssues('spec.template', spec.template)];
    case 'Job':
      return [...countIssues('spec.parallelism', spec.parallelism), ...templateIssues('spec.template', spec.template)];
    case 'CronJob': {
      const job = spec.jobTemplate;
      if (!isObject(job) || !isObject(job.spec)) return [fieldIssue('spec.jobTemplate.spec', isObject(job) ? job.spec : job, 'a Job spec')];
      return [
        ...countIssues('spec.jobTemplate.spec.parallelism', job.spec.parallelism),
        ...templateIssues('spec.jobTemplate.spec.template', job.spec.template),
      ];
    }
    default:
      return [];
  }
}

/**
 * What is wrong with one object of a manifest (not a List: its items are objects each), in field
 * paths under the object; empty when the plan can read it. The tensor-fusion.ai kinds are checked
 * against their schema, as the API server would.
 */
export function manifestIssues(o: unknown): FieldIssue[] {
  if (!isObject(o)) {
    const expected = 'a Kubernetes object with a kind';
    return [{ field: '', value: o, expected, message: `got ${formatValue(o)}, expected ${expected}` }];
  }
  if (typeof o.kind !== 'string' || o.kind === '') return [fieldIssue('kind', o.kind, 'a kind, such as Deployment')];
  const meta = metadataIssues('metadata', o.metadata);
  const apiVersion =
    o.apiVersion !== undefined && typeof o.apiVersion !== 'string' ? [fieldIssue('apiVersion', o.apiVersion, 'a string')] : [];
  if (meta.length + apiVersion.length > 0) return [...apiVersion, ...meta];
  if (o.kind === 'Node') return [...objectOrAbsent('spec', o.spec), ...objectOrAbsent('status', o.status)];
  if (isKindName(o.kind) && (o.apiVersion === undefined || String(o.apiVersion).startsWith(`${GROUP}/`)))
    return validateSpec(o.kind, o.spec);
  if (!POD_MAKERS.has(o.kind)) return [];
  return isObject(o.spec) ? workloadIssues(o.kind, o.spec) : [fieldIssue('spec', o.spec, `the spec of a ${o.kind}`)];
}

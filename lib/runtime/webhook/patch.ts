/**
 * Builds the JSON patch that takes a pod to its admitted shape. Patches are explicit and minimal: only
 * what differs is written, so running the webhook again on an admitted pod (reinvocation) yields an
 * empty patch, and every map key goes through RFC 6901 escaping (`/` and `~` occur in label keys).
 */
import { escapePathComponent } from 'fast-json-patch';
import type { JsonPatchOp, K8sObject } from '../cluster';
import type { EnvVar } from './env';

/** What the webhook wants a pod to have; everything else is left alone. */
export interface PodMutation {
  readonly annotations?: Readonly<Record<string, string>>;
  readonly labels?: Readonly<Record<string, string>>;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly Record<string, unknown>[];
  /** Variables per container name; an existing variable of the same name is replaced. */
  readonly env?: ReadonlyMap<string, readonly EnvVar[]>;
  /** Init containers to have, matched by name and placed first. */
  readonly initContainers?: readonly Record<string, unknown>[];
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function setMap(ops: JsonPatchOp[], path: string, current: unknown, desired: Readonly<Record<string, string>> | undefined): void {
  if (!desired || Object.keys(desired).length === 0) return;
  if (!isObject(current)) {
    ops.push({ op: 'add', path, value: { ...desired } });
    return;
  }
  for (const [key, value] of Object.entries(desired)) {
    if (current[key] !== value) ops.push({ op: 'add', path: `${path}/${escapePathComponent(key)}`, value });
  }
}

function setEnv(ops: JsonPatchOp[], path: string, current: unknown, vars: readonly EnvVar[]): void {
  if (vars.length === 0) return;
  if (!Array.isArray(current)) {
    ops.push({ op: 'add', path, value: vars.map((v) => ({ ...v })) });
    return;
  }
  for (const v of vars) {
    const i = current.findIndex((e) => isObject(e) && e.name === v.name);
    if (i < 0) ops.push({ op: 'add', path: `${path}/-`, value: { ...v } });
    else if (!sameJson(current[i], v)) ops.push({ op: 'replace', path: `${path}/${i}`, value: { ...v } });
  }
}

function ensureItems(ops: JsonPatchOp[], path: string, current: unknown, items: readonly Json[] | undefined, same: (a: Json, b: Json) => boolean): void {
  if (!items || items.length === 0) return;
  if (!Array.isArray(current)) {
    ops.push({ op: 'add', path, value: items.map((t) => ({ ...t })) });
    return;
  }
  for (const item of items) {
    if (!current.some((c) => isObject(c) && same(c, item))) ops.push({ op: 'add', path: `${path}/-`, value: { ...item } });
  }
}

function ensureInitContainers(ops: JsonPatchOp[], current: unknown, wanted: readonly Json[] | undefined): void {
  if (!wanted || wanted.length === 0) return;
  if (!Array.isArray(current)) {
    ops.push({ op: 'add', path: '/spec/initContainers', value: wanted.map((c) => ({ ...c })) });
    return;
  }
  // Ours go first so that they run before the user's init containers, in the order given.
  wanted.forEach((c, order) => {
    const i = current.findIndex((e) => isObject(e) && e.name === c.name);
    if (i < 0) ops.push({ op: 'add', path: `/spec/initContainers/${order}`, value: { ...c } });
    else if (!sameJson(current[i], c)) ops.push({ op: 'replace', path: `/spec/initContainers/${i}`, value: { ...c } });
  });
}

/** The RFC 6902 operations that apply `m` to `pod`; empty when the pod already has it all. */
export function podPatch(pod: K8sObject, m: PodMutation): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  const meta = isObject(pod.metadata) ? pod.metadata : {};
  if (!isObject(pod.metadata)) ops.push({ op: 'add', path: '/metadata', value: {} });
  setMap(ops, '/metadata/annotations', meta.annotations, m.annotations);
  setMap(ops, '/metadata/labels', meta.labels, m.labels);
  const spec = isObject(pod.spec) ? pod.spec : {};
  if (!isObject(pod.spec) && (m.nodeSelector || m.tolerations || m.env || m.initContainers)) ops.push({ op: 'add', path: '/spec', value: {} });
  setMap(ops, '/spec/nodeSelector', spec.nodeSelector, m.nodeSelector);
  ensureItems(ops, '/spec/tolerations', spec.tolerations, m.tolerations, (a, b) =>
    a.key === b.key && (a.operator ?? 'Equal') === (b.operator ?? 'Equal') && a.value === b.value && a.effect === b.effect);
  const containers = Array.isArray(spec.containers) ? spec.containers : [];
  for (const [name, vars] of m.env ?? []) {
    const i = containers.findIndex((c) => isObject(c) && c.name === name);
    if (i >= 0) setEnv(ops, `/spec/containers/${i}/env`, (containers[i] as Json).env, vars);
  }
  ensureInitContainers(ops, spec.initContainers, m.initContainers);
  return ops;
}

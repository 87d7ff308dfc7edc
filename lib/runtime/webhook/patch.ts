/**
 * Builds the JSON patch that takes a pod to its admitted shape. Patches are explicit and minimal: only
 * what differs is written, so running the webhook again on an admitted pod (reinvocation) yields an
 * empty patch, and every map key goes through RFC 6901 escaping (`/` and `~` occur in label keys).
 * What the API server adds between two invocations (defaults such as `fieldRef.apiVersion: v1`, an
 * empty `value` dropped on the round trip) counts as no difference.
 */
import { escapePathComponent } from 'fast-json-patch';
import type { JsonPatchOp, K8sObject } from '../kube/cluster';
import type { EnvVar } from '../shared/pod-share/container-env';
import type { PodPriority } from './scheduling';

/** What the webhook wants a pod to have; everything else is left alone. */
export interface PodMutation {
  readonly annotations?: Readonly<Record<string, string>>;
  /** Annotation keys to remove when the pod has them (records copied from another pod). */
  readonly removeAnnotations?: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
  readonly schedulerName?: string;
  /**
   * Sets `spec.priorityClassName` with the `spec.priority` and `spec.preemptionPolicy` of that class.
   * The Priority admission plugin already derived both from the old class and is re-run after
   * webhooks: it refuses values that do not match the class, and when it has to change them the
   * API server reinvokes this webhook, a second review of every pod. Writing the class's own values
   * leaves it nothing to change.
   */
  readonly priority?: PodPriority;
  /**
   * Turns `spec.nodeName` into a required node affinity: a pod with a node name never reaches the
   * scheduler, so it would get no share; with the affinity the scheduler places it on that node.
   */
  readonly nodeNameToAffinity?: boolean;
  /** Variables per container name; every existing entry of the same name is replaced (duplicates too). */
  readonly env?: ReadonlyMap<string, readonly EnvVar[]>;
  /** Entries to remove, whatever their value, from the env of the containers in `env`. */
  readonly dropEnv?: (name: string) => boolean;
  /**
   * Init containers to have, matched by name and placed first. On one that is there already only the
   * image and our env entries are set, and the securityContext only when it has none: whatever another
   * webhook added to it stays.
   */
  readonly initContainers?: readonly { name: string; image?: string; env: readonly EnvVar[]; securityContext?: Readonly<Json> }[];
  /**
   * An extended resource the webhook owns: exactly the `holders` (app containers, by name) request and
   * limit `amount` of it; every other container, init containers included, has it removed.
   */
  readonly ownedResource?: { readonly name: string; readonly amount: string; readonly holders: readonly string[] };
  /**
   * A pod claim the webhook owns (DRA pools): `spec.resourceClaims` has `name` from `template`, and
   * exactly the `holders` (app containers, by name) list it once in `resources.claims`; every other
   * container, init containers included, has it removed.
   */
  readonly claim?: { readonly name: string; readonly template: string; readonly holders: readonly string[] };
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** True when `have` is `want` as the API server stores it. */
export function sameEnvVar(have: unknown, want: EnvVar): boolean {
  if (!isObject(have) || have.name !== want.name) return false;
  if ('value' in want) return (have.value ?? '') === want.value && have.valueFrom === undefined;
  const from = have.valueFrom;
  if (have.value || !isObject(from) || Object.keys(from).length !== 1 || !isObject(from.fieldRef)) return false;
  return from.fieldRef.fieldPath === want.valueFrom.fieldRef.fieldPath && (from.fieldRef.apiVersion ?? 'v1') === 'v1';
}

/**
 * The env list with `vars` in it: each variable takes the place of the first entry of its name (so a
 * user's `$(VAR)` reference after it still resolves), later entries of that name are dropped, and new
 * ones go at the end. Entries already equal to ours are kept as they are; entries `drop` names go.
 */
export function mergeEnv(current: readonly unknown[], vars: readonly EnvVar[], drop?: (name: string) => boolean): unknown[] {
  const want = new Map(vars.map((v) => [v.name, v]));
  const placed = new Set<string>();
  const out: unknown[] = [];
  for (const e of current) {
    const name = isObject(e) && typeof e.name === 'string' ? e.name : undefined;
    const ours = name === undefined ? undefined : want.get(name);
    if (!ours && name !== undefined && drop?.(name)) continue;
    if (!ours) out.push(e);
    else if (!placed.has(ours.name)) {
      placed.add(ours.name);
      out.push(sameEnvVar(e, ours) ? e : ours);
    }
  }
  for (const v of vars) if (!placed.has(v.name)) out.push(v);
  return out;
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

function setEnv(ops: JsonPatchOp[], path: string, current: unknown, vars: readonly EnvVar[], drop?: (name: string) => boolean): void {
  if (vars.length === 0) return;
  if (!Array.isArray(current)) {
    ops.push({ op: 'add', path, value: vars.map((v) => ({ ...v })) });
    return;
  }
  const merged = mergeEnv(current, vars, drop);
  const kept = current.every((e, i) => merged[i] === e);
  if (kept && merged.length === current.length) return;
  // Only additions: append them. Anything else (a value changed, a duplicate dropped) rewrites the list,
  // which no index shift can corrupt.
  if (kept) for (const v of merged.slice(current.length)) ops.push({ op: 'add', path: `${path}/-`, value: v });
  else ops.push({ op: 'replace', path, value: merged });
}

function ensureInitContainers(ops: JsonPatchOp[], current: unknown, wanted: PodMutation['initContainers']): void {
  if (!wanted || wanted.length === 0) return;
  const list = Array.isArray(current) ? current : [];
  const missing: Json[] = [];
  for (const c of wanted) {
    const i = list.findIndex((e) => isObject(e) && e.name === c.name);
    if (i < 0) {
      missing.push({
        name: c.name,
        ...(c.image !== undefined ? { image: c.image } : {}),
        env: c.env.map((v) => ({ ...v })),
        ...(c.securityContext ? { securityContext: c.securityContext } : {}),
      });
      continue;
    }
    // Field by field, on what we set only: the API server adds defaults (imagePullPolicy, ...) and
    // later webhooks their own fields, which a whole-container replace would drop.
    const have = list[i] as Json;
    const path = `/spec/initContainers/${i}`;
    if (c.image !== undefined && have.image !== c.image) ops.push({ op: 'add', path: `${path}/image`, value: c.image });
    setEnv(ops, `${path}/env`, have.env, c.env);
    if (c.securityContext && !isObject(have.securityContext))
      ops.push({ op: 'add', path: `${path}/securityContext`, value: c.securityContext });
  }
  if (missing.length === 0) return;
  // Ours go first so that they run before the user's init containers, in the order given.
  if (!Array.isArray(current)) ops.push({ op: 'add', path: '/spec/initContainers', value: missing });
  else missing.forEach((c, order) => ops.push({ op: 'add', path: `/spec/initContainers/${order}`, value: c }));
}

/** The pod's affinity with "on node `node`" added to every required node-selector term (terms are ORed). */
function pinnedAffinity(affinity: unknown, node: string): Json {
  const onNode = { key: 'metadata.name', operator: 'In', values: [node] };
  const a = isObject(affinity) ? affinity : {};
  const na = isObject(a.nodeAffinity) ? a.nodeAffinity : {};
  const required = isObject(na.requiredDuringSchedulingIgnoredDuringExecution) ? na.requiredDuringSchedulingIgnoredDuringExecution : {};
  const terms = Array.isArray(required.nodeSelectorTerms) && required.nodeSelectorTerms.length > 0 ? required.nodeSelectorTerms : [{}];
  const pinned = terms.map((t) => {
    const term = isObject(t) ? t : {};
    return { ...term, matchFields: [...(Array.isArray(term.matchFields) ? term.matchFields : []), onNode] };
  });
  return { ...a, nodeAffinity: { ...na, requiredDuringSchedulingIgnoredDuringExecution: { ...required, nodeSelectorTerms: pinned } } };
}

/** Sets (`amount`) or removes (undefined) the resource `name` in both requests and limits of one container. */
function setResource(ops: JsonPatchOp[], path: string, resources: unknown, name: string, amount: string | undefined): void {
  const have = isObject(resources) ? resources : undefined;
  if (amount !== undefined && !have)
    return void ops.push({ op: 'add', path, value: { requests: { [name]: amount }, limits: { [name]: amount } } });
  for (const side of ['requests', 'limits'] as const) {
    const map = have?.[side];
    if (amount !== undefined) setMap(ops, `${path}/${side}`, map, { [name]: amount });
    else if (isObject(map) && name in map) ops.push({ op: 'remove', path: `${path}/${side}/${escapePathComponent(name)}` });
  }
}

/** Applies `owned` to every app and init container (before init containers are inserted: indexes are the pod's). */
function setOwnedResource(ops: JsonPatchOp[], spec: Json, owned: NonNullable<PodMutation['ownedResource']>): void {
  for (const list of ['containers', 'initContainers'] as const) {
    const items = Array.isArray(spec[list]) ? (spec[list] as unknown[]) : [];
    items.forEach((c, i) => {
      if (!isObject(c)) return;
      const holds = list === 'containers' && typeof c.name === 'string' && owned.holders.includes(c.name);
      setResource(ops, `/spec/${list}/${i}/resources`, c.resources, owned.name, holds ? owned.amount : undefined);
    });
  }
}

/** Sets `spec.resourceClaims[name]` to come from the template, keeping every other claim of the pod. */
function setPodClaim(ops: JsonPatchOp[], spec: Json, claim: NonNullable<PodMutation['claim']>): void {
  const want = { name: claim.name, resourceClaimTemplateName: claim.template };
  const list = Array.isArray(spec.resourceClaims) ? spec.resourceClaims : undefined;
  if (!list) return void ops.push({ op: 'add', path: '/spec/resourceClaims', value: [want] });
  const i = list.findIndex((c) => isObject(c) && c.name === claim.name);
  const have = list[i] as Json | undefined;
  if (i < 0) ops.push({ op: 'add', path: '/spec/resourceClaims/-', value: want });
  else if (Object.keys(have!).length !== 2 || have!.resourceClaimTemplateName !== claim.template)
    ops.push({ op: 'replace', path: `/spec/resourceClaims/${i}`, value: want });
}

/** Gives exactly the holders one reference to the claim in `resources.claims` (before init containers are inserted). */
function setClaimReferences(ops: JsonPatchOp[], spec: Json, claim: NonNullable<PodMutation['claim']>): void {
  for (const list of ['containers', 'initContainers'] as const) {
    const items = Array.isArray(spec[list]) ? (spec[list] as unknown[]) : [];
    items.forEach((c, i) => {
      if (!isObject(c)) return;
      const holds = list === 'containers' && typeof c.name === 'string' && claim.holders.includes(c.name);
      const resources = isObject(c.resources) ? c.resources : undefined;
      const have = Array.isArray(resources?.claims) ? (resources.claims as unknown[]) : [];
      const others = have.filter((r) => !(isObject(r) && r.name === claim.name));
      const want = holds ? [...others, { name: claim.name }] : others;
      const path = `/spec/${list}/${i}/resources`;
      if (JSON.stringify(want) === JSON.stringify(have)) return;
      if (!resources) ops.push({ op: 'add', path, value: { claims: want } });
      else if (want.length === 0) ops.push({ op: 'remove', path: `${path}/claims` });
      else ops.push({ op: 'add', path: `${path}/claims`, value: want });
    });
  }
}

/** The RFC 6902 operations that apply `m` to `pod`; empty when the pod already has it all. */
export function podPatch(pod: K8sObject, m: PodMutation): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  const meta = isObject(pod.metadata) ? pod.metadata : {};
  if (!isObject(pod.metadata)) ops.push({ op: 'add', path: '/metadata', value: {} });
  const annotations = isObject(meta.annotations) ? meta.annotations : undefined;
  for (const key of m.removeAnnotations ?? []) {
    if (annotations && key in annotations && !(m.annotations && key in m.annotations)) {
      ops.push({ op: 'remove', path: `/metadata/annotations/${escapePathComponent(key)}` });
    }
  }
  setMap(ops, '/metadata/annotations', meta.annotations, m.annotations);
  setMap(ops, '/metadata/labels', meta.labels, m.labels);

  const touchesSpec =
    m.schedulerName !== undefined ||
    m.priority !== undefined ||
    m.env !== undefined ||
    m.initContainers !== undefined ||
    m.ownedResource !== undefined ||
    m.claim !== undefined;
  if (!isObject(pod.spec) && touchesSpec) ops.push({ op: 'add', path: '/spec', value: {} });
  const spec = isObject(pod.spec) ? pod.spec : {};
  if (m.schedulerName !== undefined && spec.schedulerName !== m.schedulerName)
    ops.push({ op: 'add', path: '/spec/schedulerName', value: m.schedulerName });
  if (m.priority) {
    const { className, value, preemptionPolicy } = m.priority;
    if (spec.priorityClassName !== className) ops.push({ op: 'add', path: '/spec/priorityClassName', value: className });
    if (spec.priority !== value) ops.push({ op: 'add', path: '/spec/priority', value });
    if (spec.preemptionPolicy !== preemptionPolicy) ops.push({ op: 'add', path: '/spec/preemptionPolicy', value: preemptionPolicy });
  }
  if (m.nodeNameToAffinity && typeof spec.nodeName === 'string' && spec.nodeName !== '') {
    ops.push({ op: 'add', path: '/spec/affinity', value: pinnedAffinity(spec.affinity, spec.nodeName) });
    ops.push({ op: 'remove', path: '/spec/nodeName' });
  }
  const containers = Array.isArray(spec.containers) ? spec.containers : [];
  for (const [name, vars] of m.env ?? []) {
    const i = containers.findIndex((c) => isObject(c) && c.name === name);
    if (i >= 0) setEnv(ops, `/spec/containers/${i}/env`, (containers[i] as Json).env, vars, m.dropEnv);
  }
  if (m.ownedResource) setOwnedResource(ops, spec, m.ownedResource);
  if (m.claim) {
    setPodClaim(ops, spec, m.claim);
    setClaimReferences(ops, spec, m.claim);
  }
  ensureInitContainers(ops, spec.initContainers, m.initContainers);
  return ops;
}

/**
 * Field ownership (metadata.managedFields) and server-side apply, in the simplified form our code
 * relies on, checked field for field against a real server (test/e2e/double-conformance.test.ts):
 * - maps are granular; lists are atomic, except metadata.ownerReferences (a map keyed by uid, items
 *   atomic) and metadata.finalizers (a set);
 * - an Update (POST/PUT/patch) owns what it added or changed and takes it from everyone else;
 * - an Apply owns exactly the fields of its configuration; changing a field another manager owns is
 *   a 409 Conflict unless forced (force takes ownership; applying the same value shares it);
 * - fields a manager applied before and leaves out now are removed unless another manager owns them.
 * Not modelled: schema-declared list types of CRDs and core kinds (pod containers, env...) and
 * defaulted fields, so core kinds' managedFields differ in detail from a real server's.
 */
import type { ResourceType } from '../../../lib/runtime/kube/resources';
import { HttpError } from './errors';
import type { Obj } from './store';

type Json = any;
/** A path as its JSON-encoded list of fieldsV1 elements (`f:spec`, `k:{"uid":"u"}`, `v:"x"`). */
type PathKey = string;

export interface ManagerEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  subresource?: string;
  apiVersion: string;
  time: string;
  set: Set<PathKey>;
}

/** Fields the server owns, never tracked (stripMeta). */
const IGNORED_META = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
]);

function isMap(v: unknown): v is Record<string, Json> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** How the list at `path` merges: keyed by a field, a set of scalars, or atomic. */
function listKind(path: string[]): { key: string } | 'set' | 'atomic' {
  const p = path.join('/');
  if (p === 'f:metadata/f:ownerReferences') return { key: 'uid' };
  if (p === 'f:metadata/f:finalizers') return 'set';
  return 'atomic';
}

function itemElement(kind: { key: string } | 'set', item: Json): string {
  return kind === 'set' ? `v:${JSON.stringify(item)}` : `k:${JSON.stringify({ [kind.key]: item?.[kind.key] })}`;
}

/** The part of an object field ownership is about: no server-owned fields; status or not. */
export function tracked(obj: Obj, rt: ResourceType, subresource?: string): Obj {
  const { apiVersion: _a, kind: _k, metadata, status, ...rest } = obj;
  const meta = Object.fromEntries(Object.entries(metadata ?? {}).filter(([k]) => !IGNORED_META.has(k)));
  if (subresource === 'status') return (status === undefined ? {} : { status }) as unknown as Obj;
  const out: Obj = { ...rest, metadata: meta };
  if (!rt.statusSubresource && status !== undefined) out.status = status;
  return out;
}

/**
 * Every path of a value. `all` (what an Update compares) includes map and list nodes; otherwise
 * (an applied configuration) only leaves: scalars, atomic lists, list items, empty maps.
 */
function collect(value: Json, path: string[], out: Set<PathKey>, all: boolean): void {
  const top = path.length === 0 || (path.length === 1 && path[0] === 'f:metadata');
  if (isMap(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== null && value[k] !== undefined);
    if (!top && (all || keys.length === 0)) out.add(JSON.stringify(path));
    for (const k of keys) collect(value[k], [...path, `f:${k}`], out, all);
    return;
  }
  const kind = Array.isArray(value) ? listKind(path) : 'atomic';
  if (kind === 'atomic') {
    out.add(JSON.stringify(path));
    return;
  }
  if (all) out.add(JSON.stringify(path));
  for (const item of value as Json[]) out.add(JSON.stringify([...path, itemElement(kind, item)]));
}

function pathsOf(value: Json, all: boolean): Set<PathKey> {
  const out = new Set<PathKey>();
  collect(value, [], out, all);
  return out;
}

/** The value at a path; undefined when absent. */
function getAt(obj: Json, path: string[]): Json {
  let cur = obj;
  for (let i = 0; i < path.length; i++) {
    const el = path[i];
    if (el.startsWith('f:')) {
      if (!isMap(cur)) return undefined;
      cur = cur[el.slice(2)];
    } else {
      if (!Array.isArray(cur)) return undefined;
      const kind = listKind(path.slice(0, i));
      if (kind === 'atomic') return undefined;
      cur = cur.find((item) => itemElement(kind, item) === el);
    }
  }
  return cur;
}

/** Removes the value at a path (a map field or a list item). */
function removeAt(obj: Json, path: string[]): void {
  const parent = getAt(obj, path.slice(0, -1));
  const el = path[path.length - 1];
  if (el.startsWith('f:') && isMap(parent)) delete parent[el.slice(2)];
  else if (Array.isArray(parent)) {
    const kind = listKind(path.slice(0, -1));
    if (kind === 'atomic') return;
    const i = parent.findIndex((item) => itemElement(kind, item) === el);
    if (i >= 0) parent.splice(i, 1);
  }
}

interface Comparison {
  added: Set<PathKey>;
  modified: Set<PathKey>;
  removed: Set<PathKey>;
}

/** What changed between two tracked objects: new or removed nodes, and leaves with a new value. */
function compare(before: Obj, after: Obj): Comparison {
  const a = pathsOf(before, true);
  const b = pathsOf(after, true);
  const added = new Set([...b].filter((p) => !a.has(p)));
  const removed = new Set([...a].filter((p) => !b.has(p)));
  const modified = new Set<PathKey>();
  for (const p of b) {
    if (!a.has(p)) continue;
    const path = JSON.parse(p) as string[];
    const x = getAt(before, path);
    const y = getAt(after, path);
    // Items of keyed lists are atomic: a changed item is a modified leaf.
    const item = !path[path.length - 1].startsWith('f:');
    const container = (v: Json) => !item && (isMap(v) || (Array.isArray(v) && listKind(path) !== 'atomic'));
    if (container(x) && container(y)) continue;
    if (JSON.stringify(x) !== JSON.stringify(y)) modified.add(p);
  }
  return { added, modified, removed };
}

/**
 * A merge of an applied configuration into the live object: maps deeply, keyed and set lists by
 * item (new items appended), atomic lists and scalars replaced.
 */
function mergeApplied(live: Json, config: Json, path: string[] = []): Json {
  if (isMap(config)) {
    const out: Record<string, Json> = isMap(live) ? { ...live } : {};
    for (const [k, v] of Object.entries(config)) {
      if (v === null) delete out[k];
      else out[k] = mergeApplied(out[k], v, [...path, `f:${k}`]);
    }
    return out;
  }
  const kind = Array.isArray(config) ? listKind(path) : 'atomic';
  if (kind === 'atomic' || !Array.isArray(live)) return config;
  const out = [...live];
  for (const item of config as Json[]) {
    const i = out.findIndex((x) => itemElement(kind, x) === itemElement(kind, item));
    if (i >= 0) out[i] = item;
    else out.push(item);
  }
  return out;
}

// ---- managedFields <-> entries ------------------------------------------------------------------

function setFromFields(fields: Json, path: string[] = [], out = new Set<PathKey>()): Set<PathKey> {
  for (const [k, v] of Object.entries(fields ?? {})) {
    if (k === '.') continue;
    const p = [...path, k];
    const children = Object.keys(v as object);
    if (children.length === 0 || children.includes('.')) out.add(JSON.stringify(p));
    setFromFields(v, p, out);
  }
  return out;
}

function fieldsFromSet(set: Set<PathKey>): Json {
  const root: Json = {};
  const members = new Set<Json>();
  for (const key of set) {
    let node = root;
    for (const el of JSON.parse(key) as string[]) node = node[el] ??= {};
    members.add(node);
  }
  const render = (node: Json): Json => {
    const keys = Object.keys(node).sort();
    const out: Json = members.has(node) && keys.length ? { '.': {} } : {};
    for (const k of keys) out[k] = render(node[k]);
    return out;
  };
  return render(root);
}

export function readEntries(obj: Obj | undefined): ManagerEntry[] {
  return ((obj?.metadata.managedFields ?? []) as Json[]).map((m) => ({
    manager: m.manager,
    operation: m.operation,
    subresource: m.subresource,
    apiVersion: m.apiVersion,
    time: m.time,
    set: setFromFields(m.fieldsV1),
  }));
}

/** managedFields as the real server writes them: empty sets dropped, sorted (sortEncodedManagedFields). */
export function writeEntries(entries: ManagerEntry[]): Json[] {
  return entries
    .filter((e) => e.set.size > 0)
    .sort(
      (p, q) =>
        cmp(p.operation, q.operation) || cmp(p.time, q.time) || cmp(p.manager, q.manager) || cmp(p.subresource ?? '', q.subresource ?? ''),
    )
    .map((e) => ({
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
      time: e.time,
      fieldsType: 'FieldsV1',
      fieldsV1: fieldsFromSet(e.set),
      ...(e.subresource ? { subresource: e.subresource } : {}),
    }));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function sameIdentity(e: ManagerEntry, manager: string, operation: string, subresource?: string): boolean {
  return e.manager === manager && e.operation === operation && (e.subresource ?? '') === (subresource ?? '');
}

function without(set: Set<PathKey>, ...drop: Set<PathKey>[]): Set<PathKey> {
  return new Set([...set].filter((p) => !drop.some((d) => d.has(p))));
}

// ---- operations ---------------------------------------------------------------------------------

export interface WriteContext {
  rt: ResourceType;
  manager: string;
  subresource?: string;
  apiVersion: string;
}

/** managedFields after an Update (create, PUT or a non-apply patch) from `prev` to `next`. */
export function updateManagedFields(ctx: WriteContext, prev: Obj | undefined, next: Obj): Json[] {
  const c = compare(prev ? tracked(prev, ctx.rt, ctx.subresource) : ({} as Obj), tracked(next, ctx.rt, ctx.subresource));
  const entries = readEntries(prev);
  let mine = entries.find((e) => sameIdentity(e, ctx.manager, 'Update', ctx.subresource));
  for (const e of entries) if (e !== mine) e.set = without(e.set, c.modified, c.added, c.removed);
  const gained = new Set([...c.modified, ...c.added]);
  if (!mine && gained.size) {
    mine = {
      manager: ctx.manager,
      operation: 'Update',
      subresource: ctx.subresource,
      apiVersion: ctx.apiVersion,
      time: now(),
      set: new Set(),
    };
    entries.push(mine);
  }
  if (mine) {
    const set = without(new Set([...mine.set, ...gained]), c.removed);
    if (gained.size || set.size !== mine.set.size) mine.time = now();
    mine.set = set;
    mine.apiVersion = ctx.apiVersion;
  }
  return writeEntries(entries);
}

function describeManager(e: ManagerEntry): string {
  let s = JSON.stringify(e.manager);
  if (e.subresource) s += ` with subresource ${JSON.stringify(e.subresource)}`;
  return e.operation === 'Update' ? `${s} using ${e.apiVersion}` : s;
}

/** `.spec.replicas`, `.metadata.ownerReferences[uid="u"]`, `.metadata.finalizers[="x"]` */
function pathString(key: PathKey): string {
  return (JSON.parse(key) as string[])
    .map((el) => {
      if (el.startsWith('f:')) return `.${el.slice(2)}`;
      if (el.startsWith('v:')) return `[=${el.slice(2)}]`;
      const k = JSON.parse(el.slice(2)) as Record<string, unknown>;
      return `[${Object.entries(k)
        .map(([n, v]) => `${n}=${JSON.stringify(v)}`)
        .join(',')}]`;
    })
    .join('');
}

/** 409 in the real server's words (apply's NewConflictError). */
function conflictError(conflicts: Array<{ entry: ManagerEntry; paths: PathKey[] }>): HttpError {
  const all = conflicts.flatMap((c) => c.paths.map((p) => ({ who: describeManager(c.entry), field: pathString(p) })));
  // One conflict on one line; more grouped by manager, one per line.
  const message =
    all.length === 1
      ? `Apply failed with 1 conflict: conflict with ${all[0].who}: ${all[0].field}`
      : `Apply failed with ${all.length} conflicts: ${conflicts.map((c) => [`conflicts with ${describeManager(c.entry)}:`, ...c.paths.map((p) => `- ${pathString(p)}`)].join('\n')).join('\n')}`;
  return new HttpError(409, 'Conflict', message, {
    causes: all.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${c.who}`, field: c.field })),
  });
}

/**
 * Server-side apply of `config` by `ctx.manager` onto `live` (undefined: a create). Returns the
 * object with its new managedFields; throws the 409 Conflict when another manager owns a field the
 * configuration changes and `force` is false.
 */
export function apply(ctx: WriteContext, live: Obj | undefined, config: Obj, force: boolean): Obj {
  const base: Obj = live ? structuredClone(live) : ({ metadata: {} } as Obj);
  const cfg = tracked(config, ctx.rt, ctx.subresource);
  const merged = mergeApplied(base, cfg) as Obj;
  const entries = readEntries(live);
  const mine = entries.find((e) => sameIdentity(e, ctx.manager, 'Apply', ctx.subresource));
  const others = entries.filter((e) => e !== mine);
  const applied = pathsOf(cfg, false);
  const ownedByOthers = new Set(others.flatMap((e) => [...e.set]));
  // Fields this manager applied before and leaves out now go, unless someone else owns them.
  const dropped = [...(mine?.set ?? [])].filter((p) => !applied.has(p) && !ownedByOthers.has(p));
  for (const p of dropped) pruneAt(merged, JSON.parse(p) as string[], new Set([...applied, ...ownedByOthers]));
  const c = compare(live ? tracked(live, ctx.rt, ctx.subresource) : ({} as Obj), tracked(merged, ctx.rt, ctx.subresource));
  const changed = new Set([...c.modified, ...c.added]);
  const conflicts = others
    .map((entry) => ({ entry, paths: [...entry.set].filter((p) => changed.has(p)).sort(byPath) }))
    .filter((x) => x.paths.length > 0)
    .sort((x, y) => cmp(JSON.stringify([x.entry.manager, x.entry.operation]), JSON.stringify([y.entry.manager, y.entry.operation])));
  if (conflicts.length && !force) throw conflictError(conflicts);
  for (const e of others) e.set = without(e.set, changed, c.removed);
  const next: ManagerEntry = {
    manager: ctx.manager,
    operation: 'Apply',
    subresource: ctx.subresource,
    apiVersion: ctx.apiVersion,
    time: now(),
    set: applied,
  };
  merged.metadata.managedFields = writeEntries([...others, next]);
  return merged;
}

function byPath(a: PathKey, b: PathKey): number {
  return cmp(pathString(a), pathString(b));
}

/** Removes a path, then the maps it leaves empty that nobody owns (as the real server prunes). */
function pruneAt(obj: Obj, path: string[], owned: Set<PathKey>): void {
  removeAt(obj, path);
  for (let n = path.length - 1; n > 1 || (n === 1 && path[0] !== 'f:metadata'); n--) {
    const parent = path.slice(0, n);
    const v = getAt(obj, parent);
    const empty = (isMap(v) && Object.keys(v).length === 0) || (Array.isArray(v) && v.length === 0);
    if (!empty || owned.has(JSON.stringify(parent))) return;
    removeAt(obj, parent);
  }
}

/**
 * An in-process HTTP double of the Kubernetes API server on 127.0.0.1 (random port), faithful in the
 * parts controllers depend on: list/watch framing (newline-delimited JSON, initial events, bookmarks,
 * timeoutSeconds), resourceVersion semantics, 409 conflicts, 410 Gone (as a status or in-stream),
 * the status subresource, JSON/merge/apply patch content types, finalizers, Leases. Fault injection
 * hooks let tests drop, stall or expire watches, answer 429/500, and restart with history compaction.
 * No kube-apiserver can be installed on this machine, hence this double (see ts-controller.md §6).
 */
import * as http from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { applyPatch, deepClone } from 'fast-json-patch';
import { parse as parseYaml } from 'yaml';
import { RESOURCES, ResourceType, apiVersionOf } from '../../../lib/runtime/resources';
import { compileFieldSelector, compileLabelSelector } from './selectors';
import { Change, Obj, Store } from './store';

export interface FaultRule {
  method?: string;
  /** Substring or pattern the request path (without query) must match. */
  path?: string | RegExp;
  /** Only watch requests (true) or only non-watch requests (false). */
  watch?: boolean;
  /** Only requests whose User-Agent contains this (to partition one client). */
  userAgent?: string;
  status: number;
  retryAfterSeconds?: number;
  /** How many matching requests fail. @default 1 */
  times?: number;
}

export interface RequestRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  userAgent: string;
  status: number;
  watch: boolean;
}

export interface ApiServerDoubleOptions {
  /** Extra resource types beyond lib/runtime/resources. */
  resources?: ResourceType[];
  /** Interval of BOOKMARK events on watches that asked for them. @default 1000 */
  bookmarkIntervalMs?: number;
  /** History entries kept before older resourceVersions become 410 Gone. @default 10000 */
  historyLimit?: number;
  /** How a watch from a compacted resourceVersion fails: HTTP 410, or 200 then an ERROR event. @default 'status' */
  goneMode?: 'status' | 'stream';
}

interface Watcher {
  resource: string;
  res: http.ServerResponse;
  matches: (o: Obj) => boolean;
  stalled: boolean;
  close: () => void;
}

interface Route {
  rt: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

function statusBody(code: number, reason: string, message: string, details?: Record<string, unknown>): Obj {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code, ...(details ? { details } : {}) };
}

class HttpError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string, readonly details?: Record<string, unknown>) {
    super(message);
  }
}

/** RFC 7386 merge patch. */
function mergePatch(target: any, patch: any): any {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function specOf(o: Obj): string {
  const { metadata: _m, status: _s, ...rest } = o;
  return JSON.stringify(rest);
}

export class ApiServerDouble {
  readonly store: Store;
  /** Every request served, in order (for assertions about who wrote what). */
  readonly requests: RequestRecord[] = [];
  private readonly types = new Map<string, ResourceType>();
  private server?: http.Server;
  private readonly sockets = new Set<Socket>();
  private readonly watchers = new Set<Watcher>();
  private faults: Array<FaultRule & { remaining: number }> = [];
  private port = 0;
  private readonly opts: Required<Omit<ApiServerDoubleOptions, 'resources'>>;

  constructor(opts: ApiServerDoubleOptions = {}) {
    this.opts = { bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 1000, historyLimit: opts.historyLimit ?? 10_000, goneMode: opts.goneMode ?? 'status' };
    this.store = new Store(this.opts.historyLimit);
    for (const rt of [...Object.values(RESOURCES), ...(opts.resources ?? [])]) this.types.set(`${rt.group}/${rt.plural}`, rt);
    this.store.subscribe((c) => this.fanOut(c));
  }

  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = http.createServer((req, res) => this.handle(req, res));
    server.keepAliveTimeout = 90_000;
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  async stop(): Promise<void> {
    for (const w of [...this.watchers]) w.close();
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Simulates an API server restart: every connection drops, history is compacted (old RVs get 410). */
  async restart(opts: { compact?: boolean } = {}): Promise<void> {
    await this.stop();
    if (opts.compact ?? true) this.store.compact();
    await this.start();
  }

  // ---- fault injection -------------------------------------------------------------------------

  /** The next matching requests answer `status` (with Retry-After when given). */
  injectFault(rule: FaultRule): void {
    this.faults.push({ ...rule, remaining: rule.times ?? 1 });
  }

  clearFaults(): void {
    this.faults = [];
  }

  /** Ends open watches: cleanly (`end`) or by resetting the socket (`reset`). */
  dropWatches(resource?: string, how: 'end' | 'reset' = 'reset'): number {
    let n = 0;
    for (const w of [...this.watchers]) {
      if (resource && w.resource !== `${this.typeByPlural(resource).group}/${resource}`) continue;
      n++;
      if (how === 'end') w.close();
      else {
        this.watchers.delete(w);
        w.res.socket?.destroy();
      }
    }
    return n;
  }

  /** Open watches stay connected but receive nothing more (no events, no bookmarks). */
  stallWatches(resource?: string): number {
    let n = 0;
    for (const w of this.watchers) {
      if (resource && w.resource !== `${this.typeByPlural(resource).group}/${resource}`) continue;
      w.stalled = true;
      n++;
    }
    return n;
  }

  /** Sends an in-stream 410 ERROR event to open watches and ends them, after compacting history. */
  expireWatches(resource?: string): number {
    this.store.compact();
    let n = 0;
    for (const w of [...this.watchers]) {
      if (resource && w.resource !== `${this.typeByPlural(resource).group}/${resource}`) continue;
      this.writeEvent(w, 'ERROR', statusBody(410, 'Expired', 'too old resource version'));
      w.close();
      n++;
    }
    return n;
  }

  /** Number of open watch streams (for a resource plural, or all). */
  openWatches(resource?: string): number {
    return [...this.watchers].filter((w) => !resource || w.resource.endsWith(`/${resource}`)).length;
  }

  setGoneMode(mode: 'status' | 'stream'): void {
    this.opts.goneMode = mode;
  }

  // ---- direct store access for test setup ------------------------------------------------------

  /** Creates or replaces an object directly (as another client would), stamping server fields. */
  put(plural: string, obj: Obj): Obj {
    const rt = this.typeByPlural(plural);
    const key = this.keyFor(rt, obj.metadata.namespace, obj.metadata.name);
    const prev = this.store.get(this.resKey(rt), key);
    const next = this.stampNew(rt, { ...deepClone(obj), metadata: { ...deepClone(obj.metadata) } }, prev);
    return this.store.commit(this.resKey(rt), key, prev ? 'MODIFIED' : 'ADDED', next);
  }

  /** Removes an object directly (ignores finalizers). */
  remove(plural: string, name: string, namespace?: string): boolean {
    const rt = this.typeByPlural(plural);
    const key = this.keyFor(rt, namespace, name);
    const prev = this.store.get(this.resKey(rt), key);
    if (!prev) return false;
    this.store.commit(this.resKey(rt), key, 'DELETED', prev);
    return true;
  }

  getObject(plural: string, name: string, namespace?: string): Obj | undefined {
    const rt = this.typeByPlural(plural);
    return this.store.get(this.resKey(rt), this.keyFor(rt, namespace, name));
  }

  listObjects(plural: string): Obj[] {
    return this.store.all(this.resKey(this.typeByPlural(plural)));
  }

  // ---- HTTP ------------------------------------------------------------------------------------

  private typeByPlural(plural: string): ResourceType {
    for (const rt of this.types.values()) if (rt.plural === plural) return rt;
    throw new Error(`unknown resource ${plural}`);
  }

  private resKey(rt: ResourceType): string {
    return `${rt.group}/${rt.plural}`;
  }

  private keyFor(rt: ResourceType, namespace: string | undefined, name: string): string {
    return rt.namespaced ? `${namespace}/${name}` : name;
  }

  private route(path: string): Route | undefined {
    const seg = path.split('/').filter(Boolean).map(decodeURIComponent);
    let group: string;
    let rest: string[];
    if (seg[0] === 'api' && seg[1] === 'v1') {
      group = '';
      rest = seg.slice(2);
    } else if (seg[0] === 'apis' && seg.length >= 3) {
      group = seg[1];
      rest = seg.slice(3);
    } else return undefined;
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const rt = this.types.get(`${group}/${rest[0]}`);
    if (!rt || rest.length > 3) return undefined;
    return { rt, namespace, name: rest[1], subresource: rest[2] };
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const query = Object.fromEntries(url.searchParams.entries());
    const isWatch = query.watch === 'true' || query.watch === '1';
    const record: RequestRecord = {
      method: req.method ?? 'GET', path: url.pathname, query, userAgent: String(req.headers['user-agent'] ?? ''), status: 0, watch: isWatch,
    };
    this.requests.push(record);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const fault = this.takeFault(record);
        if (fault) {
          const headers: Record<string, string> = fault.retryAfterSeconds !== undefined ? { 'Retry-After': String(fault.retryAfterSeconds) } : {};
          throw Object.assign(new HttpError(fault.status, fault.status === 429 ? 'TooManyRequests' : 'InternalError', 'injected fault'), { headers });
        }
        const route = this.route(url.pathname);
        if (!route) throw new HttpError(404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
        const body = Buffer.concat(chunks).toString('utf8');
        if (isWatch && req.method === 'GET') return this.serveWatch(route, query, res, record);
        const out = this.dispatch(req.method ?? 'GET', route, query, body, String(req.headers['content-type'] ?? ''));
        this.send(res, record, out.code, out.body);
      } catch (err) {
        if (err instanceof HttpError) {
          const headers = (err as HttpError & { headers?: Record<string, string> }).headers ?? {};
          this.send(res, record, err.code, statusBody(err.code, err.reason, err.message, err.details), headers);
        } else {
          this.send(res, record, 500, statusBody(500, 'InternalError', String(err)));
        }
      }
    });
  }

  private takeFault(r: RequestRecord): FaultRule | undefined {
    const f = this.faults.find((rule) =>
      rule.remaining > 0 &&
      (!rule.method || rule.method === r.method) &&
      (rule.watch === undefined || rule.watch === r.watch) &&
      (!rule.userAgent || r.userAgent.includes(rule.userAgent)) &&
      (!rule.path || (typeof rule.path === 'string' ? r.path.includes(rule.path) : rule.path.test(r.path))));
    if (!f) return undefined;
    f.remaining--;
    return f;
  }

  private send(res: http.ServerResponse, record: RequestRecord, code: number, body: unknown, headers: Record<string, string> = {}): void {
    record.status = code;
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
    res.end(text);
  }

  private dispatch(method: string, route: Route, query: Record<string, string>, body: string, contentType: string): { code: number; body: unknown } {
    const { rt, namespace, name, subresource } = route;
    if (subresource === 'binding' && rt.plural === 'pods' && method === 'POST') {
      return { code: 201, body: this.bindPod(namespace as string, this.required(name), this.parseJson(body)) };
    }
    if (subresource && subresource !== 'status') throw new HttpError(404, 'NotFound', `subresource ${subresource} not supported`);
    if (subresource === 'status' && !rt.statusSubresource) throw new HttpError(404, 'NotFound', `${rt.plural} has no status subresource`);
    if (rt.namespaced && name !== undefined && !namespace) throw new HttpError(404, 'NotFound', 'namespace required');
    switch (method) {
      case 'GET':
        return name === undefined ? { code: 200, body: this.list(rt, namespace, query) } : { code: 200, body: this.read(rt, namespace, name) };
      case 'POST':
        if (name !== undefined) throw new HttpError(405, 'MethodNotAllowed', 'POST to an object');
        return { code: 201, body: this.create(rt, namespace, this.parseJson(body), query) };
      case 'PUT':
        return { code: 200, body: this.update(rt, namespace, this.required(name), this.parseJson(body), subresource, query) };
      case 'PATCH':
        return this.patch(rt, namespace, this.required(name), body, contentType.split(';')[0].trim(), subresource, query);
      case 'DELETE':
        return { code: 200, body: this.delete(rt, namespace, this.required(name)) };
      default:
        throw new HttpError(405, 'MethodNotAllowed', method);
    }
  }

  private required(name: string | undefined): string {
    if (name === undefined) throw new HttpError(405, 'MethodNotAllowed', 'collection writes are not supported');
    return name;
  }

  private parseJson(body: string): Obj {
    try {
      const o = JSON.parse(body);
      if (!o || typeof o !== 'object' || !o.metadata) throw new Error('no metadata');
      return o;
    } catch (err) {
      throw new HttpError(400, 'BadRequest', `invalid object: ${(err as Error).message}`);
    }
  }

  private notFound(rt: ResourceType, name: string): HttpError {
    return new HttpError(404, 'NotFound', `${rt.plural} "${name}" not found`, { name, kind: rt.plural, group: rt.group });
  }

  private read(rt: ResourceType, namespace: string | undefined, name: string): Obj {
    const o = this.store.get(this.resKey(rt), this.keyFor(rt, namespace, name));
    if (!o) throw this.notFound(rt, name);
    return o;
  }

  private list(rt: ResourceType, namespace: string | undefined, query: Record<string, string>): Obj {
    const labels = compileLabelSelector(query.labelSelector);
    const fields = compileFieldSelector(query.fieldSelector);
    let items = this.store.all(this.resKey(rt)).filter((o) =>
      (!namespace || o.metadata.namespace === namespace) && labels(o.metadata.labels) && fields(o));
    const limit = Number(query.limit) || 0;
    let cont: string | undefined;
    if (query.continue) {
      const start = Buffer.from(query.continue, 'base64').toString('utf8');
      items = items.filter((o) => this.keyFor(rt, o.metadata.namespace, o.metadata.name) > start);
    }
    if (limit > 0 && items.length > limit) {
      items = items.slice(0, limit);
      const last = items[items.length - 1];
      cont = Buffer.from(this.keyFor(rt, last.metadata.namespace, last.metadata.name)).toString('base64');
    }
    // Like the real server, list items carry no kind/apiVersion.
    const stripped = items.map(({ kind: _k, apiVersion: _a, ...o }) => o);
    return {
      kind: `${rt.kind}List`, apiVersion: apiVersionOf(rt),
      metadata: { resourceVersion: String(this.store.rv), ...(cont ? { continue: cont } : {}) },
      items: stripped,
    };
  }

  private stampNew(rt: ResourceType, obj: Obj, prev?: Obj, manager = 'test', operation = 'Update'): Obj {
    obj.apiVersion = apiVersionOf(rt);
    obj.kind = rt.kind;
    const meta = obj.metadata;
    meta.uid = prev?.metadata.uid ?? meta.uid ?? randomUUID();
    meta.creationTimestamp = prev?.metadata.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    meta.generation = prev ? (specOf(prev) !== specOf(obj) ? (prev.metadata.generation ?? 1) + 1 : prev.metadata.generation) : 1;
    // Real servers keep managedFields on every object; controllers must strip them before caching.
    meta.managedFields = [{ manager, operation, apiVersion: obj.apiVersion, time: new Date().toISOString(), fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': {} } }];
    return obj;
  }

  private create(rt: ResourceType, namespace: string | undefined, obj: Obj, query: Record<string, string>): Obj {
    const meta = obj.metadata;
    if (rt.namespaced) {
      if (meta.namespace && namespace && meta.namespace !== namespace) {
        throw new HttpError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
      }
      meta.namespace = namespace ?? meta.namespace;
      if (!meta.namespace) throw new HttpError(400, 'BadRequest', 'namespace required');
    } else delete meta.namespace;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomUUID().slice(0, 5)}`;
    if (!meta.name) throw new HttpError(422, 'Invalid', 'metadata.name: Required value');
    const key = this.keyFor(rt, meta.namespace, meta.name);
    if (this.store.get(this.resKey(rt), key)) {
      throw new HttpError(409, 'AlreadyExists', `${rt.plural} "${meta.name}" already exists`, { name: meta.name, kind: rt.plural });
    }
    delete meta.resourceVersion;
    if (rt.statusSubresource && rt.custom) delete obj.status;
    return this.store.commit(this.resKey(rt), key, 'ADDED', this.stampNew(rt, obj, undefined, query.fieldManager, 'Update'));
  }

  /** Applies the subresource rules: main writes keep the old status; /status writes keep everything else. */
  private merged(rt: ResourceType, prev: Obj, next: Obj, subresource: string | undefined): Obj {
    if (subresource === 'status') return { ...deepClone(prev), status: next.status, metadata: { ...deepClone(prev.metadata) } };
    const out: Obj = { ...next, metadata: { ...next.metadata, name: prev.metadata.name, namespace: prev.metadata.namespace } };
    if (rt.statusSubresource) {
      if (prev.status === undefined) delete out.status;
      else out.status = prev.status;
    }
    // deletionTimestamp cannot be set or cleared by clients.
    if (prev.metadata.deletionTimestamp) out.metadata.deletionTimestamp = prev.metadata.deletionTimestamp;
    else delete out.metadata.deletionTimestamp;
    return out;
  }

  private conflict(rt: ResourceType, name: string): HttpError {
    return new HttpError(409, 'Conflict',
      `Operation cannot be fulfilled on ${rt.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      { name, kind: rt.plural });
  }

  /** Stores an update; removes the object when a deletion is pending and the finalizers are gone. */
  private commitUpdate(rt: ResourceType, prev: Obj, next: Obj, manager?: string, operation = 'Update'): Obj {
    const key = this.keyFor(rt, prev.metadata.namespace, prev.metadata.name);
    const stamped = this.stampNew(rt, next, prev, manager, operation);
    if (stamped.metadata.deletionTimestamp && !(stamped.metadata.finalizers?.length)) {
      return this.store.commit(this.resKey(rt), key, 'DELETED', stamped);
    }
    if (JSON.stringify({ ...stamped, metadata: { ...stamped.metadata, managedFields: undefined, resourceVersion: undefined } }) ===
      JSON.stringify({ ...prev, metadata: { ...prev.metadata, managedFields: undefined, resourceVersion: undefined } })) {
      return prev; // no-op writes do not bump the resourceVersion, as on a real server
    }
    return this.store.commit(this.resKey(rt), key, 'MODIFIED', stamped);
  }

  /**
   * POST pods/<name>/binding, as BindingREST does: sets spec.nodeName, merges the Binding's
   * annotations and the PodScheduled condition in one update; refuses a wrong uid, a bound or a
   * terminating pod with the real server's messages.
   */
  private bindPod(namespace: string, name: string, binding: Obj): Obj {
    const rt = RESOURCES.pods;
    const prev = this.read(rt, namespace, name);
    const uid = binding.metadata?.uid;
    if (uid && uid !== prev.metadata.uid) {
      throw new HttpError(409, 'Conflict', `Operation cannot be fulfilled on pods "${name}": StorageError: invalid object, Code: 4, Key: /registry/pods/${namespace}/${name}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${uid}, UID in object meta: ${prev.metadata.uid}`);
    }
    const refuse = (why: string) => new HttpError(409, 'Conflict', `Operation cannot be fulfilled on pods/binding "${name}": ${why}`);
    if (prev.metadata.deletionTimestamp) throw refuse(`pod ${name} is being deleted, cannot be assigned to a host`);
    if (prev.spec?.nodeName) throw refuse(`pod ${name} is already assigned to node "${prev.spec.nodeName}"`);
    const next = deepClone(prev);
    next.spec.nodeName = binding.target?.name;
    if (binding.metadata?.annotations) next.metadata.annotations = { ...next.metadata.annotations, ...binding.metadata.annotations };
    const conditions = (next.status?.conditions ?? []).filter((c: { type: string }) => c.type !== 'PodScheduled');
    next.status = { ...next.status, conditions: [...conditions, { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: new Date().toISOString() }] };
    this.commitUpdate(rt, prev, next);
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  }

  private update(rt: ResourceType, namespace: string | undefined, name: string, obj: Obj, subresource: string | undefined, query: Record<string, string>): Obj {
    if (obj.metadata.name && obj.metadata.name !== name) throw new HttpError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
    const prev = this.read(rt, namespace, name);
    const rv = obj.metadata.resourceVersion;
    if (!rv && rt.custom) throw new HttpError(422, 'Invalid', 'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');
    if (rv && rv !== prev.metadata.resourceVersion) throw this.conflict(rt, name);
    return this.commitUpdate(rt, prev, this.merged(rt, prev, obj, subresource), query.fieldManager);
  }

  private patch(rt: ResourceType, namespace: string | undefined, name: string, body: string, contentType: string,
    subresource: string | undefined, query: Record<string, string>): { code: number; body: unknown } {
    const key = this.keyFor(rt, namespace, name);
    const prev = this.store.get(this.resKey(rt), key);
    if (contentType === 'application/apply-patch+yaml') {
      if (!query.fieldManager) throw new HttpError(400, 'BadRequest', 'fieldManager is required for apply patch');
      let applied: Obj;
      try {
        applied = parseYaml(body);
      } catch (err) {
        throw new HttpError(400, 'BadRequest', `invalid apply body: ${(err as Error).message}`);
      }
      if (!prev) {
        if (subresource) throw this.notFound(rt, name);
        const created = this.create(rt, namespace, { ...applied, metadata: { ...applied.metadata, name } }, query);
        return { code: 201, body: created };
      }
      this.checkPatchPrecondition(rt, prev, applied);
      const next = mergePatch(deepClone(prev), { ...applied, metadata: { ...applied.metadata, resourceVersion: undefined } });
      return { code: 200, body: this.commitUpdate(rt, prev, this.merged(rt, prev, next, subresource), query.fieldManager, 'Apply') };
    }
    if (!prev) throw this.notFound(rt, name);
    let next: Obj;
    if (contentType === 'application/json-patch+json') {
      let ops: unknown;
      try {
        ops = JSON.parse(body);
      } catch {
        throw new HttpError(400, 'BadRequest', 'invalid JSON patch');
      }
      try {
        next = applyPatch(deepClone(prev), ops as never, true, false).newDocument as Obj;
      } catch (err) {
        const e = err as { name?: string; message: string };
        throw new HttpError(422, 'Invalid', `the server rejected our request due to an error in our request: ${e.name === 'TEST_OPERATION_FAILED' ? 'test operation failed' : e.message.split('\n')[0]}`);
      }
      if (next.metadata.resourceVersion !== prev.metadata.resourceVersion) this.checkPatchPrecondition(rt, prev, next);
    } else if (contentType === 'application/merge-patch+json') {
      let p: Obj;
      try {
        p = JSON.parse(body);
      } catch {
        throw new HttpError(400, 'BadRequest', 'invalid merge patch');
      }
      this.checkPatchPrecondition(rt, prev, p);
      next = mergePatch(deepClone(prev), p);
    } else if (contentType === 'application/strategic-merge-patch+json') {
      throw new HttpError(415, 'UnsupportedMediaType', 'strategic merge patch is not supported by this double');
    } else {
      throw new HttpError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got "${contentType}")`);
    }
    return { code: 200, body: this.commitUpdate(rt, prev, this.merged(rt, prev, next, subresource), query.fieldManager, 'Update') };
  }

  private checkPatchPrecondition(rt: ResourceType, prev: Obj, patch: Obj | undefined): void {
    const rv = patch?.metadata?.resourceVersion;
    if (rv && rv !== prev.metadata.resourceVersion) throw this.conflict(rt, prev.metadata.name);
  }

  private delete(rt: ResourceType, namespace: string | undefined, name: string): Obj {
    const prev = this.read(rt, namespace, name);
    const key = this.keyFor(rt, namespace, name);
    if (prev.metadata.finalizers?.length) {
      if (prev.metadata.deletionTimestamp) return prev;
      const next = deepClone(prev);
      next.metadata.deletionTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      next.metadata.deletionGracePeriodSeconds = 0;
      return this.store.commit(this.resKey(rt), key, 'MODIFIED', next);
    }
    this.store.commit(this.resKey(rt), key, 'DELETED', prev);
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: rt.plural } };
  }

  // ---- watch -----------------------------------------------------------------------------------

  private serveWatch(route: Route, query: Record<string, string>, res: http.ServerResponse, record: RequestRecord): void {
    const { rt, namespace } = route;
    const labels = compileLabelSelector(query.labelSelector);
    const fields = compileFieldSelector(query.fieldSelector);
    const matches = (o: Obj) => (!namespace || o.metadata.namespace === namespace) && labels(o.metadata.labels) && fields(o);
    const rvParam = query.resourceVersion;
    const resource = this.resKey(rt);
    let replay: Change[] | undefined = [];
    if (rvParam && rvParam !== '0') {
      const n = Number(rvParam);
      if (!Number.isInteger(n)) throw new HttpError(400, 'BadRequest', `invalid resourceVersion ${rvParam}`);
      replay = this.store.since(resource, n);
      if (!replay && this.opts.goneMode === 'status') {
        throw new HttpError(410, 'Expired', `too old resource version: ${n} (${this.store.compactedRv + 1})`);
      }
    }
    record.status = 200;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    let bookmarkTimer: NodeJS.Timeout | undefined;
    let timeoutTimer: NodeJS.Timeout | undefined;
    const watcher: Watcher = {
      resource, res, matches, stalled: false,
      close: () => {
        if (!this.watchers.delete(watcher)) return;
        clearInterval(bookmarkTimer);
        clearTimeout(timeoutTimer);
        res.end();
      },
    };
    res.on('close', () => {
      this.watchers.delete(watcher);
      clearInterval(bookmarkTimer);
      clearTimeout(timeoutTimer);
    });
    this.watchers.add(watcher);
    if (!replay) {
      this.writeEvent(watcher, 'ERROR', statusBody(410, 'Expired', `too old resource version: ${rvParam} (${this.store.compactedRv + 1})`));
      watcher.close();
      return;
    }
    if (!rvParam || rvParam === '0') {
      for (const o of this.store.all(resource)) if (matches(o)) this.writeEvent(watcher, 'ADDED', o);
    } else {
      for (const c of replay) this.deliver(watcher, c);
    }
    if (query.allowWatchBookmarks === 'true') {
      bookmarkTimer = setInterval(() => {
        if (!watcher.stalled) {
          this.writeEvent(watcher, 'BOOKMARK', { kind: rt.kind, apiVersion: apiVersionOf(rt), metadata: { resourceVersion: String(this.store.rv) } });
        }
      }, this.opts.bookmarkIntervalMs);
    }
    const timeout = Number(query.timeoutSeconds);
    if (timeout > 0) timeoutTimer = setTimeout(() => watcher.close(), timeout * 1000);
  }

  private writeEvent(w: Watcher, type: string, object: unknown): void {
    if (w.stalled) return;
    w.res.write(`${JSON.stringify({ type, object })}\n`);
  }

  /** Translates a change into what one watcher sees, honouring selector transitions. */
  private deliver(w: Watcher, c: Change): void {
    const now = c.type !== 'DELETED' && w.matches(c.object);
    const before = c.previous !== undefined && w.matches(c.previous);
    if (c.type === 'DELETED') {
      if (before || w.matches(c.object)) this.writeEvent(w, 'DELETED', c.object);
    } else if (now && before) this.writeEvent(w, 'MODIFIED', c.object);
    else if (now) this.writeEvent(w, 'ADDED', c.object);
    else if (before) this.writeEvent(w, 'DELETED', c.object);
  }

  private fanOut(c: Change): void {
    for (const w of this.watchers) if (w.resource === c.resource) this.deliver(w, c);
  }
}

/** Starts a double; remember to `await stop()` it. */
export async function startApiServer(opts: ApiServerDoubleOptions = {}): Promise<ApiServerDouble> {
  return new ApiServerDouble(opts).start();
}


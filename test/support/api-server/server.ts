/**
 * An in-process HTTP double of the Kubernetes API server on 127.0.0.1 (random port), faithful in the
 * parts controllers depend on: list/watch framing (newline-delimited JSON, initial events, bookmarks
 * about once a minute and ~2 s before timeoutSeconds, as the watch cache sends them), the REST
 * semantics of registry.ts (resourceVersion, conflicts, field ownership and server-side apply,
 * graceful pod deletion, paginated snapshots, size limits, Lease validation), 410 Gone (as a status
 * or in-stream). Fault injection hooks let tests drop, stall or expire watches, answer 429/500, and
 * restart with history compaction. test/e2e/double-conformance.test.ts runs the same scenarios
 * against a real kube-apiserver and this double and expects the same answers.
 */
import * as http from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { RESOURCES, ResourceType, apiVersionOf } from '../../../lib/runtime/kube/resources';
import { deleteOptions } from './deletion';
import { HttpError, statusBody } from './errors';
import { checkRequestSize } from './limits';
import { Registry, Writer } from './registry';
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
  /** Extra resource types beyond lib/runtime/kube/resources. */
  resources?: ResourceType[];
  /**
   * Interval of BOOKMARK events on watches that asked for them. The real server sends one about
   * once a minute (and one ~2 s before a watch's timeoutSeconds ends, which the double also does);
   * tests that need bookmarks sooner set a short interval. @default 60000
   */
  bookmarkIntervalMs?: number;
  /** History entries kept before older resourceVersions become 410 Gone. @default 10000 */
  historyLimit?: number;
  /** How a watch from a compacted resourceVersion fails: HTTP 410, or 200 then an ERROR event. @default 'status' */
  goneMode?: 'status' | 'stream';
  /**
   * Finish graceful pod deletions by themselves after this many ms (at most the grace period), as a
   * kubelet would. By default terminating pods stay until {@link ApiServerDouble.finishTerminating}.
   */
  podTerminationMs?: number;
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
  private readonly opts: Required<Omit<ApiServerDoubleOptions, 'resources' | 'podTerminationMs'>> & { podTerminationMs?: number };
  private readonly registry: Registry;
  /** Kubelet stand-in timers for `podTerminationMs`. */
  private readonly terminations = new Set<NodeJS.Timeout>();

  constructor(opts: ApiServerDoubleOptions = {}) {
    this.opts = {
      bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
      historyLimit: opts.historyLimit ?? 10_000,
      goneMode: opts.goneMode ?? 'status',
      podTerminationMs: opts.podTerminationMs,
    };
    this.store = new Store(this.opts.historyLimit);
    this.registry = new Registry(this.store);
    this.registry.onPodTerminating = (pod) => this.scheduleTermination(pod);
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
    for (const pod of this.listObjects('pods')) if (pod.metadata.deletionTimestamp) this.scheduleTermination(pod);
    return this;
  }

  async stop(): Promise<void> {
    for (const t of this.terminations) clearTimeout(t);
    this.terminations.clear();
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
    return this.registry.put(this.typeByPlural(plural), obj);
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

  /**
   * Does what the kubelet does once a terminating pod's containers have stopped: DELETE with grace 0,
   * so the pod goes (MODIFIED, then DELETED) unless finalizers hold it. Without a name, every
   * terminating pod (of `namespace`, or all). Returns how many pods it finished.
   */
  finishTerminating(namespace?: string, name?: string): number {
    const pods = this.typeByPlural('pods');
    const due = this.listObjects('pods').filter(
      (p) =>
        p.metadata.deletionTimestamp &&
        (p.metadata.deletionGracePeriodSeconds ?? 0) > 0 &&
        (!namespace || p.metadata.namespace === namespace) &&
        (!name || p.metadata.name === name),
    );
    for (const p of due) this.registry.delete(pods, p.metadata.namespace, p.metadata.name, { gracePeriodSeconds: 0 });
    return due.length;
  }

  private scheduleTermination(pod: Obj): void {
    if (this.opts.podTerminationMs === undefined || !this.server) return;
    const { namespace, name, uid } = pod.metadata;
    const grace = (pod.metadata.deletionGracePeriodSeconds ?? 0) * 1000;
    const t = setTimeout(
      () => {
        this.terminations.delete(t);
        if (this.getObject('pods', name, namespace)?.metadata.uid === uid) this.finishTerminating(namespace, name);
      },
      Math.min(this.opts.podTerminationMs, grace),
    );
    this.terminations.add(t);
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
    return this.registry.resKey(rt);
  }

  private keyFor(rt: ResourceType, namespace: string | undefined, name: string): string {
    return this.registry.keyFor(rt, namespace, name);
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
      method: req.method ?? 'GET',
      path: url.pathname,
      query,
      userAgent: String(req.headers['user-agent'] ?? ''),
      status: 0,
      watch: isWatch,
    };
    this.requests.push(record);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const fault = this.takeFault(record);
        if (fault) {
          const headers: Record<string, string> =
            fault.retryAfterSeconds !== undefined ? { 'Retry-After': String(fault.retryAfterSeconds) } : {};
          throw Object.assign(new HttpError(fault.status, fault.status === 429 ? 'TooManyRequests' : 'InternalError', 'injected fault'), {
            headers,
          });
        }
        const raw = Buffer.concat(chunks);
        checkRequestSize(raw.length);
        const route = this.route(url.pathname);
        if (!route) throw new HttpError(404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
        if (isWatch && req.method === 'GET') return this.serveWatch(route, query, res, record);
        // Without fieldManager the real server names the writer after its User-Agent's product.
        const writer: Writer = {
          manager: query.fieldManager || record.userAgent.split('/')[0] || 'unknown',
          subresource: route.subresource,
        };
        const out = this.dispatch(
          req.method ?? 'GET',
          route,
          query,
          raw.toString('utf8'),
          String(req.headers['content-type'] ?? ''),
          writer,
        );
        this.send(res, record, out.code, out.body);
      } catch (err) {
        if (err instanceof HttpError) {
          this.send(res, record, err.code, statusBody(err.code, err.reason, err.message, err.details, err.metadata), err.headers ?? {});
        } else {
          this.send(res, record, 500, statusBody(500, 'InternalError', String(err)));
        }
      }
    });
  }

  private takeFault(r: RequestRecord): FaultRule | undefined {
    const f = this.faults.find(
      (rule) =>
        rule.remaining > 0 &&
        (!rule.method || rule.method === r.method) &&
        (rule.watch === undefined || rule.watch === r.watch) &&
        (!rule.userAgent || r.userAgent.includes(rule.userAgent)) &&
        (!rule.path || (typeof rule.path === 'string' ? r.path.includes(rule.path) : rule.path.test(r.path))),
    );
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

  private dispatch(
    method: string,
    route: Route,
    query: Record<string, string>,
    body: string,
    contentType: string,
    w: Writer,
  ): { code: number; body: unknown } {
    const { rt, namespace, name, subresource } = route;
    const reg = this.registry;
    if (subresource === 'binding' && rt.plural === 'pods' && method === 'POST') {
      return { code: 201, body: reg.bindPod(rt, namespace as string, this.required(name), this.parseJson(body), w) };
    }
    if (subresource && subresource !== 'status') throw new HttpError(404, 'NotFound', `subresource ${subresource} not supported`);
    if (subresource === 'status' && !rt.statusSubresource) throw new HttpError(404, 'NotFound', `${rt.plural} has no status subresource`);
    if (rt.namespaced && name !== undefined && !namespace) throw new HttpError(404, 'NotFound', 'namespace required');
    switch (method) {
      case 'GET':
        return name === undefined
          ? { code: 200, body: reg.list(rt, namespace, query) }
          : { code: 200, body: reg.read(rt, namespace, name) };
      case 'POST':
        if (name !== undefined) throw new HttpError(405, 'MethodNotAllowed', 'POST to an object');
        return { code: 201, body: reg.create(rt, namespace, this.parseJson(body), w) };
      case 'PUT':
        return { code: 200, body: reg.update(rt, namespace, this.required(name), this.parseJson(body), w) };
      case 'PATCH':
        return reg.patch(rt, namespace, this.required(name), body, contentType.split(';')[0].trim(), query, w);
      case 'DELETE':
        return { code: 200, body: reg.delete(rt, namespace, this.required(name), deleteOptions(query, body)) };
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
      resource,
      res,
      matches,
      stalled: false,
      close: () => {
        if (!this.watchers.delete(watcher)) return;
        clearTimeout(bookmarkTimer);
        clearTimeout(timeoutTimer);
        res.end();
      },
    };
    res.on('close', () => {
      this.watchers.delete(watcher);
      clearTimeout(bookmarkTimer);
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
    const timeout = Number(query.timeoutSeconds);
    const deadline = timeout > 0 ? Date.now() + timeout * 1000 : Infinity;
    if (query.allowWatchBookmarks === 'true') {
      // As the watch cache: every interval and once ~2 s before the deadline, and only once the
      // resource has changed after the revision the watch started from (else there is nothing new).
      const startRv = rvParam && rvParam !== '0' ? Number(rvParam) : this.store.rv;
      const next = () => {
        const now = Date.now();
        const at = Math.min(now + this.opts.bookmarkIntervalMs, deadline - 2000);
        if (at <= now) return;
        bookmarkTimer = setTimeout(() => {
          if (!watcher.stalled && this.store.lastChange(resource) > startRv) {
            this.writeEvent(watcher, 'BOOKMARK', {
              kind: rt.kind,
              apiVersion: apiVersionOf(rt),
              metadata: { resourceVersion: String(this.store.rv) },
            });
          }
          if (at < deadline - 2000) next();
        }, at - now);
      };
      next();
    }
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

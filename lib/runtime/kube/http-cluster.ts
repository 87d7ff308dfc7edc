/**
 * {@link Cluster} over plain node:http(s) with one keep-alive agent per API server.
 * Hand-written rather than client-node's generated API because 1.4.0 builds a new agent per call
 * (client-node#2893) and its watch has no timeout and swallows handler errors; client-node still
 * provides kubeconfig loading and auth (see kubeconfig.ts).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import * as tls from 'node:tls';
import { FIELD_MANAGER } from '../../model/field-manager';
import {
  ApiError,
  Cluster,
  EventRecord,
  JsonPatchOp,
  K8sObject,
  ListOptions,
  ObjectList,
  ObjectRef,
  WatchEvent,
  WatchOptions,
  isNotFound,
} from './cluster';
import { EventCorrelator, EventCorrelatorOptions } from './event-correlator';
import { RESOURCES, ResourceType, apiVersionOf, resourcePath } from './resources';

/** Where and how to reach one API server. */
export interface Connection {
  /** Base URL, e.g. `https://10.0.0.1:443` or `http://127.0.0.1:34567`. */
  server: string;
  /** The single keep-alive agent for this server (TLS options live on it). */
  agent: http.Agent;
  /** Auth headers, asked for on every request so that rotated service-account tokens are picked up. */
  headers?: () => Promise<Record<string, string>> | Record<string, string>;
  /** @default 'tensor-fusion-controller' */
  userAgent?: string;
  /** Timeout of non-watch requests. @default 30000 */
  requestTimeoutMs?: number;
}

/** Builds a keep-alive agent for a server URL (plain HTTP for the test double, HTTPS otherwise). */
export function keepAliveAgent(server: string, tlsOptions: https.AgentOptions = {}): http.Agent {
  const opts = { keepAlive: true, keepAliveMsecs: 30_000, maxSockets: 64, ...tlsOptions };
  if (!server.startsWith('https:')) return new http.Agent(opts);
  // One SecureContext for every connection: given only the PEM options, tls.connect parses the CA,
  // certificate and key again for each new socket (about 0.5 ms, and a burst of binds opens dozens).
  return new https.Agent({ ...opts, secureContext: tls.createSecureContext(opts) });
}

type Query = Record<string, string | number | boolean | undefined>;

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function queryString(q: Query): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) if (v !== undefined) parts.push(`${k}=${encodeURIComponent(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

function retryAfter(headers: http.IncomingHttpHeaders): number | undefined {
  const v = headers['retry-after'];
  const n = typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** Turns a non-2xx response into an ApiError carrying the Status reason. */
export function toApiError(status: number, headers: http.IncomingHttpHeaders, body: string): ApiError {
  let reason = http.STATUS_CODES[status] ?? 'Unknown';
  let message = body.slice(0, 500);
  try {
    const s = JSON.parse(body) as { reason?: string; message?: string };
    if (s.reason) reason = s.reason;
    if (s.message) message = s.message;
  } catch {
    /* not a Status body: keep the raw text */
  }
  return new ApiError(status, reason, message, retryAfter(headers));
}

export class HttpCluster implements Cluster {
  private readonly base: URL;
  private readonly transport: typeof http | typeof https;
  /** Events repeat with every reconcile: aggregated and rate-limited as client-go's recorder does. */
  private readonly events: EventCorrelator;

  constructor(
    private readonly conn: Connection,
    events: EventCorrelatorOptions = {},
  ) {
    this.events = new EventCorrelator(events);
    this.base = new URL(conn.server);
    this.transport = this.base.protocol === 'https:' ? https : http;
  }

  private async open(method: string, path: string, contentType?: string, signal?: AbortSignal): Promise<http.ClientRequest> {
    const headers: Record<string, string> = {
      Accept: 'application/json',
      'User-Agent': this.conn.userAgent ?? 'tensor-fusion-controller',
      ...(this.conn.headers ? await this.conn.headers() : {}),
    };
    if (contentType) headers['Content-Type'] = contentType;
    const basePath = this.base.pathname.replace(/\/$/, '');
    return this.transport.request({
      protocol: this.base.protocol,
      hostname: this.base.hostname,
      port: this.base.port,
      method,
      path: basePath + path,
      headers,
      agent: this.conn.agent,
      signal,
    });
  }

  /** One request/response round trip with a JSON body. */
  async request(
    method: string,
    path: string,
    query: Query = {},
    body?: unknown,
    contentType?: string,
    signal?: AbortSignal,
  ): Promise<RawResponse> {
    const req = await this.open(
      method,
      path + queryString(query),
      body === undefined ? undefined : (contentType ?? 'application/json'),
      signal,
    );
    if (signal?.aborted) {
      req.destroy();
      throw new Error(`${method} ${path}: aborted`);
    }
    return new Promise<RawResponse>((resolve, reject) => {
      req.setTimeout(this.conn.requestTimeoutMs ?? 30_000, () => req.destroy(new Error(`${method} ${path}: request timed out`)));
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }

  /** `request`, with a status outside 2xx thrown as the API's error and the body parsed. */
  private async call<T>(...args: Parameters<HttpCluster['request']>): Promise<T> {
    const res = await this.request(...args);
    if (res.status < 200 || res.status >= 300) throw toApiError(res.status, res.headers, res.body);
    return JSON.parse(res.body) as T;
  }

  async get<T extends K8sObject>(rt: ResourceType, ref: ObjectRef): Promise<T | undefined> {
    try {
      return await this.call<T>('GET', resourcePath(rt, ref.namespace, ref.name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list<T extends K8sObject>(rt: ResourceType, opts: ListOptions = {}): Promise<ObjectList<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.call<{ items: T[]; metadata: { resourceVersion: string; continue?: string } }>(
        'GET',
        resourcePath(rt, opts.namespace),
        { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector, limit: opts.limit ?? 500, continue: cont },
        undefined,
        undefined,
        opts.signal,
      );
      for (const item of page.items) {
        // Lists omit kind/apiVersion on items; restore them so cached objects are self-describing.
        item.kind ??= rt.kind;
        item.apiVersion ??= apiVersionOf(rt);
      }
      if (opts.onPage) opts.onPage(page.items);
      else items.push(...page.items);
      resourceVersion = page.metadata.resourceVersion;
      cont = page.metadata.continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  async watch<T extends K8sObject>(rt: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void): Promise<void> {
    const query: Query = {
      watch: 1,
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: opts.allowWatchBookmarks || undefined,
      timeoutSeconds: opts.timeoutSeconds,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
    };
    const signal = opts.signal;
    if (signal?.aborted) return;
    const req = await this.open('GET', resourcePath(rt, opts.namespace) + queryString(query), undefined, signal);
    // Aborted while the headers were being prepared: the request is already destroyed and its events
    // may have fired before any listener below, so the promise would never settle.
    if (signal?.aborted) {
      req.destroy();
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const fail = (err: unknown) => (signal?.aborted ? resolve() : reject(err));
      req.on('error', fail);
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => reject(toApiError(res.statusCode ?? 0, res.headers, Buffer.concat(chunks).toString('utf8'))));
          res.on('error', fail);
          return;
        }
        res.setEncoding('utf8');
        let buffered = '';
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          // Lines are handled synchronously in arrival order: no interleaving, natural backpressure.
          while ((nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (!line) continue;
            try {
              onEvent(JSON.parse(line) as WatchEvent<T>);
            } catch (err) {
              req.destroy();
              reject(err);
              return;
            }
          }
        });
        res.on('error', fail);
        // 'aborted'/'close' without 'end' means the connection broke mid-stream.
        res.on('close', () => (res.complete ? resolve() : fail(new Error(`watch ${rt.plural}: connection closed mid-stream`))));
      });
      req.end();
    });
  }

  create<T extends K8sObject>(rt: ResourceType, obj: T): Promise<T> {
    return this.call<T>('POST', resourcePath(rt, obj.metadata.namespace), { fieldManager: FIELD_MANAGER }, this.withType(rt, obj));
  }

  replace<T extends K8sObject>(rt: ResourceType, obj: T): Promise<T> {
    return this.put(rt, obj);
  }

  replaceStatus<T extends K8sObject>(rt: ResourceType, obj: T): Promise<T> {
    return this.put(rt, obj, 'status');
  }

  /** A PUT of `obj` (or of its subresource) as our field manager. */
  private put<T extends K8sObject>(rt: ResourceType, obj: T, subresource?: 'status'): Promise<T> {
    const path = resourcePath(rt, obj.metadata.namespace, obj.metadata.name, subresource);
    return this.call<T>('PUT', path, { fieldManager: FIELD_MANAGER }, this.withType(rt, obj));
  }

  apply<T extends K8sObject>(rt: ResourceType, obj: T, opts: { force?: boolean; subresource?: 'status' } = {}): Promise<T> {
    return this.call<T>(
      'PATCH',
      resourcePath(rt, obj.metadata.namespace, obj.metadata.name, opts.subresource),
      { fieldManager: FIELD_MANAGER, force: opts.force ?? true },
      // JSON is valid YAML, and the API server accepts it under the apply content type.
      this.withType(rt, obj),
      'application/apply-patch+yaml',
    );
  }

  jsonPatch<T extends K8sObject>(rt: ResourceType, ref: ObjectRef, ops: JsonPatchOp[], subresource?: 'status'): Promise<T> {
    return this.patch<T>(rt, ref, subresource, ops, 'application/json-patch+json');
  }

  mergePatch<T extends K8sObject>(rt: ResourceType, ref: ObjectRef, patch: unknown, subresource?: 'status' | 'scale'): Promise<T> {
    return this.patch<T>(rt, ref, subresource, patch, 'application/merge-patch+json');
  }

  /** A PATCH of `ref` (or of its subresource) as our field manager, `body` in `contentType`. */
  private patch<T>(rt: ResourceType, ref: ObjectRef, subresource: string | undefined, body: unknown, contentType: string): Promise<T> {
    const path = resourcePath(rt, ref.namespace, ref.name, subresource);
    return this.call<T>('PATCH', path, { fieldManager: FIELD_MANAGER }, body, contentType);
  }

  async bind(ref: ObjectRef & { uid?: string }, node: string, annotations?: Record<string, string>): Promise<void> {
    const metadata = {
      name: ref.name,
      namespace: ref.namespace,
      ...(ref.uid ? { uid: ref.uid } : {}),
      ...(annotations ? { annotations } : {}),
    };
    await this.call(
      'POST',
      resourcePath(RESOURCES.pods, ref.namespace, ref.name, 'binding'),
      {},
      { apiVersion: 'v1', kind: 'Binding', metadata, target: { apiVersion: 'v1', kind: 'Node', name: node } },
    );
  }

  async delete(rt: ResourceType, ref: ObjectRef): Promise<boolean> {
    try {
      await this.call('DELETE', resourcePath(rt, ref.namespace, ref.name));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  async recordEvent(involved: K8sObject, event: EventRecord, nowMs: number = Date.now()): Promise<void> {
    const meta = involved.metadata;
    const namespace = meta.namespace ?? 'default';
    const object = String(meta.uid ?? `${involved.kind}/${meta.namespace ?? ''}/${meta.name}`);
    const decision = this.events.correlate({ object, ...event }, nowMs);
    if (decision.action === 'drop') return;
    const ts = new Date(nowMs).toISOString();
    try {
      if (decision.action === 'patch') {
        try {
          await this.call(
            'PATCH',
            resourcePath(RESOURCES.events, namespace, decision.name),
            {},
            { count: decision.count, lastTimestamp: ts, message: decision.message },
            'application/merge-patch+json',
          );
          return;
        } catch (err) {
          // Expired (events live an hour) or deleted: create it again.
          if (!isNotFound(err)) throw err;
          this.events.forget(decision.key);
        }
      }
      const created = await this.call<K8sObject>(
        'POST',
        resourcePath(RESOURCES.events, namespace),
        {},
        {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { generateName: `${meta.name}.`, namespace },
          involvedObject: {
            apiVersion: involved.apiVersion,
            kind: involved.kind,
            name: meta.name,
            namespace: meta.namespace,
            uid: meta.uid,
            resourceVersion: meta.resourceVersion,
          },
          type: event.type,
          reason: event.reason,
          message: decision.message,
          count: 1,
          firstTimestamp: ts,
          lastTimestamp: ts,
          source: { component: this.conn.userAgent ?? 'tensor-fusion-controller' },
          reportingComponent: 'tensor-fusion-controller',
        },
      );
      this.events.created(decision.key, created.metadata.name as string, nowMs);
    } catch {
      // Best effort, as the interface says: the next occurrence tries again.
      this.events.forget(decision.key);
    }
  }

  private withType<T extends K8sObject>(rt: ResourceType, obj: T): T {
    return { ...obj, apiVersion: obj.apiVersion ?? apiVersionOf(rt), kind: obj.kind ?? rt.kind };
  }
}

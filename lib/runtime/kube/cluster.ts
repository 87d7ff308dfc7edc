/**
 * The small cluster-client interface that informers, reconcilers, leader election and the webhook use.
 * One implementation talks HTTP to an API server (http-cluster.ts); tests point it at the in-process double.
 */
import type { K8sObject } from '../../k8s/object';
import { ResourceType } from './resources';

// Declared with the rest of the Kubernetes vocabulary; re-exported for the client's users.
export type { K8sObject, ObjectMeta } from '../../k8s/object';

/** One RFC 6902 operation. */
export interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'test' | 'move' | 'copy';
  path: string;
  value?: unknown;
  from?: string;
}

export interface ObjectRef {
  namespace?: string;
  name: string;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size; the client follows `continue` tokens until the list is complete. @default 500 */
  limit?: number;
  /**
   * Receives each page as it arrives, and the returned `items` stay empty: a caller that folds pages
   * into its own cache never holds the raw list whole (100k pods are hundreds of MB of JSON objects).
   */
  onPage?: (items: K8sObject[]) => void;
  /** Aborts the list (the informer's stop). */
  signal?: AbortSignal;
}

export interface ObjectList<T extends K8sObject = K8sObject> {
  items: T[];
  /** Opaque: compare only for equality, never numerically. */
  resourceVersion: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T extends K8sObject = K8sObject> {
  type: WatchEventType;
  object: T;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  /** Aborting ends the stream; the returned promise then resolves. */
  signal?: AbortSignal;
}

/** A Kubernetes Event about an object, for problems users should see in `kubectl describe`. */
export interface EventRecord {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** A non-2xx answer from the API server, carrying its `Status` reason. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    /** Seconds from a `Retry-After` header, when the server sent one. */
    readonly retryAfterSeconds?: number,
  ) {
    super(`${code} ${reason}: ${message}`);
    this.name = 'ApiError';
  }
}

/** True for a 404 from the API server. */
export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.code === 404;
}

/** True for a 403: the caller's RBAC grants no such request. */
export function isForbidden(err: unknown): boolean {
  return err instanceof ApiError && err.code === 403;
}

/** True for a 409 (stale resourceVersion or AlreadyExists). */
export function isConflict(err: unknown): boolean {
  return err instanceof ApiError && err.code === 409;
}

/**
 * True when a failed write may still have been applied: no answer from the API server (the connection
 * broke, the request timed out) or a 5xx (a storage timeout, a handler that gave up while the write
 * went on). A 4xx is a refusal: nothing was written.
 */
export function isOutcomeUnknown(err: unknown): boolean {
  return !(err instanceof ApiError) || err.code >= 500;
}

/** True for a 410 Gone (resourceVersion too old). */
export function isGone(err: unknown): boolean {
  return err instanceof ApiError && err.code === 410;
}

/**
 * Cluster access. Every write names the resource type explicitly; nothing is discovered at run time.
 * Writes through `apply` use server-side apply with the package's field manager.
 */
export interface Cluster {
  get<T extends K8sObject>(rt: ResourceType, ref: ObjectRef): Promise<T | undefined>;
  list<T extends K8sObject>(rt: ResourceType, opts?: ListOptions): Promise<ObjectList<T>>;
  /**
   * Streams watch events to `onEvent` in order, synchronously per line. Resolves when the server ends
   * the stream or `signal` aborts; rejects with {@link ApiError} on a non-2xx answer or on a broken socket.
   */
  watch<T extends K8sObject>(rt: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void): Promise<void>;
  create<T extends K8sObject>(rt: ResourceType, obj: T): Promise<T>;
  /** PUT; the object's resourceVersion is the precondition (409 when stale). */
  replace<T extends K8sObject>(rt: ResourceType, obj: T): Promise<T>;
  /** PUT to `/status`; the object's resourceVersion is the precondition. */
  replaceStatus<T extends K8sObject>(rt: ResourceType, obj: T): Promise<T>;
  /** Server-side apply (`application/apply-patch+yaml`) with field manager FIELD_MANAGER; creates if absent. */
  apply<T extends K8sObject>(rt: ResourceType, obj: T, opts?: { force?: boolean; subresource?: 'status' }): Promise<T>;
  /** RFC 6902 patch; put a `test` op on `/metadata/resourceVersion` first to make it conditional. */
  jsonPatch<T extends K8sObject>(rt: ResourceType, ref: ObjectRef, ops: JsonPatchOp[], subresource?: 'status'): Promise<T>;
  /** RFC 7386 merge patch; `scale` patches `spec.replicas` of a Deployment or StatefulSet. */
  mergePatch<T extends K8sObject>(rt: ResourceType, ref: ObjectRef, patch: unknown, subresource?: 'status' | 'scale'): Promise<T>;
  /** Deletes; resolves false when the object was already gone. */
  delete(rt: ResourceType, ref: ObjectRef): Promise<boolean>;
  /**
   * Binds a pod to a node (POST `pods/<name>/binding`). The Binding's annotations reach the pod in
   * the same atomic update that sets `spec.nodeName`; the API server refuses pods already bound, being
   * deleted or scheduling-gated, and a `uid` that is not the pod's.
   */
  bind(ref: ObjectRef & { uid?: string }, node: string, annotations?: Record<string, string>): Promise<void>;
  /** Records a core/v1 Event about `involved`. Failures are swallowed: events are best effort. */
  recordEvent(involved: K8sObject, event: EventRecord): Promise<void>;
}

/**
 * Read-modify-write with optimistic concurrency: `mutate` gets the freshest object and returns the
 * object to write (or undefined to write nothing); a 409 re-reads from the API server and tries again.
 * The first attempt may use a cached copy (`cached`) to save a round trip.
 */
export async function updateWithRetry<T extends K8sObject>(
  cluster: Cluster,
  rt: ResourceType,
  ref: ObjectRef,
  mutate: (current: T) => T | undefined,
  write: (next: T) => Promise<T>,
  opts: { cached?: T; attempts?: number } = {},
): Promise<T | undefined> {
  const attempts = opts.attempts ?? 5;
  let current: T | undefined = opts.cached;
  for (let attempt = 1; ; attempt++) {
    current ??= await cluster.get<T>(rt, ref);
    if (!current) return undefined;
    const next = mutate(current);
    if (!next) return current;
    try {
      return await write(next);
    } catch (err) {
      if (!isConflict(err) || attempt >= attempts) throw err;
      current = undefined;
    }
  }
}

/**
 * The double's REST semantics over its {@link Store}, as kube-apiserver's generic registry has them:
 * create/read/list/update/patch/delete with resourceVersion preconditions, the status subresource,
 * field ownership and server-side apply (managed-fields.ts), graceful deletion (deletion.ts),
 * paginated lists at a snapshot (paging.ts), size limits (limits.ts), Lease decoding (leases.ts) and
 * pods/binding. Errors are thrown as {@link HttpError} with the real server's wording.
 */
import { randomUUID } from 'node:crypto';
import { applyPatch, deepClone } from 'fast-json-patch';
import { parse as parseYaml } from 'yaml';
import { ResourceType, apiVersionOf } from '../../../lib/runtime/kube/resources';
import { DeleteOptions, markDeleting, markPodDeleting, podGracePeriod, readyToRemove, timestamp } from './deletion';
import { HttpError, alreadyExists, conflict, invalid, notFound, resourceDetails, validateName } from './errors';
import { DecodeContext, decodeLease, validateLease } from './leases';
import { checkStoredSize, validateSizes } from './limits';
import { WriteContext, apply, updateManagedFields } from './managed-fields';
import { continueExpired, decodeContinue, encodeContinue } from './paging';
import { compileFieldSelector, compileLabelSelector } from './selectors';
import { Obj, Store } from './store';

/** Who writes: the field manager, and which subresource the request addressed. */
export interface Writer {
  manager: string;
  subresource?: string;
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

/** An object for the no-op check: the real server skips writes that change nothing but timestamps. */
function essence(o: Obj): string {
  const managed = (o.metadata.managedFields ?? []).map(({ time: _t, ...m }: Obj) => m);
  return JSON.stringify({ ...o, metadata: { ...o.metadata, managedFields: managed, resourceVersion: undefined } });
}

function isLease(rt: ResourceType): boolean {
  return rt.group === 'coordination.k8s.io' && rt.plural === 'leases';
}

export class Registry {
  /** Called when a pod enters graceful deletion (for the kubelet stand-in). */
  onPodTerminating: (pod: Obj) => void = () => undefined;

  constructor(readonly store: Store) {}

  resKey(rt: ResourceType): string {
    return `${rt.group}/${rt.plural}`;
  }

  keyFor(rt: ResourceType, namespace: string | undefined, name: string): string {
    return rt.namespaced ? `${namespace}/${name}` : name;
  }

  read(rt: ResourceType, namespace: string | undefined, name: string): Obj {
    const o = this.store.get(this.resKey(rt), this.keyFor(rt, namespace, name));
    if (!o) throw notFound(rt, name);
    return o;
  }

  list(rt: ResourceType, namespace: string | undefined, query: Record<string, string>): Obj {
    const labels = compileLabelSelector(query.labelSelector);
    const fields = compileFieldSelector(query.fieldSelector);
    const token = query.continue ? decodeContinue(query.continue, query.resourceVersion) : undefined;
    let rv = this.store.rv;
    let source = this.store.all(this.resKey(rt));
    if (token && token.rv >= 0) {
      const snap = this.store.snapshot(this.resKey(rt), token.rv);
      if (!snap) throw continueExpired(token);
      source = snap;
      rv = token.rv;
    }
    // Keys relative to the listed collection, as in the real server's tokens.
    const relKey = (o: Obj) => `/${namespace ? o.metadata.name : this.keyFor(rt, o.metadata.namespace, o.metadata.name)}`;
    let items = source.filter((o) => (!namespace || o.metadata.namespace === namespace) && labels(o.metadata.labels) && fields(o));
    if (token) items = items.filter((o) => relKey(o) >= token.start);
    const limit = Number(query.limit) || 0;
    const page: Record<string, unknown> = {};
    if (limit > 0 && items.length > limit) {
      const remaining = items.length - limit;
      items = items.slice(0, limit);
      page.continue = encodeContinue(rv, relKey(items[items.length - 1]));
      if (!query.labelSelector && !query.fieldSelector) page.remainingItemCount = remaining;
    }
    // Like the real server, list items carry no kind/apiVersion.
    const stripped = items.map(({ kind: _k, apiVersion: _a, ...o }) => o);
    return { kind: `${rt.kind}List`, apiVersion: apiVersionOf(rt), metadata: { resourceVersion: String(rv), ...page }, items: stripped };
  }

  /** Server-populated fields of a new or updated object (not managedFields or resourceVersion). */
  private stamp(rt: ResourceType, obj: Obj, prev?: Obj): Obj {
    obj.apiVersion = apiVersionOf(rt);
    obj.kind = rt.kind;
    const meta = obj.metadata;
    meta.uid = prev?.metadata.uid ?? meta.uid ?? randomUUID();
    meta.creationTimestamp = prev?.metadata.creationTimestamp ?? meta.creationTimestamp ?? timestamp();
    meta.generation = prev ? (specOf(prev) !== specOf(obj) ? (prev.metadata.generation ?? 1) + 1 : prev.metadata.generation) : 1;
    return obj;
  }

  /** Validation every write passes before storage (422s), then the storage limits (500s). */
  private admit(rt: ResourceType, obj: Obj): void {
    if (isLease(rt)) validateLease(rt, obj);
    validateSizes(rt, obj);
    checkStoredSize(`/registry/${this.resKey(rt)}/${this.keyFor(rt, obj.metadata.namespace, obj.metadata.name)}`, obj);
  }

  private decode(rt: ResourceType, obj: Obj, ctx: DecodeContext): void {
    if (isLease(rt)) decodeLease(obj, ctx);
  }

  /** Creates or replaces an object directly (test setup), stamping server fields. */
  put(rt: ResourceType, obj: Obj): Obj {
    const key = this.keyFor(rt, obj.metadata.namespace, obj.metadata.name);
    const prev = this.store.get(this.resKey(rt), key);
    const next = this.stamp(rt, { ...deepClone(obj), metadata: { ...deepClone(obj.metadata) } }, prev);
    next.metadata.managedFields = updateManagedFields(this.ctx(rt, { manager: 'test' }), prev, next);
    return this.store.commit(this.resKey(rt), key, prev ? 'MODIFIED' : 'ADDED', next);
  }

  private ctx(rt: ResourceType, w: Writer): WriteContext {
    return { rt, manager: w.manager, subresource: w.subresource, apiVersion: apiVersionOf(rt) };
  }

  /** POST; `managedFields` when the create is an apply. */
  create(rt: ResourceType, namespace: string | undefined, obj: Obj, w: Writer, managedFields?: Obj[], decoded = false): Obj {
    if (!decoded) this.decode(rt, obj, { via: 'body' });
    const meta = obj.metadata;
    if (rt.namespaced) {
      if (meta.namespace && namespace && meta.namespace !== namespace) {
        throw new HttpError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
      }
      meta.namespace = namespace ?? meta.namespace;
      if (!meta.namespace) throw new HttpError(400, 'BadRequest', 'namespace required');
    } else delete meta.namespace;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomUUID().slice(0, 5)}`;
    validateName(rt, obj);
    const key = this.keyFor(rt, meta.namespace, meta.name);
    if (this.store.get(this.resKey(rt), key)) throw alreadyExists(rt, meta.name);
    delete meta.resourceVersion;
    if (rt.statusSubresource && rt.custom) delete obj.status;
    const next = this.stamp(rt, obj);
    next.metadata.managedFields = managedFields ?? updateManagedFields(this.ctx(rt, w), undefined, next);
    this.admit(rt, next);
    return this.store.commit(this.resKey(rt), key, 'ADDED', next);
  }

  /** Applies the subresource rules: main writes keep the old status; /status writes keep everything else. */
  private merged(rt: ResourceType, prev: Obj, next: Obj, subresource: string | undefined): Obj {
    if (subresource === 'status') return { ...deepClone(prev), status: next.status, metadata: { ...deepClone(prev.metadata) } };
    const out: Obj = { ...next, metadata: { ...next.metadata, name: prev.metadata.name, namespace: prev.metadata.namespace } };
    if (rt.statusSubresource) {
      if (prev.status === undefined) delete out.status;
      else out.status = prev.status;
    }
    // Clients can neither set nor clear a deletion.
    for (const f of ['deletionTimestamp', 'deletionGracePeriodSeconds']) {
      if (prev.metadata[f] !== undefined) out.metadata[f] = prev.metadata[f];
      else delete out.metadata[f];
    }
    return out;
  }

  /**
   * Stores an update (managedFields computed as an Update unless given); removes the object when
   * its deletion is due (grace over, no finalizers left).
   */
  private commitUpdate(rt: ResourceType, prev: Obj, next: Obj, w: Writer, managedFields?: Obj[]): Obj {
    const key = this.keyFor(rt, prev.metadata.namespace, prev.metadata.name);
    const stamped = this.stamp(rt, next, prev);
    stamped.metadata.managedFields = managedFields ?? updateManagedFields(this.ctx(rt, w), prev, stamped);
    if (readyToRemove(stamped)) return this.store.commit(this.resKey(rt), key, 'DELETED', stamped);
    if (essence(stamped) === essence(prev)) return prev; // no-op writes keep the resourceVersion
    this.admit(rt, stamped);
    return this.store.commit(this.resKey(rt), key, 'MODIFIED', stamped);
  }

  /**
   * POST pods/<name>/binding, as BindingREST does: sets spec.nodeName, merges the Binding's
   * annotations and the PodScheduled condition in one update; refuses a wrong uid, a bound or a
   * terminating pod with the real server's messages.
   */
  bindPod(rt: ResourceType, namespace: string, name: string, binding: Obj, w: Writer): Obj {
    const prev = this.read(rt, namespace, name);
    const uid = binding.metadata?.uid;
    if (uid && uid !== prev.metadata.uid) {
      throw new HttpError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on pods "${name}": StorageError: invalid object, Code: 4, Key: /registry/pods/${namespace}/${name}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${uid}, UID in object meta: ${prev.metadata.uid}`,
      );
    }
    const refuse = (why: string) => new HttpError(409, 'Conflict', `Operation cannot be fulfilled on pods/binding "${name}": ${why}`);
    if (prev.metadata.deletionTimestamp) throw refuse(`pod ${name} is being deleted, cannot be assigned to a host`);
    if (prev.spec?.nodeName) throw refuse(`pod ${name} is already assigned to node "${prev.spec.nodeName}"`);
    const next = deepClone(prev);
    next.spec.nodeName = binding.target?.name;
    if (binding.metadata?.annotations) next.metadata.annotations = { ...next.metadata.annotations, ...binding.metadata.annotations };
    const conditions = (next.status?.conditions ?? []).filter((c: { type: string }) => c.type !== 'PodScheduled');
    next.status = {
      ...next.status,
      conditions: [
        ...conditions,
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: new Date().toISOString() },
      ],
    };
    this.commitUpdate(rt, prev, next, w);
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  }

  /** PUT. */
  update(rt: ResourceType, namespace: string | undefined, name: string, obj: Obj, w: Writer): Obj {
    if (obj.metadata.name && obj.metadata.name !== name)
      throw new HttpError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
    this.decode(rt, obj, { via: 'body' });
    const prev = this.read(rt, namespace, name);
    const rv = obj.metadata.resourceVersion;
    // Custom resources and Leases refuse unconditional updates (AllowUnconditionalUpdate false).
    if (!rv && (rt.custom || isLease(rt))) {
      throw invalid(
        rt,
        name,
        [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0: must be specified for an update', field: 'metadata.resourceVersion' }],
        true,
      );
    }
    if (rv && rv !== prev.metadata.resourceVersion) throw conflict(rt, name);
    return this.commitUpdate(rt, prev, this.merged(rt, prev, obj, w.subresource), w);
  }

  /** PATCH in any of the four content types; apply creates when the object is absent (201). */
  patch(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    body: string,
    contentType: string,
    query: Record<string, string>,
    w: Writer,
  ): { code: number; body: unknown } {
    const prev = this.store.get(this.resKey(rt), this.keyFor(rt, namespace, name));
    if (contentType === 'application/apply-patch+yaml') return this.applyPatch(rt, namespace, name, prev, body, query, w);
    if (!prev) throw notFound(rt, name);
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
        if (e.name === 'TEST_OPERATION_FAILED')
          throw new HttpError(422, 'Invalid', 'the server rejected our request due to an error in our request', {});
        throw new HttpError(422, 'Invalid', `the server rejected our request due to an error in our request: ${e.message.split('\n')[0]}`);
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
      throw new HttpError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got "${contentType}")`,
      );
    }
    this.decode(rt, next, { via: 'patch', patched: next });
    return { code: 200, body: this.commitUpdate(rt, prev, this.merged(rt, prev, next, w.subresource), w) };
  }

  private applyPatch(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    prev: Obj | undefined,
    body: string,
    query: Record<string, string>,
    w: Writer,
  ): { code: number; body: unknown } {
    if (!query.fieldManager) {
      throw new HttpError(
        422,
        'Invalid',
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        {
          group: 'meta.k8s.io',
          kind: 'PatchOptions',
          causes: [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }],
        },
      );
    }
    let applied: Obj;
    try {
      applied = parseYaml(body);
    } catch (err) {
      throw new HttpError(400, 'BadRequest', `invalid apply body: ${(err as Error).message}`);
    }
    applied.metadata ??= {};
    const ctx = this.ctx(rt, { manager: query.fieldManager, subresource: w.subresource });
    const force = query.force === 'true';
    const decodeAs: DecodeContext = { via: 'apply', namespace: applied.metadata.namespace, name };
    if (!prev) {
      if (w.subresource) throw notFound(rt, name);
      const made = apply(ctx, undefined, applied, force);
      this.decode(rt, made, decodeAs);
      const obj = { ...made, metadata: { ...made.metadata, name, namespace: applied.metadata.namespace } };
      return { code: 201, body: this.create(rt, namespace, obj, ctx, made.metadata.managedFields, true) };
    }
    this.checkPatchPrecondition(rt, prev, applied);
    const next = apply(ctx, prev, applied, force);
    this.decode(rt, next, decodeAs);
    return { code: 200, body: this.commitUpdate(rt, prev, this.merged(rt, prev, next, w.subresource), ctx, next.metadata.managedFields) };
  }

  private checkPatchPrecondition(rt: ResourceType, prev: Obj, patch: Obj | undefined): void {
    const rv = patch?.metadata?.resourceVersion;
    if (rv && rv !== prev.metadata.resourceVersion) throw conflict(rt, prev.metadata.name);
  }

  /**
   * DELETE: pods gracefully (see deletion.ts), objects with finalizers marked, others removed.
   * Pods and marked objects come back as the object, removed others as a Success Status.
   */
  delete(rt: ResourceType, namespace: string | undefined, name: string, opts: DeleteOptions): Obj {
    const prev = this.read(rt, namespace, name);
    const res = this.resKey(rt);
    const key = this.keyFor(rt, namespace, name);
    if (rt.group === '' && rt.plural === 'pods') {
      const marked = markPodDeleting(prev, podGracePeriod(prev, opts));
      if (!marked) return prev;
      const out = this.store.commit(res, key, 'MODIFIED', marked);
      if (readyToRemove(out)) return this.store.commit(res, key, 'DELETED', out);
      if ((out.metadata.deletionGracePeriodSeconds ?? 0) > 0) this.onPodTerminating(out);
      return out;
    }
    if (prev.metadata.finalizers?.length) {
      const marked = markDeleting(prev);
      return marked ? this.store.commit(res, key, 'MODIFIED', marked) : prev;
    }
    this.store.commit(res, key, 'DELETED', prev);
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: resourceDetails(rt, name, { uid: prev.metadata.uid }),
    };
  }
}

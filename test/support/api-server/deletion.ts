/**
 * DELETE as the real registry does it. Pods are deleted gracefully: a pod bound to a node gets
 * metadata.deletionTimestamp = now + grace and deletionGracePeriodSeconds (a MODIFIED event) and
 * stays until the kubelet deletes it with grace 0; a repeated DELETE may only shorten the grace.
 * Unbound or finished pods, and grace 0, go at once (still MODIFIED, then DELETED). Other kinds go
 * at once unless they have finalizers. Ownership GC (propagationPolicy) is not modelled.
 */
import type { Obj } from './store';

export interface DeleteOptions {
  gracePeriodSeconds?: number;
}

/** DeleteOptions from the query (what our client and kubectl send) or a JSON body. */
export function deleteOptions(query: Record<string, string>, body: string): DeleteOptions {
  let fromBody: { gracePeriodSeconds?: unknown } = {};
  try {
    fromBody = body.trim() ? JSON.parse(body) : {};
  } catch {
    /* the real server answers 400 for a bad body; no test of ours sends one */
  }
  const raw = query.gracePeriodSeconds ?? fromBody.gracePeriodSeconds;
  return raw === undefined || raw === '' ? {} : { gracePeriodSeconds: Number(raw) };
}

/** The grace period a pod's deletion gets (pods' CheckGracefulDelete). */
export function podGracePeriod(pod: Obj, opts: DeleteOptions): number {
  let period = opts.gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
  if (!pod.spec?.nodeName) period = 0;
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') period = 0;
  // A negative grace (e.g. kubectl --grace-period=-1 sent through) becomes 1 s, as on the real server.
  return period < 0 ? 1 : period;
}

/** RFC 3339 at whole seconds, the precision of metadata timestamps. */
export function timestamp(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * The pod after a DELETE with `grace`, or undefined when the DELETE changes nothing (an existing
 * deletion with a grace no longer than the one asked for).
 */
export function markPodDeleting(pod: Obj, grace: number, now = Date.now()): Obj | undefined {
  const meta = pod.metadata;
  if (meta.deletionTimestamp && (meta.deletionGracePeriodSeconds ?? 0) <= grace) return undefined;
  const next: Obj = { ...pod, metadata: { ...meta, deletionTimestamp: timestamp(now + grace * 1000), deletionGracePeriodSeconds: grace } };
  if (!meta.deletionTimestamp) next.metadata.generation = (meta.generation ?? 1) + 1;
  return next;
}

/** Any other object with finalizers: marked once, with grace 0. */
export function markDeleting(obj: Obj): Obj | undefined {
  if (obj.metadata.deletionTimestamp) return undefined;
  const next: Obj = { ...obj, metadata: { ...obj.metadata, deletionTimestamp: timestamp(), deletionGracePeriodSeconds: 0 } };
  if (next.metadata.generation !== undefined) next.metadata.generation += 1;
  return next;
}

/** Whether a marked object is gone: its grace is over (0) and no finalizer holds it. */
export function readyToRemove(obj: Obj): boolean {
  const m = obj.metadata;
  return !!m.deletionTimestamp && (m.deletionGracePeriodSeconds ?? 0) === 0 && !m.finalizers?.length;
}

/**
 * The size limits a real control plane enforces, with its answers: kube-apiserver's request body
 * limit (413), validation limits (422) and the storage limits of etcd (1.5 MiB request, 500) and of
 * the apiserver's etcd client (2 MiB gRPC message, 500). Writes that pass in the double but fail on
 * a cluster (a ledger ConfigMap over 1 MiB, say) must fail here too.
 */
import type { ResourceType } from '../../../lib/runtime/kube/resources';
import { Cause, HttpError, invalid } from './errors';
import type { Obj } from './store';

/** kube-apiserver --max-request-bytes default (3 MiB). */
export const MAX_REQUEST_BYTES = 3 * 1024 * 1024;
/** etcd --max-request-bytes default (1.5 MiB). */
export const ETCD_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;
/** The apiserver's etcd client MaxCallSendMsgSize (2 MiB). */
export const GRPC_MAX_SEND_BYTES = 2 * 1024 * 1024;
/** ConfigMap data + binaryData, and Secret data (api.MaxSecretSize). */
export const MAX_CONFIGMAP_BYTES = 1024 * 1024;
/** Total size of metadata.annotations (keys and values). */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

/** 413 as the real server answers a body over 3 MiB, before decoding it. */
export function checkRequestSize(bytes: number): void {
  if (bytes > MAX_REQUEST_BYTES) {
    throw new HttpError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${MAX_REQUEST_BYTES}`);
  }
}

/** Validation limits (422) that apply to every write of `obj`. */
export function validateSizes(rt: ResourceType, obj: Obj): void {
  const causes: Cause[] = [];
  const annotations = obj.metadata.annotations as Record<string, string> | undefined;
  if (annotations) {
    const n = Object.entries(annotations).reduce((s, [k, v]) => s + Buffer.byteLength(k) + Buffer.byteLength(String(v)), 0);
    if (n > MAX_ANNOTATIONS_BYTES) causes.push(tooLong('metadata.annotations', MAX_ANNOTATIONS_BYTES));
  }
  if (rt.kind === 'ConfigMap' && rt.group === '') {
    // Values only: keys do not count (checked against a real server).
    const data = Object.values(obj.data ?? {}).reduce((s: number, v) => s + Buffer.byteLength(String(v)), 0);
    const binary = Object.values(obj.binaryData ?? {}).reduce((s: number, v) => s + Buffer.from(String(v), 'base64').length, 0);
    if (data + binary > MAX_CONFIGMAP_BYTES) causes.push(tooLong('[]', MAX_CONFIGMAP_BYTES));
  }
  if (causes.length) throw invalid(rt, obj.metadata.name, causes);
}

function tooLong(field: string, max: number): Cause {
  return { reason: 'FieldValueTooLong', message: `Too long: may not be more than ${max} bytes`, field };
}

/**
 * The storage limits, estimated from the object's JSON (custom resources are stored as JSON; core
 * kinds as protobuf, a little smaller, so the exact threshold differs by a few hundred bytes).
 */
export function checkStoredSize(storageKey: string, obj: Obj): void {
  // A put in an etcd transaction: key, value and about 200 bytes of framing.
  const size = Buffer.byteLength(JSON.stringify(obj)) + 2 * Buffer.byteLength(storageKey) + 200;
  if (size > GRPC_MAX_SEND_BYTES) {
    throw new HttpError(
      500,
      undefined,
      `rpc error: code = ResourceExhausted desc = trying to send message larger than max (${size} vs. ${GRPC_MAX_SEND_BYTES})`,
    );
  }
  if (size > ETCD_MAX_REQUEST_BYTES) throw new HttpError(500, undefined, 'etcdserver: request is too large');
}

/**
 * Status errors of the double, worded as kube-apiserver words them (checked against a real server
 * in test/e2e/double-conformance.test.ts): resources are named `plural.group` in NotFound/Conflict,
 * kinds `Kind.group` in Invalid.
 */
import type { ResourceType } from '../../../lib/runtime/kube/resources';
import type { Obj } from './store';

export class HttpError extends Error {
  headers?: Record<string, string>;
  /** `reason` undefined: the real server sends none (e.g. storage errors). */
  constructor(
    readonly code: number,
    readonly reason: string | undefined,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly metadata: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function statusBody(
  code: number,
  reason: string | undefined,
  message: string,
  details?: Record<string, unknown>,
  metadata: Record<string, unknown> = {},
): Obj {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata,
    status: 'Failure',
    message,
    ...(reason ? { reason } : {}),
    ...(details ? { details } : {}),
    code,
  };
}

/** `pods`, `gpus.tensor-fusion.ai`. */
export function qualifiedResource(rt: ResourceType): string {
  return rt.group ? `${rt.plural}.${rt.group}` : rt.plural;
}

/** Status details naming an object by resource: `{ name, group?, kind: plural }`. */
export function resourceDetails(rt: ResourceType, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, ...(rt.group ? { group: rt.group } : {}), kind: rt.plural, ...extra };
}

export function notFound(rt: ResourceType, name: string): HttpError {
  return new HttpError(404, 'NotFound', `${qualifiedResource(rt)} "${name}" not found`, resourceDetails(rt, name));
}

export function alreadyExists(rt: ResourceType, name: string): HttpError {
  return new HttpError(409, 'AlreadyExists', `${qualifiedResource(rt)} "${name}" already exists`, resourceDetails(rt, name));
}

export function conflict(rt: ResourceType, name: string): HttpError {
  return new HttpError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedResource(rt)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    resourceDetails(rt, name),
  );
}

export interface Cause {
  reason: 'FieldValueInvalid' | 'FieldValueRequired' | 'FieldValueTooLong';
  message: string;
  field: string;
}

/**
 * 422 Invalid. The real server names the object by Kind (`Lease.coordination.k8s.io "x" is invalid`)
 * except for the generic resourceVersion check, which names it by resource (`byResource`).
 */
export function invalid(rt: ResourceType, name: string, causes: Cause[], byResource = false): HttpError {
  const what = byResource ? qualifiedResource(rt) : rt.group ? `${rt.kind}.${rt.group}` : rt.kind;
  const each = causes.map((c) => `${c.field}: ${c.message}`);
  const message = `${what} "${name}" is invalid: ${each.length === 1 ? each[0] : `[${each.join(', ')}]`}`;
  const details = { ...(name ? { name } : {}), ...(rt.group ? { group: rt.group } : {}), kind: byResource ? rt.plural : rt.kind, causes };
  return new HttpError(422, 'Invalid', message, details);
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** metadata.name as the real server checks it for the kinds we serve (RFC 1123 subdomain, <= 253). */
export function validateName(rt: ResourceType, obj: Obj): void {
  const name: string | undefined = obj.metadata.name;
  if (!name) {
    throw invalid(rt, '', [
      { reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' },
    ]);
  }
  if (name.length <= 253 && DNS1123_SUBDOMAIN.test(name)) return;
  const why =
    name.length > 253
      ? 'must be no more than 253 characters'
      : "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  throw invalid(rt, name, [
    { reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(name)}: ${why}`, field: 'metadata.name' },
  ]);
}

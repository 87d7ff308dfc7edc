/**
 * coordination.k8s.io/v1 Lease as the real server decodes and validates it, with its messages:
 * int32 and string fields typed as Go's JSON decoder wants them, MicroTime in exactly the layout
 * `2006-01-02T15:04:05.000000Z07:00` (milliseconds, as Date#toISOString writes, are refused) and
 * stored in UTC, leaseDurationSeconds > 0 and leaseTransitions >= 0. strategy and preferredHolder
 * are dropped (their feature gate, CoordinatedLeaderElection, is off by default).
 */
import type { ResourceType } from '../../../lib/runtime/kube/resources';
import { Cause, HttpError, invalid } from './errors';
import type { Obj } from './store';

const LAYOUT = '2006-01-02T15:04:05.000000Z07:00';
const INT32 = new Set(['leaseDurationSeconds', 'leaseTransitions']);
const STRINGS = new Set(['holderIdentity']);
const TIMES = new Set(['acquireTime', 'renewTime']);

/** How a decode error reaches the client: POST/PUT body, a patch result, or an apply. */
export type DecodeContext = { via: 'body' } | { via: 'patch'; patched: Obj } | { via: 'apply'; namespace?: string; name: string };

function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  return typeof v === 'object' ? 'object' : typeof v === 'boolean' ? 'bool' : typeof v;
}

/**
 * Parses a MicroTime as Go's time.Parse does with the layout above and returns it in UTC, or the
 * Go error text. Each step mirrors one layout chunk so that errors name the same chunk.
 */
export function parseMicroTime(value: string): { utc?: string; error?: string } {
  const fail = (elem: string, layoutElem: string) => ({
    error: `parsing time ${JSON.stringify(value)} as ${JSON.stringify(LAYOUT)}: cannot parse ${JSON.stringify(elem)} as ${JSON.stringify(layoutElem)}`,
  });
  const range = (what: string) => ({ error: `parsing time ${JSON.stringify(value)}: ${what} out of range` });
  let rest = value;
  const digits = (n: number) => /^\d+$/.test(rest.slice(0, n)) && rest.length >= n;
  if (!digits(4)) return fail(rest, '2006');
  const year = Number(rest.slice(0, 4));
  rest = rest.slice(4);
  const fields: number[] = [];
  const chunks = [
    ['-', '01', true, 12, 'month'],
    ['-', '02', true, 31, 'day'],
    ['T', '15', false, 23, 'hour'],
    [':', '04', true, 59, 'minute'],
    [':', '05', true, 59, 'second'],
  ] as const;
  for (const [sep, elem, fixed, max, what] of chunks) {
    if (!rest.startsWith(sep)) return fail(rest, sep);
    rest = rest.slice(1);
    // Go's getnum: one or two digits, exactly two when the layout element is zero-padded.
    const n = /^\d\d/.test(rest) ? 2 : /^\d/.test(rest) && !fixed ? 1 : 0;
    if (n === 0) return fail(rest, elem);
    const v = Number(rest.slice(0, n));
    if (v > max || (what === 'month' && v < 1)) return range(what);
    fields.push(v);
    rest = rest.slice(n);
  }
  const [month, day, hour, minute, second] = fields;
  if (rest.length < 7 || !/^[.,]\d{6}/.test(rest)) return fail(rest, '.000000');
  const micros = rest.slice(1, 7);
  rest = rest.slice(7);
  let offsetMin = 0;
  if (rest.startsWith('Z')) rest = rest.slice(1);
  else {
    if (rest.length < 6 || rest[3] !== ':' || !/^[+-]\d\d:\d\d/.test(rest)) return fail(rest, 'Z07:00');
    offsetMin = (rest[0] === '-' ? -1 : 1) * (Number(rest.slice(1, 3)) * 60 + Number(rest.slice(4, 6)));
    rest = rest.slice(6);
  }
  if (rest) return { error: `parsing time ${JSON.stringify(value)}: extra text: ${JSON.stringify(rest)}` };
  if (day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return range('day');
  const ms = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMin * 60_000;
  return { utc: new Date(ms).toISOString().replace(/\.\d{3}Z$/, `.${micros}Z`) };
}

function decodeError(ctx: DecodeContext, message: string): HttpError {
  if (ctx.via === 'body') return new HttpError(400, 'BadRequest', `Lease in version "v1" cannot be handled as a Lease: ${message}`);
  if (ctx.via === 'apply') {
    return new HttpError(
      500,
      undefined,
      `failed to convert new object (${ctx.namespace ?? ''}/${ctx.name}; coordination.k8s.io/v1, Kind=Lease) to proper version: unable to convert unstructured object to coordination.k8s.io/v1, Kind=Lease: ${message}`,
    );
  }
  // The real server quotes the whole patched object as Go serializes it; JSON.stringify is close.
  const cause = `Invalid value: ${JSON.stringify(JSON.stringify(ctx.patched))}: ${message}`;
  return new HttpError(422, 'Invalid', ` "" is invalid: patch: ${cause}`, {
    causes: [{ reason: 'FieldValueInvalid', message: cause, field: 'patch' }],
  });
}

/** Type-checks and normalizes `lease.spec` in place, or throws the real decode error. */
export function decodeLease(lease: Obj, ctx: DecodeContext): void {
  const spec = lease.spec;
  if (spec === undefined || spec === null) return;
  let typeError: string | undefined;
  const at = (k: string) => `Go struct field LeaseSpec.spec.${k}`;
  for (const [k, v] of Object.entries(spec as Record<string, unknown>)) {
    if (v === null) continue;
    if (INT32.has(k) && !(typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31)) {
      typeError ??= `json: cannot unmarshal ${jsonType(v)}${typeof v === 'number' ? ` ${v}` : ''} into ${at(k)} of type int32`;
    } else if ((STRINGS.has(k) || TIMES.has(k)) && typeof v !== 'string') {
      typeError ??= `json: cannot unmarshal ${jsonType(v)} into ${at(k)} of type string`;
    } else if (TIMES.has(k)) {
      // A MicroTime's own UnmarshalJSON error ends decoding at once; type errors are only recorded.
      const t = parseMicroTime(v as string);
      if (t.error) throw decodeError(ctx, t.error);
      spec[k] = t.utc;
    }
  }
  if (typeError) throw decodeError(ctx, typeError);
  delete spec.strategy;
  delete spec.preferredHolder;
}

/** ValidateLeaseSpec. */
export function validateLease(rt: ResourceType, lease: Obj): void {
  const spec = lease.spec ?? {};
  const causes: Cause[] = [];
  if (typeof spec.leaseDurationSeconds === 'number' && spec.leaseDurationSeconds <= 0) {
    causes.push({
      reason: 'FieldValueInvalid',
      message: `Invalid value: ${spec.leaseDurationSeconds}: must be greater than 0`,
      field: 'spec.leaseDurationSeconds',
    });
  }
  if (typeof spec.leaseTransitions === 'number' && spec.leaseTransitions < 0) {
    causes.push({
      reason: 'FieldValueInvalid',
      message: `Invalid value: ${spec.leaseTransitions}: must be greater than or equal to 0`,
      field: 'spec.leaseTransitions',
    });
  }
  if (causes.length) throw invalid(rt, lease.metadata.name, causes);
}

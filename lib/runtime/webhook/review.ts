/**
 * AdmissionReview v1 on the wire: the request fields the webhook reads and the responses it writes.
 * Responses always echo the request's uid and apiVersion; patches are base64 RFC 6902 documents.
 */
import type { FieldIssue } from '../../model/errors';
import type { JsonPatchOp, K8sObject } from '../kube/cluster';

export const ADMISSION_API_VERSION = 'admission.k8s.io/v1';

/** The parts of `AdmissionReview.request` the webhook reads. */
export interface AdmissionRequest {
  uid: string;
  kind?: { group?: string; version?: string; kind?: string };
  resource?: { group?: string; version?: string; resource?: string };
  subResource?: string;
  operation?: string;
  namespace?: string;
  name?: string;
  dryRun?: boolean;
  object?: K8sObject;
}

export interface AdmissionReview {
  apiVersion?: string;
  kind?: string;
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string; reason?: string };
  patchType?: 'JSONPatch';
  /** Base64 of the JSON patch. */
  patch?: string;
  warnings?: string[];
}

/** What the handler decided, before it is put on the wire. */
export type Decision =
  | {
      readonly allowed: true;
      readonly patch: readonly JsonPatchOp[];
      readonly warnings?: readonly string[];
      /** The ResourceClaimTemplate a DRA pool's pod names: it must exist before the pod does (created unless the request is a dry run). */
      readonly claimTemplate?: K8sObject;
    }
  | { readonly allowed: false; readonly code: number; readonly message: string };

export const allow = (patch: readonly JsonPatchOp[] = [], warnings?: readonly string[], claimTemplate?: K8sObject): Decision => ({
  allowed: true,
  patch,
  ...(warnings && warnings.length ? { warnings } : {}),
  ...(claimTemplate ? { claimTemplate } : {}),
});

/** Most issues a denial lists; the rest are counted (a pod with 500 unknown keys once gave a 170 kB answer). */
export const MAX_DENIAL_ISSUES = 10;

/** A denial listing the issues, one per line, with the lib/ messages unchanged; past {@link MAX_DENIAL_ISSUES}, a count. */
export const deny = (issues: readonly FieldIssue[] | string, code = 403): Decision => {
  if (typeof issues === 'string') return { allowed: false, code, message: issues };
  const shown = issues.slice(0, MAX_DENIAL_ISSUES).map((i) => i.message);
  const more = issues.length - shown.length;
  if (more > 0)
    shown.push(
      `(and ${more} more ${more === 1 ? 'issue' : 'issues'}, fields ${issues
        .slice(MAX_DENIAL_ISSUES, MAX_DENIAL_ISSUES + 3)
        .map((i) => i.field)
        .join(', ')}${more > 3 ? ', ...' : ''})`,
    );
  return { allowed: false, code, message: shown.join('\n') };
};

/**
 * Reads a review body. Returns a string describing the problem when it is not an AdmissionReview v1
 * with a request uid (answered with HTTP 400: there is no uid to echo).
 */
export function parseReview(body: unknown): AdmissionReview | string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'body: expected an AdmissionReview object';
  const review = body as AdmissionReview;
  if (review.apiVersion !== ADMISSION_API_VERSION)
    return `apiVersion: got ${JSON.stringify(review.apiVersion)}, expected "${ADMISSION_API_VERSION}"`;
  const req = review.request;
  if (req === null || typeof req !== 'object' || typeof req.uid !== 'string' || req.uid === '') {
    return 'request.uid: expected a non-empty string';
  }
  return review;
}

/** A response's fields but the uid, which each review echoes: what a decision comes to on the wire. */
export type Answer = Omit<AdmissionResponse, 'uid'>;

/** A decision as the response's fields. */
export function responseOf(decision: Decision): Answer {
  return decision.allowed
    ? {
        allowed: true,
        ...(decision.patch.length > 0
          ? { patchType: 'JSONPatch' as const, patch: Buffer.from(JSON.stringify(decision.patch)).toString('base64') }
          : {}),
        ...(decision.warnings ? { warnings: [...decision.warnings] } : {}),
      }
    : {
        allowed: false,
        status: { code: decision.code, message: decision.message, reason: decision.code === 403 ? 'Forbidden' : 'InternalError' },
      };
}

/** Answers `review` with `response` in the AdmissionReview the API server expects. */
export function answerReview(review: AdmissionReview, response: Answer): AdmissionReview {
  return {
    apiVersion: review.apiVersion ?? ADMISSION_API_VERSION,
    kind: 'AdmissionReview',
    response: { uid: review.request?.uid ?? '', ...response },
  };
}

/** Wraps a decision in the AdmissionReview the API server expects. */
export function toReview(review: AdmissionReview, decision: Decision): AdmissionReview {
  return answerReview(review, responseOf(decision));
}

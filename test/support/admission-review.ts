/** The AdmissionReview the API server sends a mutating webhook for a pod: for the webhook's tests and benchmarks. */
import { randomUUID } from 'node:crypto';
import type { K8sObject } from '../../lib/runtime/kube/cluster';
import type { AdmissionReview } from '../../lib/runtime/webhook/review';

/** The review of `object` (a pod) in its namespace: a fresh uid, a CREATE and no dry run unless `extra` says otherwise. */
export function review(object: K8sObject, extra: { uid?: string; dryRun?: boolean; operation?: string } = {}): AdmissionReview {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: extra.uid ?? randomUUID(),
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      operation: extra.operation ?? 'CREATE',
      namespace: object.metadata.namespace,
      dryRun: extra.dryRun ?? false,
      object,
    },
  };
}

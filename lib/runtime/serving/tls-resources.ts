/**
 * Core and admissionregistration kinds only the webhook touches, for its TLS (the shared table in
 * ../kube/resources.ts holds the controller's kinds).
 */
import { resourceType } from '../kube/resources';

export const WEBHOOK_RESOURCES = {
  secrets: resourceType('v1', 'secrets', 'Secret'),
  mutatingwebhookconfigurations: resourceType(
    'admissionregistration.k8s.io/v1',
    'mutatingwebhookconfigurations',
    'MutatingWebhookConfiguration',
  ),
} as const;

/**
 * Core and admissionregistration kinds only the webhook touches, for its TLS (the shared table in
 * ../resources.ts holds the controller's kinds).
 */
import type { ResourceType } from '../resources';

export const WEBHOOK_RESOURCES = {
  secrets: { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true, statusSubresource: false, custom: false },
  mutatingwebhookconfigurations: {
    group: 'admissionregistration.k8s.io', version: 'v1', plural: 'mutatingwebhookconfigurations',
    kind: 'MutatingWebhookConfiguration', namespaced: false, statusSubresource: false, custom: false,
  },
} as const satisfies Record<string, ResourceType>;

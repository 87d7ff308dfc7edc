/**
 * Core and admissionregistration kinds only the webhook touches (the shared table in ../resources.ts
 * holds the controller's kinds).
 */
import type { ResourceType } from '../resources';

export const WEBHOOK_RESOURCES = {
  configmaps: { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true, statusSubresource: false, custom: false },
  secrets: { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true, statusSubresource: false, custom: false },
  mutatingwebhookconfigurations: {
    group: 'admissionregistration.k8s.io', version: 'v1', plural: 'mutatingwebhookconfigurations',
    kind: 'MutatingWebhookConfiguration', namespaced: false, statusSubresource: false, custom: false,
  },
} as const satisfies Record<string, ResourceType>;

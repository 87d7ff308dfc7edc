/**
 * The MutatingWebhookConfiguration and what serves its certificate: in self-managed mode an empty
 * Secret the controller fills (and the controller patches the caBundle); in cert-manager mode a CA
 * Issuer chain, the serving Certificate and the annotation that makes cainjector fill the caBundle.
 */
import { KubeObject } from '../../k8s/object';
import { CERT_MANAGER_INJECT_CA_ANNOTATION, NAMESPACE_NAME_LABEL } from '../../k8s/labels';
import { ENABLED_LABEL } from '../../model/metadata-keys';
import { CONTROLLER_PATHS } from '../../contract/env';
import { WEBHOOK_SERVICE_PORT } from './network';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import { ResolvedControllerProps } from './props';
import { serviceDnsNames } from '../../k8s/names';

/** Upper bound of the webhook's timeout: a slow admission must not stall pod creation. */
export const WEBHOOK_TIMEOUT_SECONDS = 5;

/** Namespaces whose pods never reach the webhook, besides the controller's own. */
export const WEBHOOK_EXCLUDED_NAMESPACES = ['kube-system'] as const;

const CERT_MANAGER = 'cert-manager.io/v1';
/** The CA outlives many serving certificates: ten years, renewed in its last year. */
const CA_DURATION = '87600h';
const CA_RENEW_BEFORE = '8760h';

/** DNS names the serving certificate must cover for the webhook Service. */
export function webhookDnsNames(namespace: string): string[] {
  return serviceDnsNames(CONTROLLER_NAMES.webhookService, namespace);
}

export function renderWebhookConfiguration(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject {
  const { namespace } = props;
  const annotations =
    props.certificateMode === 'cert-manager'
      ? { [CERT_MANAGER_INJECT_CA_ANNOTATION]: `${namespace}/${CONTROLLER_NAMES.certificate}` }
      : undefined;
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: CONTROLLER_NAMES.webhookConfiguration, labels, ...(annotations ? { annotations } : {}) },
    webhooks: [
      {
        name: CONTROLLER_NAMES.webhook,
        admissionReviewVersions: ['v1'],
        // No caBundle here: the controller or cainjector owns that field, so re-applying never clears it.
        clientConfig: {
          service: { name: CONTROLLER_NAMES.webhookService, namespace, path: CONTROLLER_PATHS.mutatePods, port: WEBHOOK_SERVICE_PORT },
        },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' }],
        objectSelector: { matchExpressions: [{ key: ENABLED_LABEL, operator: 'In', values: ['true'] }] },
        // The controller's own namespace is excluded so that a down controller can always be restarted.
        namespaceSelector: {
          matchExpressions: [{ key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: [...WEBHOOK_EXCLUDED_NAMESPACES, namespace] }],
        },
        failurePolicy: props.failurePolicy,
        matchPolicy: 'Equivalent',
        // The webhook only validates, resolves and marks the pod; placement happens at bind time.
        sideEffects: 'None',
        timeoutSeconds: WEBHOOK_TIMEOUT_SECONDS,
        // Other webhooks may add containers after us; run again so they get their GPU share too.
        reinvocationPolicy: 'IfNeeded',
      },
    ],
  };
}

export function renderCertificates(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const { namespace } = props;
  if (props.certificateMode === 'self-managed') {
    // Created empty so that the controller needs only get/update/patch on this one name (create
    // cannot be limited by resourceNames). Opaque: kubernetes.io/tls would require the keys now.
    return [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: CONTROLLER_NAMES.tlsSecret, namespace, labels }, type: 'Opaque' }];
  }
  // cert-manager's chain for webhooks: a self-signed Issuer signs only a CA certificate, whose CA
  // Issuer signs the serving certificate. Renewing the serving certificate then keeps the trust
  // anchor (the CA, which cainjector puts in the caBundle), so no renewal races cainjector.
  const ref = (name: string) => ({ name, kind: 'Issuer', group: 'cert-manager.io' });
  return [
    { apiVersion: CERT_MANAGER, kind: 'Issuer', metadata: { name: CONTROLLER_NAMES.issuer, namespace, labels }, spec: { selfSigned: {} } },
    {
      apiVersion: CERT_MANAGER,
      kind: 'Certificate',
      metadata: { name: CONTROLLER_NAMES.caCertificate, namespace, labels },
      spec: {
        isCA: true,
        commonName: CONTROLLER_NAMES.caCertificate,
        secretName: CONTROLLER_NAMES.caCertificate,
        issuerRef: ref(CONTROLLER_NAMES.issuer),
        // The CA key stays across its own renewals, so certificates it signed stay trusted meanwhile.
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Never' },
        duration: CA_DURATION,
        renewBefore: CA_RENEW_BEFORE,
      },
    },
    {
      apiVersion: CERT_MANAGER,
      kind: 'Issuer',
      metadata: { name: CONTROLLER_NAMES.caIssuer, namespace, labels },
      spec: { ca: { secretName: CONTROLLER_NAMES.caCertificate } },
    },
    {
      apiVersion: CERT_MANAGER,
      kind: 'Certificate',
      metadata: { name: CONTROLLER_NAMES.certificate, namespace, labels },
      spec: {
        secretName: CONTROLLER_NAMES.tlsSecret,
        dnsNames: webhookDnsNames(namespace),
        issuerRef: ref(CONTROLLER_NAMES.caIssuer),
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
        duration: '8760h',
        renewBefore: '720h',
      },
    },
  ];
}

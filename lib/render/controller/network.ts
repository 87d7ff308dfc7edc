/**
 * Services for the webhook and the metrics endpoint, and the NetworkPolicy that admits nothing else.
 */
import { KubeObject } from '../../k8s/object';
import { CONTROLLER_ENV_DEFAULTS } from '../../contract/env';
import { CONTROLLER_NAMES, PORT_NAMES, SELECTOR_LABELS } from '../../contract/object-names';
import { ResolvedControllerProps } from './props';

/** Port of the webhook Service; the API server calls https://<service>.<namespace>.svc:443. */
export const WEBHOOK_SERVICE_PORT = 443;

function service(name: string, namespace: string, labels: Record<string, string>, port: number, targetPort: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace, labels },
    spec: {
      type: 'ClusterIP',
      selector: SELECTOR_LABELS,
      ports: [{ name: targetPort, port, targetPort, protocol: 'TCP' }],
    },
  };
}

export function renderNetwork(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const { namespace } = props;
  const objects = [service(CONTROLLER_NAMES.webhookService, namespace, labels, WEBHOOK_SERVICE_PORT, PORT_NAMES.webhook)];
  if (props.metrics) {
    objects.push(service(CONTROLLER_NAMES.metricsService, namespace, labels, CONTROLLER_ENV_DEFAULTS.metricsPort, PORT_NAMES.metrics));
  }
  // Sources are not restricted: the API server's address and the scraper's namespace vary by
  // cluster. Egress stays open because the API server's address is not known in advance either.
  // Kubelet probes on the metrics port come from the node, which CNIs admit regardless of policy.
  const allowed: { port: number; protocol: string }[] = [{ port: CONTROLLER_ENV_DEFAULTS.webhookPort, protocol: 'TCP' }];
  if (props.metrics) allowed.push({ port: CONTROLLER_ENV_DEFAULTS.metricsPort, protocol: 'TCP' });
  objects.push({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: CONTROLLER_NAMES.controller, namespace, labels },
    spec: {
      podSelector: { matchLabels: SELECTOR_LABELS },
      policyTypes: ['Ingress'],
      ingress: [{ ports: allowed }],
    },
  });
  return objects;
}

/**
 * Optional Prometheus Operator ServiceMonitor for the controller's metrics Service.
 */
import { KubeObject } from '../../k8s/object';
import { CONTROLLER_PATHS } from '../../contract/env';
import { CONTROLLER_NAMES, PORT_NAMES, SELECTOR_LABELS } from '../../contract/object-names';
import { ResolvedControllerProps } from './props';

export function renderServiceMonitor(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: CONTROLLER_NAMES.controller, namespace: props.namespace, labels },
    spec: {
      // The webhook Service carries the same selector labels; the port name picks the metrics one.
      selector: { matchLabels: SELECTOR_LABELS },
      endpoints: [{ port: PORT_NAMES.metrics, path: CONTROLLER_PATHS.metrics, interval: '30s', scheme: 'http' }],
    },
  };
}

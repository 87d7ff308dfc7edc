/**
 * The controller Deployment and its PodDisruptionBudget. The pod meets the Pod Security Standards
 * "restricted" profile, so the component's namespace can enforce that level.
 */
import { KubeObject } from '../../k8s/object';
import { HOSTNAME_LABEL } from '../../k8s/labels';
import { SCHEDULER_CONFIG_CHECKSUM_ANNOTATION } from '../../model/metadata-keys';
import { CONTROLLER_ENV, CONTROLLER_ENV_DEFAULTS, CONTROLLER_PATHS } from '../../contract/env';
import { CONTROLLER_NAMES, PORT_NAMES, SELECTOR_LABELS } from '../../contract/object-names';
import { ResolvedControllerProps } from './props';
import { SCHEDULER_CONFIG_VOLUME, schedulerContainer } from './kube-scheduler';
import { Shipping } from './shipping';

/** uid/gid of the `node` user in the official Node.js images; numeric so runAsNonRoot can be verified. */
export const CONTROLLER_UID = 1000;

/** The container securityContext "restricted" asks for, shared by every container of the pod. */
const CONTAINER_SECURITY = {
  allowPrivilegeEscalation: false,
  privileged: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

function env(props: ResolvedControllerProps): object[] {
  const value = (name: string, v: string | number) => ({ name, value: String(v) });
  const field = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } });
  const E = CONTROLLER_ENV;
  const common = [
    field(E.podName, 'metadata.name'),
    field(E.podNamespace, 'metadata.namespace'),
    value(E.logLevel, props.logLevel),
    value(E.metricsPort, CONTROLLER_ENV_DEFAULTS.metricsPort),
    value(E.webhookPort, CONTROLLER_ENV_DEFAULTS.webhookPort),
    value(E.extenderPort, CONTROLLER_ENV_DEFAULTS.extenderPort),
    value(E.leaderElectionId, CONTROLLER_NAMES.lease),
    value(E.webhookServiceName, CONTROLLER_NAMES.webhookService),
    value(E.webhookConfigName, CONTROLLER_NAMES.webhookConfiguration),
    value(E.tlsSecretName, CONTROLLER_NAMES.tlsSecret),
    value(E.certMode, props.certificateMode),
    value(E.nodeAgent, String(props.nodeAgent)),
    value(E.webView, String(props.webView)),
    value(E.dra, String(props.dra)),
  ];
  const withPrometheus = props.prometheusUrl ? [...common, value(E.prometheusUrl, props.prometheusUrl)] : common;
  return props.certificateMode === 'cert-manager' ? [...withPrometheus, value(E.tlsDir, CONTROLLER_ENV_DEFAULTS.tlsDir)] : withPrometheus;
}

function probe(path: string, periodSeconds: number, failureThreshold: number): object {
  return { httpGet: { path, port: PORT_NAMES.metrics, scheme: 'HTTP' }, periodSeconds, timeoutSeconds: 2, failureThreshold };
}

/** The controller container: webhook and metrics ports, probes, and the mounts its shipping and TLS mode need. */
function controllerContainer(props: ResolvedControllerProps, shipping: Shipping): object {
  const certManager = props.certificateMode === 'cert-manager';
  return {
    name: 'controller',
    image: shipping.image,
    imagePullPolicy: 'IfNotPresent',
    ...(shipping.command ? { command: shipping.command } : {}),
    env: env(props),
    ports: [
      { name: PORT_NAMES.webhook, containerPort: CONTROLLER_ENV_DEFAULTS.webhookPort, protocol: 'TCP' },
      { name: PORT_NAMES.metrics, containerPort: CONTROLLER_ENV_DEFAULTS.metricsPort, protocol: 'TCP' },
    ],
    livenessProbe: probe(CONTROLLER_PATHS.healthz, 10, 3),
    readinessProbe: probe(CONTROLLER_PATHS.readyz, 5, 2),
    resources: props.resources,
    securityContext: CONTAINER_SECURITY,
    volumeMounts: [
      ...shipping.volumeMounts,
      { name: 'tmp', mountPath: '/tmp' },
      ...(certManager ? [{ name: 'tls', mountPath: CONTROLLER_ENV_DEFAULTS.tlsDir, readOnly: true }] : []),
    ],
  };
}

/** The pod: "restricted" security, replicas spread over nodes, the controller and kube-scheduler containers. */
function controllerPodSpec(props: ResolvedControllerProps, shipping: Shipping): object {
  const certManager = props.certificateMode === 'cert-manager';
  const tlsVolume = { name: 'tls', secret: { secretName: CONTROLLER_NAMES.tlsSecret, defaultMode: 0o440 } };
  return {
    serviceAccountName: CONTROLLER_NAMES.controller,
    automountServiceAccountToken: true,
    enableServiceLinks: false,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: CONTROLLER_UID,
      runAsGroup: CONTROLLER_UID,
      fsGroup: CONTROLLER_UID,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    // Preferred, not required: a one-node cluster must still run both replicas.
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: { topologyKey: HOSTNAME_LABEL, labelSelector: { matchLabels: SELECTOR_LABELS } },
          },
        ],
      },
    },
    ...(props.nodeSelector ? { nodeSelector: props.nodeSelector } : {}),
    ...(props.tolerations ? { tolerations: props.tolerations } : {}),
    ...(shipping.initContainers.length
      ? {
          initContainers: shipping.initContainers.map((c) => ({
            ...c,
            imagePullPolicy: 'IfNotPresent',
            resources: props.resources,
            securityContext: CONTAINER_SECURITY,
          })),
        }
      : {}),
    // Both containers run as the pod's ServiceAccount, which holds kube-scheduler's permissions too.
    containers: [
      controllerContainer(props, shipping),
      { ...schedulerContainer(props), resources: props.resources, securityContext: CONTAINER_SECURITY },
    ],
    volumes: [
      ...shipping.volumes,
      { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
      ...(certManager ? [tlsVolume] : []),
      SCHEDULER_CONFIG_VOLUME,
    ],
  };
}

/**
 * @param schedulerConfigChecksum sha256 of the scheduler configuration: kube-scheduler reads it only at
 *   start, so a new one must roll the pods.
 */
export function renderWorkload(
  props: ResolvedControllerProps,
  labels: Record<string, string>,
  shipping: Shipping,
  schedulerConfigChecksum: string,
): KubeObject[] {
  const { namespace } = props;
  const name = CONTROLLER_NAMES.controller;
  const podSpec = controllerPodSpec(props, shipping);
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels },
    spec: {
      replicas: props.replicas,
      revisionHistoryLimit: 5,
      selector: { matchLabels: SELECTOR_LABELS },
      // Never below the desired count during a rollout: every replica serves the webhook.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels, annotations: { ...shipping.podAnnotations, [SCHEDULER_CONFIG_CHECKSUM_ANNOTATION]: schedulerConfigChecksum } },
        spec: podSpec,
      },
    },
  };
  // maxUnavailable rather than minAvailable: with replicas 1 a minAvailable of 1 would block every drain.
  const pdb: KubeObject = {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace, labels },
    spec: { maxUnavailable: 1, selector: { matchLabels: SELECTOR_LABELS } },
  };
  return [deployment, pdb];
}

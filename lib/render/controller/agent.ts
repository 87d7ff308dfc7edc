/**
 * The node agent (lib/runtime/agent/): a DaemonSet on GPU nodes that exports per-pod GPU usage for the
 * recommender. It runs in a namespace of its own because it needs the host PID namespace (to read
 * /proc/<pid>/cgroup of the pids nvidia-smi reports), which the controller namespace's "restricted"
 * Pod Security level forbids; that namespace enforces "privileged" and holds nothing else. The agent
 * travels in the controller bundle (a copy of the bundle ConfigMap in its namespace) and runs with the
 * `agent` argument.
 */
import { KubeObject } from '../../k8s/object';
import { APP_LABELS, POD_SECURITY_ENFORCE_LABEL } from '../../k8s/labels';
import { GFD } from '../../model/keys';
import { AGENT_COMMAND, AGENT_DEFAULTS, AGENT_ENV } from '../../runtime/agent/contract';
import { ResolvedControllerProps } from './props';
import { ControllerBundleRef, renderShipping } from './shipping';

/** Names of the agent's objects; the namespace is the controller's with `-agent` appended. */
export const AGENT_NAMES = {
  agent: 'tensor-fusion-node-agent',
  namespaceSuffix: '-agent',
  port: 'metrics',
} as const;

/** Namespace the agent runs in. */
export function agentNamespace(props: Pick<ResolvedControllerProps, 'namespace'>): string {
  return `${props.namespace}${AGENT_NAMES.namespaceSuffix}`;
}

const AGENT_SELECTOR = { [APP_LABELS.name]: AGENT_NAMES.agent, [APP_LABELS.component]: 'node-agent' };

/** Small and fixed: one nvidia-smi run per scrape. */
const AGENT_RESOURCES = { requests: { cpu: '20m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } };

/**
 * Every object of the node agent: namespace, bundle copy, RBAC to list the node's pods, the DaemonSet
 * (GPU nodes only: GFD's `nvidia.com/gpu.present=true`) and a headless Service for scrape discovery.
 */
export function renderAgent(props: ResolvedControllerProps, labels: Record<string, string>, bundle?: ControllerBundleRef): KubeObject[] {
  const namespace = agentNamespace(props);
  const name = AGENT_NAMES.agent;
  const shipping = renderShipping({ ...props, namespace }, labels, bundle);
  const agentLabels = { ...labels, ...AGENT_SELECTOR };
  const container = {
    name: 'agent',
    // A prebuilt image runs its own entrypoint with the argument; the bundle runs on a glibc Node image.
    image: props.image ?? props.nodeAgentImage,
    imagePullPolicy: 'IfNotPresent',
    ...(shipping.command ? { command: shipping.command } : {}),
    args: [AGENT_COMMAND],
    env: [
      { name: AGENT_ENV.nodeName, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } },
      { name: AGENT_ENV.port, value: String(AGENT_DEFAULTS.port) },
      { name: AGENT_ENV.logLevel, value: props.logLevel },
      // The NVIDIA container toolkit mounts nvidia-smi and the driver's utility libraries, no device.
      { name: 'NVIDIA_VISIBLE_DEVICES', value: 'all' },
      { name: 'NVIDIA_DRIVER_CAPABILITIES', value: 'utility' },
    ],
    ports: [{ name: AGENT_NAMES.port, containerPort: AGENT_DEFAULTS.port, protocol: 'TCP' }],
    livenessProbe: { httpGet: { path: '/healthz', port: AGENT_NAMES.port }, periodSeconds: 20, timeoutSeconds: 2, failureThreshold: 3 },
    resources: AGENT_RESOURCES,
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: 1000,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    volumeMounts: shipping.volumeMounts,
  };
  const daemonSet: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace, labels: agentLabels },
    spec: {
      selector: { matchLabels: AGENT_SELECTOR },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } },
      template: {
        metadata: { labels: agentLabels, ...(shipping.podAnnotations ? { annotations: shipping.podAnnotations } : {}) },
        spec: {
          serviceAccountName: name,
          hostPID: true,
          enableServiceLinks: false,
          nodeSelector: { [GFD.present]: 'true' },
          // GPU nodes are often tainted for GPU work; the agent must run on every one of them.
          tolerations: [{ operator: 'Exists' }],
          priorityClassName: 'system-node-critical',
          ...(shipping.initContainers.length
            ? { initContainers: shipping.initContainers.map((c) => ({ ...c, imagePullPolicy: 'IfNotPresent', resources: AGENT_RESOURCES, securityContext: container.securityContext })) }
            : {}),
          containers: [container],
          volumes: shipping.volumes,
        },
      },
    },
  };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { ...labels, [POD_SECURITY_ENFORCE_LABEL]: 'privileged' } } },
    ...shipping.objects,
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels },
      // Only names: the agent lists the pods of its node to label series with namespace, pod and container.
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
    daemonSet,
    {
      apiVersion: 'v1', kind: 'Service', metadata: { name, namespace, labels },
      // Headless: Prometheus scrapes every agent (endpoints role), not one behind a virtual IP.
      spec: { clusterIP: 'None', selector: AGENT_SELECTOR, ports: [{ name: AGENT_NAMES.port, port: AGENT_DEFAULTS.port, targetPort: AGENT_NAMES.port }] },
    },
  ];
}

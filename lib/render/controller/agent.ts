/**
 * The node agent (lib/runtime/agent/): a DaemonSet on GPU nodes that runs the node side of `hard`
 * isolation (an MPS control daemon per share, and the device plugin through which the kubelet gives
 * containers their GPUs, daemon and limits, as CDI devices the container runtime applies) and exports per-pod GPU usage for the recommender. It runs
 * in a namespace of its own because it is privileged (it starts the daemons, which switch to the
 * pods' users and mount each share's /dev/shm) and shares the host PID namespace (nvidia-smi and MPS
 * report host pids), which the controller namespace's "restricted" Pod Security level forbids; that
 * namespace enforces "privileged" and holds nothing else. Pods that use shares need nothing of that:
 * the kubelet adds their devices and mounts. The agent travels in a bundle of its own (a ConfigMap in
 * its namespace).
 */
import { posix } from 'node:path';
import { KubeObject } from '../../k8s/object';
import { APP_LABELS, POD_SECURITY_ENFORCE_LABEL } from '../../k8s/labels';
import { GROUP } from '../../model/group';
import { GFD } from '../../model/metadata-keys';
import { AGENT_DEFAULTS, AGENT_ENV } from '../../contract/agent';
import { ResolvedControllerProps } from './props';
import { AGENT_PROGRAM, ControllerBundleRef, renderShipping } from './shipping';

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

/**
 * No CPU limit: the share daemons start in the agent's container, and a throttled one stalls its pod's
 * GPU work. With `nodeAgentDaemonCgroup` (the default) each daemon and its servers move to a cgroup of
 * their own and count there; without it they count here, one per GPU pod of the node, hence the room.
 * The agent alone needs little: one nvidia-smi run per scrape and per backstop poll.
 */
const AGENT_RESOURCES = { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '2Gi' } };
/** The unpack init container only copies the bundle. */
const INIT_RESOURCES = { requests: { cpu: '20m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } };

/**
 * Every object of the node agent: namespace, bundle copy, RBAC to list the node's pods, the DaemonSet
 * (GPU nodes only: GFD's `nvidia.com/gpu.present=true`) and a headless Service for scrape discovery.
 */
export function renderAgent(props: ResolvedControllerProps, labels: Record<string, string>, bundle?: ControllerBundleRef): KubeObject[] {
  const namespace = agentNamespace(props);
  const name = AGENT_NAMES.agent;
  const shipping = renderShipping({ ...props, namespace }, labels, bundle, AGENT_PROGRAM);
  const agentLabels = { ...labels, ...AGENT_SELECTOR };
  const container = {
    name: 'agent',
    // A prebuilt image runs the agent's file; the bundle runs on a glibc Node image.
    image: props.image ?? props.nodeAgentImage,
    imagePullPolicy: 'IfNotPresent',
    command: shipping.command,
    env: [
      { name: AGENT_ENV.nodeName, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } },
      { name: AGENT_ENV.port, value: String(AGENT_DEFAULTS.port) },
      { name: AGENT_ENV.logLevel, value: props.logLevel },
      // The NVIDIA container toolkit mounts nvidia-smi, nvidia-cuda-mps-control and the driver's libraries.
      { name: 'NVIDIA_VISIBLE_DEVICES', value: 'all' },
      { name: 'NVIDIA_DRIVER_CAPABILITIES', value: 'compute,utility' },
      { name: AGENT_ENV.mpsDir, value: AGENT_DEFAULTS.mpsDir },
      { name: AGENT_ENV.pluginDir, value: AGENT_DEFAULTS.pluginDir },
      { name: AGENT_ENV.cdiDir, value: AGENT_DEFAULTS.cdiDir },
      { name: AGENT_ENV.podResourcesSocket, value: AGENT_DEFAULTS.podResourcesSocket },
      { name: AGENT_ENV.driverRoot, value: AGENT_DEFAULTS.driverRoot },
      { name: AGENT_ENV.driverRootMount, value: AGENT_DEFAULTS.driverRootMount },
      ...(props.nodeAgentDaemonCgroup
        ? [
            { name: AGENT_ENV.mpsDaemonCgroup, value: AGENT_DEFAULTS.daemonCgroupMount },
            { name: AGENT_ENV.hostCgroup, value: AGENT_DEFAULTS.hostCgroupMount },
            { name: AGENT_ENV.mpsDaemonCgroupName, value: posix.basename(props.nodeAgentDaemonCgroup) },
          ]
        : []),
    ],
    ports: [{ name: AGENT_NAMES.port, containerPort: AGENT_DEFAULTS.port, protocol: 'TCP' }],
    livenessProbe: { httpGet: { path: '/healthz', port: AGENT_NAMES.port }, periodSeconds: 20, timeoutSeconds: 2, failureThreshold: 3 },
    // Ready once the kubelet has the share's device plugin: until then it refuses pods asking for a share.
    readinessProbe: { httpGet: { path: '/readyz', port: AGENT_NAMES.port }, periodSeconds: 2, timeoutSeconds: 2 },
    resources: AGENT_RESOURCES,
    securityContext: { privileged: true, readOnlyRootFilesystem: true },
    volumeMounts: [
      ...shipping.volumeMounts,
      // Same paths inside and out: the device plugin hands the kubelet host paths it made here.
      { name: 'mps', mountPath: AGENT_DEFAULTS.mpsDir },
      { name: 'device-plugins', mountPath: AGENT_DEFAULTS.pluginDir },
      // The DRA door: its registration socket where the kubelet's plugin watcher looks, its service socket beside.
      { name: 'plugins-registry', mountPath: AGENT_DEFAULTS.pluginRegistryDir },
      { name: 'dra-plugin', mountPath: AGENT_DEFAULTS.draPluginDir },
      // The CDI specs it writes for the container runtime, and the kubelet's PodResources socket,
      // through which it learns which pod holds which device ids.
      { name: 'cdi', mountPath: AGENT_DEFAULTS.cdiDir },
      { name: 'pod-resources', mountPath: posix.dirname(AGENT_DEFAULTS.podResourcesSocket) },
      // Where it finds the driver's libraries, to mount them into the shares' containers.
      { name: 'driver-root', mountPath: AGENT_DEFAULTS.driverRootMount, readOnly: true, mountPropagation: 'HostToContainer' },
      // The host's cgroup folder for the daemons, away from the container's own /sys/fs/cgroup (a
      // mount point there would be a cgroup made inside the agent's).
      // The host's cgroup mounts, all of them (a hostPath is bound recursively): on a cgroup v1 or
      // hybrid node each daemon leaves the container's v1 cgroups too (the container's own
      // /sys/fs/cgroup shows only the container's cgroup of each hierarchy).
      ...(props.nodeAgentDaemonCgroup
        ? [
            { name: 'daemon-cgroup', mountPath: AGENT_DEFAULTS.daemonCgroupMount },
            { name: 'host-cgroup', mountPath: AGENT_DEFAULTS.hostCgroupMount },
          ]
        : []),
    ],
  };
  const hostVolumes = [
    { name: 'mps', hostPath: { path: AGENT_DEFAULTS.mpsDir, type: 'DirectoryOrCreate' } },
    { name: 'device-plugins', hostPath: { path: AGENT_DEFAULTS.pluginDir, type: 'Directory' } },
    { name: 'plugins-registry', hostPath: { path: AGENT_DEFAULTS.pluginRegistryDir, type: 'DirectoryOrCreate' } },
    { name: 'dra-plugin', hostPath: { path: AGENT_DEFAULTS.draPluginDir, type: 'DirectoryOrCreate' } },
    { name: 'cdi', hostPath: { path: AGENT_DEFAULTS.cdiDir, type: 'DirectoryOrCreate' } },
    { name: 'pod-resources', hostPath: { path: posix.dirname(AGENT_DEFAULTS.podResourcesSocket), type: 'Directory' } },
    { name: 'driver-root', hostPath: { path: AGENT_DEFAULTS.driverRoot, type: 'Directory' } },
    // The kubelet makes the folder (a mkdir in cgroupfs makes the cgroup).
    ...(props.nodeAgentDaemonCgroup
      ? [
          { name: 'daemon-cgroup', hostPath: { path: props.nodeAgentDaemonCgroup, type: 'DirectoryOrCreate' } },
          { name: 'host-cgroup', hostPath: { path: '/sys/fs/cgroup', type: 'Directory' } },
        ]
      : []),
  ];
  const initSecurity = {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    runAsUser: 1000,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
  const daemonSet: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    // Its pods are replaced only when their node is drained (OnDelete, below): a Pulumi `up` that
    // waited for the rollout of a new bundle would wait for every node's drain.
    metadata: { name, namespace, labels: agentLabels, annotations: { 'pulumi.com/skipAwait': 'true' } },
    spec: {
      selector: { matchLabels: AGENT_SELECTOR },
      // A new agent replaces the share daemons, which ends every running pod's GPU clients on the node:
      // agents are replaced when their node is drained (delete the agent pod), not by a rollout.
      updateStrategy: { type: 'OnDelete' },
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
            ? {
                initContainers: shipping.initContainers.map((c) => ({
                  ...c,
                  imagePullPolicy: 'IfNotPresent',
                  resources: INIT_RESOURCES,
                  securityContext: initSecurity,
                })),
              }
            : {}),
          containers: [container],
          volumes: [...shipping.volumes, ...hostVolumes],
        },
      },
    },
  };
  return [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace, labels: { ...labels, [POD_SECURITY_ENFORCE_LABEL]: 'privileged' } },
    },
    ...shipping.objects,
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name, labels },
      // The pods of its node: to label series, and to read the record of the pod the kubelet names at PreStartContainer.
      // Its GPUs' status: the IsolationReady condition (a node's agent can write any GPU's status;
      // RBAC cannot scope by node, as the kubelet's NodeRestriction does for Nodes).
      rules: [
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
        { apiGroups: [GROUP], resources: ['gpus/status'], verbs: ['patch'] },
        // Warnings on pods whose processes the backstop stopped.
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        // Whether its node's pool delivers by DRA (its claims and slice: the install's `dra` role, dra.ts).
        { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
        { apiGroups: [GROUP], resources: ['gpupools'], verbs: ['get'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
    daemonSet,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace, labels },
      // Headless: Prometheus scrapes every agent (endpoints role), not one behind a virtual IP.
      spec: {
        clusterIP: 'None',
        selector: AGENT_SELECTOR,
        ports: [{ name: AGENT_NAMES.port, port: AGENT_DEFAULTS.port, targetPort: AGENT_NAMES.port }],
      },
    },
  ];
}

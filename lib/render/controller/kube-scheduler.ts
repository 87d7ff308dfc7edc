/**
 * Our kube-scheduler instance: the official kube-scheduler runs as a second container of every
 * controller pod, with one profile (SCHEDULER_NAME) that asks the controller's extender on loopback
 * which nodes have room for a pod's GPU share and binds through it. Its own leader election makes one
 * scheduler, hence one extender, place shares at a time.
 */
import { createHash } from 'crypto';
import { stringify } from 'yaml';
import { KubeObject } from '../../k8s/object';
import { CONTROLLER_ENV_DEFAULTS, CONTROLLER_PATHS, EXTENDER_HTTP_TIMEOUT_SECONDS, EXTENDER_VERBS } from '../../contract/env';
import { CONTROLLER_NAMES, KUBE_SCHEDULER_IMAGE, PORT_NAMES, SCHEDULER_NAME } from '../../contract/object-names';
import { SHARE_RESOURCE } from '../../model/metadata-keys';
import { ResolvedControllerProps } from './props';

/** kube-scheduler's HTTPS port for /healthz, /readyz and /metrics (its default, passed explicitly). */
export const KUBE_SCHEDULER_SECURE_PORT = 10259;

/** Key of the configuration in the ConfigMap, and where the container reads it. */
export const SCHEDULER_CONFIG_KEY = 'config.yaml';
const SCHEDULER_CONFIG_DIR = '/etc/tensor-fusion-scheduler';
const CONFIG_VOLUME = 'scheduler-config';

/** One entry of `extenders` (kubescheduler.config.k8s.io/v1 Extender). */
export type SchedulerExtender = {
  /** Base URL of the extender (the controller on loopback). */
  urlPrefix: string;
  /** Path, under urlPrefix, of the filter call. */
  filterVerb: string;
  /** Path of the prioritize call. */
  prioritizeVerb: string;
  /** Weight of the extender's scores. */
  weight: number;
  /** Path of the bind call. */
  bindVerb: string;
  /** Whether the extender is called over HTTPS. */
  enableHTTPS: boolean;
  /** Whether the extender is sent node names only (it caches nodes). */
  nodeCacheCapable: boolean;
  /** Timeout of each call, as a duration such as `5s`. */
  httpTimeout: string;
  /** Whether scheduling goes on when the extender cannot be reached. */
  ignorable: boolean;
};

/** The KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) the scheduler container runs. */
export type KubeSchedulerConfiguration = {
  /** Always `kubescheduler.config.k8s.io/v1`. */
  apiVersion: 'kubescheduler.config.k8s.io/v1';
  /** Always `KubeSchedulerConfiguration`. */
  kind: 'KubeSchedulerConfiguration';
  /** The scheduler's own leader election, through a Lease. */
  leaderElection: {
    /** Whether leader election runs. */
    leaderElect: boolean;
    /** Always `leases`. */
    resourceLock: 'leases';
    /** Namespace of the Lease. */
    resourceNamespace: string;
    /** Name of the Lease. */
    resourceName: string;
  };
  /** Percent of feasible nodes to score. */
  percentageOfNodesToScore: number;
  /** The scheduler profiles: one, the schedulerName GPU pods use. */
  profiles: {
    /** The schedulerName pods set to be placed by this profile. */
    schedulerName: string;
    /** Plugin arguments: NodeResourcesFit ignores the share resource. */
    pluginConfig: {
      /** The plugin the arguments are for. */
      name: string;
      /** Its arguments (here NodeResourcesFitArgs). */
      args: Record<string, unknown>;
    }[];
  }[];
  /** The extenders asked: the controller's. */
  extenders: SchedulerExtender[];
};

/**
 * The scheduler configuration for a controller in `namespace` whose extender listens on
 * 127.0.0.1:`extenderPort`. No `clientConnection`: in the pod the in-cluster ServiceAccount is used.
 */
export function renderSchedulerConfiguration(
  namespace: string,
  extenderPort: number = CONTROLLER_ENV_DEFAULTS.extenderPort,
): KubeSchedulerConfiguration {
  return {
    apiVersion: 'kubescheduler.config.k8s.io/v1',
    kind: 'KubeSchedulerConfiguration',
    leaderElection: {
      leaderElect: true,
      resourceLock: 'leases',
      resourceNamespace: namespace,
      resourceName: CONTROLLER_NAMES.schedulerLease,
    },
    // The extender chooses among the feasible nodes the scheduler hands it. Below 100 the scheduler
    // stops looking after a sample of a large cluster, and the pool's placement mode (e.g.
    // MinFragmentation) would only ever compare the nodes in that sample.
    percentageOfNodesToScore: 100,
    profiles: [
      {
        schedulerName: SCHEDULER_NAME,
        // The extender places shares; the share resource only carries a container's GPU, MPS daemon and
        // limits from the agent to the kubelet, which admits the pod only where the agent serves it.
        pluginConfig: [{ name: 'NodeResourcesFit', args: { ignoredResources: [SHARE_RESOURCE] } }],
      },
    ],
    extenders: [
      {
        urlPrefix: `http://127.0.0.1:${extenderPort}${CONTROLLER_PATHS.extender}`,
        filterVerb: EXTENDER_VERBS.filter,
        prioritizeVerb: EXTENDER_VERBS.prioritize,
        // Only a DRA pod's nodes are scored (filter leaves one node for any other pod): 10 x 100 x 10
        // for the node the pool's mode chooses outweighs the in-tree scores (each 0..100 times a small
        // weight), so that kube-scheduler's CPU and memory spreading cannot trade placement quality away.
        weight: 100,
        bindVerb: EXTENDER_VERBS.bind,
        // Loopback inside the pod: nothing crosses the network.
        enableHTTPS: false,
        // The extender has its own node cache (informers): the scheduler sends node names only.
        nodeCacheCapable: true,
        httpTimeout: `${EXTENDER_HTTP_TIMEOUT_SECONDS}s`,
        // Not ignorable: without the extender a GPU pod must wait, not be placed blind.
        ignorable: false,
      },
    ],
  };
}

/** The ConfigMap holding the configuration, and its checksum for the pod template. */
export function renderSchedulerConfigMap(
  props: ResolvedControllerProps,
  labels: Record<string, string>,
): { configMap: KubeObject; checksum: string } {
  const text = stringify(renderSchedulerConfiguration(props.namespace));
  return {
    configMap: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CONTROLLER_NAMES.schedulerConfigMap, namespace: props.namespace, labels },
      data: { [SCHEDULER_CONFIG_KEY]: text },
    },
    checksum: createHash('sha256').update(text).digest('hex'),
  };
}

function probe(path: string, periodSeconds: number, failureThreshold: number): object {
  // HTTPS with kube-scheduler's self-signed certificate (the kubelet does not verify it); these paths
  // are in its --authorization-always-allow-paths, so the anonymous kubelet needs no RBAC.
  return { httpGet: { path, port: PORT_NAMES.scheduler, scheme: 'HTTPS' }, periodSeconds, timeoutSeconds: 2, failureThreshold };
}

/** The scheduler container, without resources and securityContext (the pod gives every container the same). */
export function schedulerContainer(props: ResolvedControllerProps): Record<string, unknown> {
  return {
    name: 'scheduler',
    image: `${KUBE_SCHEDULER_IMAGE}:${props.schedulerVersion}`,
    imagePullPolicy: 'IfNotPresent',
    // --bind-address keeps its default (every interface, so the pod IP): the kubelet probes the pod
    // IP, which a 127.0.0.1 bind would refuse. The NetworkPolicy admits no other traffic to this port.
    command: ['kube-scheduler', `--config=${SCHEDULER_CONFIG_DIR}/${SCHEDULER_CONFIG_KEY}`, `--secure-port=${KUBE_SCHEDULER_SECURE_PORT}`],
    ports: [{ name: PORT_NAMES.scheduler, containerPort: KUBE_SCHEDULER_SECURE_PORT, protocol: 'TCP' }],
    // /healthz fails when the lease holder can no longer renew, so a wedged leader is restarted.
    livenessProbe: probe('/healthz', 10, 3),
    // Standby replicas are ready too: kube-scheduler syncs its caches before it seeks the lease.
    readinessProbe: probe('/readyz', 5, 2),
    volumeMounts: [{ name: CONFIG_VOLUME, mountPath: SCHEDULER_CONFIG_DIR, readOnly: true }],
  };
}

/** The volume of the configuration ConfigMap. */
export const SCHEDULER_CONFIG_VOLUME = {
  name: CONFIG_VOLUME,
  configMap: { name: CONTROLLER_NAMES.schedulerConfigMap, defaultMode: 0o444 },
};

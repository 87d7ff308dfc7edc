/**
 * The node agent's contract: the environment it reads, its port, and the metrics it exports (names,
 * labels, units). The DaemonSet renderer (lib/render/controller/agent.ts), the agent (lib/runtime/agent) and the
 * recommender's PromQL (lib/runtime/autoscale/) all import these; README.md documents them.
 */
import { DRA_DRIVER } from '../model/dra';

/** Environment variables of the agent. */
export const AGENT_ENV = {
  /** Node the agent runs on (downward API spec.nodeName): only that node's pods are resolved. */
  nodeName: 'NODE_NAME',
  /** Port of /metrics and /healthz. */
  port: 'AGENT_PORT',
  /** Path of nvidia-smi. */
  nvidiaSmi: 'NVIDIA_SMI',
  /** Root of /proc where nvidia-smi's pids can be looked up: the DaemonSet shares the host PID namespace. */
  procRoot: 'PROC_ROOT',
  logLevel: 'LOG_LEVEL',
  /** `on` (default): run MPS daemons and serve the share resource to the kubelet; `off`: metrics only. */
  isolation: 'NODE_ISOLATION',
  /** Path of nvidia-cuda-mps-control. */
  mpsControl: 'MPS_CONTROL',
  /** Host folder of the shares' MPS folders, mounted at the same path in the agent. */
  mpsDir: 'MPS_DIR',
  /** `true` (default): each daemon gets its share's own /dev/shm (needs mount rights: the agent is privileged). */
  mpsShmIsolation: 'MPS_SHM_ISOLATION',
  /**
   * A cgroup v2 folder (the host's, mounted into the agent) under which each share's daemon gets a
   * cgroup of its own, so that it outlives the agent's container; unset: the daemons stay in the agent's.
   */
  mpsDaemonCgroup: 'MPS_DAEMON_CGROUP',
  /**
   * Where the host's /sys/fs/cgroup is mounted in the agent: on a cgroup v1 or hybrid node each v1
   * hierarchy found under it gets a folder `MPS_DAEMON_CGROUP_NAME` for the daemons' cgroups too (the
   * container runtime finds a container's processes through their v1 cgroups there); unset: none.
   */
  hostCgroup: 'HOST_CGROUP',
  /** The daemons' folder in each cgroup v1 hierarchy (the last part of `nodeAgentDaemonCgroup`). */
  mpsDaemonCgroupName: 'MPS_DAEMON_CGROUP_NAME',
  /** The kubelet's device-plugin folder. */
  pluginDir: 'DEVICE_PLUGIN_DIR',
  /** The kubelet's plugin-watcher folder, where the DRA door's registration socket goes. */
  pluginRegistryDir: 'PLUGIN_REGISTRY_DIR',
  /** The DRA door's own folder, where the socket the kubelet calls goes. */
  draPluginDir: 'DRA_PLUGIN_DIR',
  /** Where the GPU device nodes are (the host's /dev). */
  devRoot: 'DEV_ROOT',
  /** Folder of the CDI specs the agent writes for the container runtime (one per delivered share). */
  cdiDir: 'CDI_DIR',
  /** The kubelet's PodResources socket: which pod holds which device ids. */
  podResourcesSocket: 'POD_RESOURCES_SOCKET',
  /** The NVIDIA driver's per-GPU folders (`<bus id>/information`: each GPU's UUID and device minor). */
  nvidiaProcDir: 'NVIDIA_PROC_DIR',
  /** Host folder the driver's libraries are found under (the host's `/`, or a driver container's root). */
  driverRoot: 'DRIVER_ROOT',
  /** Where that folder is mounted in the agent, to look for the libraries. */
  driverRootMount: 'DRIVER_ROOT_MOUNT',
} as const;

export const AGENT_DEFAULTS = {
  port: 9410,
  nvidiaSmi: 'nvidia-smi',
  procRoot: '/proc',
  isolation: 'on',
  mpsControl: 'nvidia-cuda-mps-control',
  mpsDir: '/run/tensor-fusion/mps',
  pluginDir: '/var/lib/kubelet/device-plugins',
  pluginRegistryDir: '/var/lib/kubelet/plugins_registry',
  draPluginDir: `/var/lib/kubelet/plugins/${DRA_DRIVER}`,
  devRoot: '/dev',
  cdiDir: '/var/run/cdi',
  podResourcesSocket: '/var/lib/kubelet/pod-resources/kubelet.sock',
  nvidiaProcDir: '/proc/driver/nvidia/gpus',
  driverRoot: '/',
  driverRootMount: '/driver-root',
  /** Where the DaemonSet mounts the host's daemon cgroup folder (the `nodeAgentDaemonCgroup` prop). */
  daemonCgroupMount: '/daemon-cgroup',
  /** Where the DaemonSet mounts the host's /sys/fs/cgroup (with `nodeAgentDaemonCgroup`), for its v1 hierarchies. */
  hostCgroupMount: '/host-cgroup',
  /** Devices advertised per GPU: how many containers may hold a share of one GPU at once. */
  slotsPerGpu: 64,
  /** Supervision round: daemons checked, shares of gone pods ended, GPU readiness written. */
  intervalMs: 5_000,
} as const;

/**
 * Label the agent adds to every series: its node's name. Keep it when scraping (no `node` target
 * label, or `honor_labels: true`): the dashboard joins usage to pools by it.
 */
export const AGENT_NODE_LABEL = 'node';

/** Labels of every per-pod series. `container` is the container name, or the runtime's id when unknown. */
export const POD_GPU_LABELS = ['namespace', 'pod', 'container', 'pod_uid', 'gpu_uuid', 'gpu_model'] as const;
export const GPU_LABELS = ['gpu_uuid', 'gpu_model'] as const;

/** Metric names; units are in the names, as Prometheus recommends. */
export const AGENT_METRICS = {
  /** Histogram, seconds: the agent's answers to the kubelet's device-plugin calls (method `Allocate`, `PreStartContainer`; outcome `ok`, `refused`). */
  devicePluginSeconds: 'tf_agent_device_plugin_seconds',
  /** Gauge, bytes: device memory used by the container's processes on the GPU (nvidia-smi --query-compute-apps). */
  vramUsed: 'tf_agent_pod_gpu_vram_used_bytes',
  /**
   * Gauge, TFLOPS, measured: the container's SM ratio (smUtilization) × the GPU's FP16 TFLOPS
   * (lib/model/gpu-catalog.ts). For a container of a share (an MPS client its share's daemon lists),
   * its pod's own MPS server's activity (pmon `sm`; the server found through the daemon's server
   * list) × the share's thread percentage × TFLOPS, at most the cap, split evenly over the pod's
   * containers on that GPU. Absent, never a 0 standing for "unknown", when pmon failed, the share's
   * daemon did not answer or pmon did not list its server, and for other MPS clients.
   */
  computeUsed: 'tf_agent_pod_gpu_compute_tflops',
  /**
   * Gauge, 0..1 of the GPU: SM utilisation of the container's processes (pmon `sm` / 100, summed, at
   * most 1); for a share's container, its server's activity × the share's thread percentage, split as
   * computeUsed is. Absent as computeUsed is.
   */
  smUtilization: 'tf_agent_pod_gpu_sm_utilization_ratio',
  /**
   * Gauge, TFLOPS, an ESTIMATE for MPS clients whose compute is not measured (no share's daemon lists
   * them): the activity of the GPU's MPS servers that no share's daemon lists × the GPU's TFLOPS,
   * split between those clients in proportion to their caps, each at most its cap.
   */
  computeEstimated: 'tf_agent_pod_gpu_compute_estimated_tflops',
  /** Gauge, TFLOPS: the container's compute cap on the GPU, its pod's MPS thread percentage × the GPU's TFLOPS. */
  computeCap: 'tf_agent_pod_gpu_compute_cap_tflops',
  /** Gauge: MPS server processes on each GPU (gpu_uuid, gpu_model); they belong to no pod and are not unattributed. */
  mpsServers: 'tf_agent_gpu_mps_servers',
  /** Gauge, TFLOPS: FP16 TFLOPS of each GPU of the node (0 when the model is not in the catalog). */
  gpuCapacity: 'tf_agent_gpu_capacity_tflops',
  /** Gauge: GPU processes whose pid belongs to no pod (host processes, or pods already gone); MPS servers excluded. */
  unattributed: 'tf_agent_unattributed_processes',
  /** Gauge, seconds: Unix time of the last collection (each scrape collects). */
  lastCollect: 'tf_agent_last_collect_timestamp_seconds',
  /** Gauge, 0 or 1: whether the GPU's MPS isolation is ready (gpu_uuid, gpu_model, reason: the IsolationReady condition's). */
  isolationReady: 'tf_agent_gpu_isolation_ready',
  /** Gauge: shares with an MPS control daemon on the node. */
  mpsShares: 'tf_agent_mps_shares',
  /** Counter: share daemons replaced after they died or stopped answering. */
  mpsRestarts: 'tf_agent_mps_daemon_restarts_total',
  /** Counter: failed nvidia-smi runs by query (`gpus`, `apps`, `pmon`). */
  collectErrors: 'tf_agent_collect_errors_total',
} as const;

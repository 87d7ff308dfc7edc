/**
 * The node agent's contract: the environment it reads, its port, and the metrics it exports (names,
 * labels, units). The DaemonSet renderer (lib/render/controller/agent.ts), the agent and the
 * recommender's PromQL (lib/runtime/autoscale/) all import these; README.md documents them.
 */

/** `node controller.js agent` runs the agent: it travels in the controller bundle (one ConfigMap, one digest). */
export const AGENT_COMMAND = 'agent';

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
} as const;

export const AGENT_DEFAULTS = {
  port: 9410,
  nvidiaSmi: 'nvidia-smi',
  procRoot: '/proc',
} as const;

/** Labels of every per-pod series. `container` is the container name, or the runtime's id when unknown. */
export const POD_GPU_LABELS = ['namespace', 'pod', 'container', 'pod_uid', 'gpu_uuid', 'gpu_model'] as const;
export const GPU_LABELS = ['gpu_uuid', 'gpu_model'] as const;

/** Metric names; units are in the names, as Prometheus recommends. */
export const AGENT_METRICS = {
  /** Gauge, bytes: device memory used by the container's processes on the GPU (nvidia-smi --query-compute-apps). */
  vramUsed: 'tf_agent_pod_gpu_vram_used_bytes',
  /**
   * Gauge, TFLOPS: SM utilisation of the container's processes (pmon, 0..1) × the GPU's FP16 TFLOPS
   * (lib/model/gpu-catalog.ts). Measured: absent for MPS clients (pmon credits their work to the MPS
   * server) and when pmon failed, never a 0 standing for "unknown".
   */
  computeUsed: 'tf_agent_pod_gpu_compute_tflops',
  /** Gauge, 0..1: SM utilisation of the container's processes on the GPU (pmon `sm` / 100); absent as computeUsed is. */
  smUtilization: 'tf_agent_pod_gpu_sm_utilization_ratio',
  /**
   * Gauge, TFLOPS, MPS clients only, an ESTIMATE: the GPU's MPS server activity (pmon `sm` of the
   * server) × the GPU's TFLOPS, split between the server's clients in proportion to their caps, each
   * at most its cap. NVML and DCGM credit all MPS work to the server, so no per-client figure exists.
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
  /** Counter: failed nvidia-smi runs by query (`gpus`, `apps`, `pmon`). */
  collectErrors: 'tf_agent_collect_errors_total',
} as const;

/**
 * The example platform, shared by the cdk8s and the Pulumi programs so that both build the same
 * objects: a default pool, an A100 and an H100 node, the WorkloadProfile and Deployment of
 * TensorFusion's documented example, the GPU quota of its namespace, and the three T9k Scheduler GPU
 * modes on two T9k nodes.
 */
import type { GpuWorkloadOptions } from '../lib/annotations';
import type { TensorFusionControllerProps } from '../lib/render/controller';
import type { GpuNodeProps } from '../lib/render/gpu-node';
import type { GpuPoolProps } from '../lib/render/gpu-pool';
import type { GpuResourceQuotaProps } from '../lib/render/gpu-resource-quota';
import type { WorkloadProfileProps } from '../lib/render/workload-profile';
import type { T9kGpuOptions } from '../lib/t9k';

export const NAMESPACE = 'ml';

/** The runtime controller with its defaults: two replicas, self-managed TLS, metrics on. */
export const controller: TensorFusionControllerProps = {};

export const pool: GpuPoolProps = {
  name: 'default-pool',
  isDefault: true,
  defaultQos: 'medium',
  placement: 'MinFragmentation',
  tflopsOversellRatio: 500,
};

export const nodes: Record<string, GpuNodeProps> = {
  'gpu-a100-0': { nodeName: 'gpu-a100-0', pools: ['default-pool'], gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' } },
  'gpu-h100-0': { nodeName: 'gpu-h100-0', pools: ['default-pool'], gpu: { model: 'NVIDIA-H100-80GB-HBM3', count: 8, memory: '80Gi' } },
  't9k-xgn-0': { nodeName: 't9k-xgn-0', t9k: { accelerator: 'nvidia-gpu', allocMode: 'xgn' } },
  't9k-sgn-0': { nodeName: 't9k-sgn-0', t9k: { accelerator: 'nvidia-gpu', allocMode: 'sgn' } },
};

/** TensorFusion's documented WorkloadProfile example, under the name its Deployment example references. */
export const profile: WorkloadProfileProps = {
  name: 'default-profile',
  namespace: NAMESPACE,
  resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } },
  replicas: 1,
  isLocalGpu: true,
  poolName: 'default-pool',
  qos: 'medium',
  gpuCount: 1,
  gpuModel: 'A100',
  autoScalingConfig: {},
};

/**
 * The GPU quota of the example namespace: room for the example's 16 GPUs shared many times over, and
 * at most one GPU's worth (80Gi) per GPU of a pod.
 */
export const quota: GpuResourceQuotaProps = {
  name: 'ml-quota',
  namespace: NAMESPACE,
  total: { requests: { tflops: '5000', vram: '1Ti' }, limits: { tflops: '20000', vram: '1Ti' }, maxWorkers: 200 },
  single: { maxRequests: { vram: '80Gi' }, maxLimits: { vram: '80Gi' }, maxGpuCount: 8 },
};

/** The annotations of TensorFusion's documented example Deployment, as typed options. */
export const pytorchGpu: GpuWorkloadOptions = {
  pool: 'default-pool',
  injectContainers: ['python'],
  replicas: 1,
  tflopsLimit: '20',
  tflopsRequest: '10',
  vramLimit: '4Gi',
  vramRequest: '4Gi',
  qos: 'medium',
  workload: 'pytorch-example',
  generateWorkload: true,
  workloadProfile: 'default-profile',
  isLocalGpu: true,
  gpuCount: 1,
};

const appLabels = { app: 'pytorch-example' };

/** The Deployment before it becomes a GPU workload. */
export const pytorchDeployment = {
  apiVersion: 'apps/v1' as const,
  kind: 'Deployment' as const,
  metadata: { name: 'pytorch-example', namespace: NAMESPACE, labels: appLabels },
  spec: {
    replicas: 1,
    selector: { matchLabels: appLabels },
    template: {
      metadata: { labels: appLabels },
      spec: {
        containers: [{ name: 'python', image: 'pytorch/pytorch:2.4.1-cuda12.1-cudnn9-runtime', command: ['sleep', 'infinity'] }],
      },
    },
  },
};

/** The three T9k NVIDIA GPU modes, each as a Pod with the names, images and group of T9k's examples. */
export const t9kPods: { name: string; image: string; container: string; mode: T9kGpuOptions; resources?: object }[] = [
  {
    name: 'exclusive-gpu',
    image: 'example.io/example-image:latest',
    container: 'exclusive',
    mode: { mode: 'exclusive-gpu', gpus: 2, groupName: 'gpu-usage' },
  },
  {
    name: 'shared-gpu',
    image: 'example.io/example-image:latest',
    container: 'shared',
    mode: { mode: 'shared-gpu', percent: 30, groupName: 'gpu-usage' },
    resources: { requests: { cpu: '500m', memory: '200Mi' } },
  },
  { name: 'exclusive-node', image: 'nginx', container: 'exclusive', mode: { mode: 'exclusive-node', groupName: 'gpu-usage' } },
];

/** A bare Pod manifest for one of {@link t9kPods}. */
export function t9kPod(p: (typeof t9kPods)[number]) {
  return {
    apiVersion: 'v1' as const,
    kind: 'Pod' as const,
    metadata: { name: p.name, namespace: NAMESPACE },
    spec: { containers: [{ name: p.container, image: p.image, ...(p.resources ? { resources: p.resources } : {}) }] },
  };
}

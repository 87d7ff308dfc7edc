/**
 * Realistic sample objects of every kind. Tests reuse them, and `npm run check:upstream` validates
 * them against the upstream CRDs to prove wire compatibility.
 */
import type { GPU, GPUNode, GPUPool, GPUResourceQuota, TensorFusionWorkload, WorkloadProfile } from '../../lib/api';
import { API_VERSION } from '../../lib/model/group';
import { DEFAULT_POOL_ANNOTATION, GFD } from '../../lib/model/metadata-keys';
import type { WorkloadProfileSpec } from '../../lib/api/workload-profile';
import type { GpuPoolProps } from '../../lib/render/gpu-pool';

/** The WorkloadProfile spec of TensorFusion's documented example. */
export function seedWorkloadProfileSpec(): WorkloadProfileSpec {
  return {
    resources: {
      requests: { tflops: '5', vram: '3Gi' },
      limits: { tflops: '15', vram: '3Gi' },
    },
    replicas: 1,
    isLocalGPU: true,
    poolName: 'default-pool',
    qos: 'medium',
    gpuCount: 1,
    gpuModel: 'A100',
    autoScalingConfig: {},
  };
}

/** A WorkloadProfile spec that sets every field of the schema. */
export function fullWorkloadProfileSpec(): WorkloadProfileSpec {
  const prediction = { enable: true, historyDataPeriod: '7d', model: 'seasonal-naive' as const, predictionPeriod: '1h' };
  return {
    ...seedWorkloadProfileSpec(),
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: GFD.product, operator: 'In', values: ['NVIDIA-A100-SXM4-80GB'] }] }],
      },
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 50, preference: { matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-a'] }] } },
      ],
    },
    autoScalingConfig: {
      autoSetLimits: {
        enable: true,
        evaluationPeriod: '30s',
        extraTFlopsBufferRatio: '0.1',
        ignoredDeltaRange: '0.05',
        maxRatioToRequests: '5.0',
        prediction,
        scaleUpStep: '0.2',
        targetResource: 'all' as const,
      },
      autoSetReplicas: {
        enable: true,
        evaluationPeriod: '10m',
        scaleDownCoolDownTime: '5m',
        scaleDownStep: '0.2',
        scaleUpCoolDownTime: '1m',
        scaleUpStep: '0.5',
        targetTFlopsOfLimits: '0.8',
      },
      autoSetRequests: {
        aggregationPeriod: '1h',
        enable: true,
        evaluationPeriod: '7d',
        extraBufferRatio: '0.1',
        percentileForAutoRequests: '0.95',
        prediction,
        targetResource: 'all' as const,
      },
    },
  };
}

export function exampleGpuPool(name = 'default-pool'): GPUPool {
  return {
    apiVersion: API_VERSION,
    kind: 'GPUPool',
    metadata: { name, annotations: { [DEFAULT_POOL_ANNOTATION]: 'true' } },
    spec: {
      nodeManagerConfig: {
        nodeSelector: { nodeSelectorTerms: [{ matchExpressions: [{ key: GFD.present, operator: 'In', values: ['true'] }] }] },
      },
      capacityConfig: {
        minResources: { tflops: '100', vram: '80Gi' },
        maxResources: { tflops: '5000', vram: '2Ti', cpu: '512', memory: '4Ti' },
        oversubscription: { tflopsOversellRatio: 500, vramExpandToHostMem: 50, vramExpandToHostDisk: 70 },
        gpuTflops: { A100: '312', H100: '989' },
      },
      qosConfig: { defaultQoS: 'medium' },
      defaultUsingLocalGPU: true,
      placement: { mode: 'MinFragmentation' },
      componentConfig: {
        worker: {
          image: 'tensorfusion/tensor-fusion-worker:latest',
          podTemplate: { spec: { containers: [{ name: 'worker', resources: { requests: { cpu: '1' } } }] } },
        },
      },
    },
  };
}

export function exampleGpuNode(name = 'gpu-node-a100'): GPUNode {
  return {
    apiVersion: API_VERSION,
    kind: 'GPUNode',
    metadata: { name },
    spec: { manageMode: 'AutoSelect' },
    status: {
      phase: 'Running',
      totalGPUs: 8,
      managedGPUs: 8,
      managedGPUDeviceIDs: ['GPU-0a1b2c3d-0000-0000-0000-000000000000'],
      totalTFlops: '2496',
      totalVRAM: '640Gi',
      availableTFlops: '2486',
      availableVRAM: '636Gi',
      virtualTFlops: '12480',
      virtualVRAM: '640Gi',
      virtualAvailableTFlops: '12470',
      virtualAvailableVRAM: '636Gi',
      totalGPUPods: 1,
      allocatedPods: {
        'gpu-0a1b2c3d': [
          {
            name: 'pytorch-example-0',
            namespace: 'ml',
            uid: '7f1d2c3b-0000-0000-0000-000000000000',
            requests: { tflops: '10', vram: '4Gi' },
            limits: { tflops: '20', vram: '4Gi' },
            qos: 'medium',
          },
        ],
      },
      conditions: [
        { type: 'Ready', status: 'True', reason: 'GPUsDiscovered', message: '8 GPUs', lastTransitionTime: '2025-01-31T12:00:00Z' },
      ],
    },
  };
}

export function exampleGpu(name = 'gpu-0a1b2c3d'): GPU {
  return {
    apiVersion: API_VERSION,
    kind: 'GPU',
    metadata: { name },
    status: {
      uuid: 'GPU-0a1b2c3d-0000-0000-0000-000000000000',
      index: 0,
      gpuModel: 'A100',
      vendor: 'NVIDIA',
      phase: 'Running',
      capacity: { tflops: '312', vram: '80Gi' },
      available: { tflops: '302', vram: '76Gi' },
      nodeSelector: { 'kubernetes.io/hostname': 'gpu-node-a100' },
      usedBy: 'tensor-fusion',
      runningApps: [{ name: 'pytorch-example', namespace: 'ml', count: 1 }],
      message: '',
    },
  };
}

export function exampleWorkloadProfile(name = 'default-profile', namespace = 'ml'): WorkloadProfile {
  return { apiVersion: API_VERSION, kind: 'WorkloadProfile', metadata: { name, namespace }, spec: fullWorkloadProfileSpec() };
}

export function exampleTensorFusionWorkload(name = 'pytorch-example', namespace = 'ml'): TensorFusionWorkload {
  return {
    apiVersion: API_VERSION,
    kind: 'TensorFusionWorkload',
    metadata: { name, namespace },
    spec: { ...seedWorkloadProfileSpec(), replicas: 2, isLocalGPU: false },
    status: {
      phase: 'Running',
      workerCount: 2,
      readyWorkers: 2,
      conditions: [
        { type: 'Ready', status: 'True', reason: 'WorkersReady', message: '2/2 workers ready', lastTransitionTime: '2025-01-31T12:00:00Z' },
      ],
    },
  };
}

/** A GPUResourceQuota that sets every field of the schema, with the status the controller writes. */
export function exampleGpuResourceQuota(name = 'ml-quota', namespace = 'ml'): GPUResourceQuota {
  const amounts = (tflops: string, vram: string) => ({ tflops, vram });
  return {
    apiVersion: API_VERSION,
    kind: 'GPUResourceQuota',
    metadata: { name, namespace },
    spec: {
      total: {
        requests: amounts('480', '192Gi'),
        limits: amounts('960', '192Gi'),
        maxWorkers: 16,
        alertThresholdPercent: 90,
      },
      single: { maxRequests: amounts('120', '48Gi'), maxLimits: amounts('240', '48Gi'), maxGPUCount: 4 },
    },
    status: {
      used: { requests: amounts('420', '96Gi'), limits: amounts('840', '96Gi'), workers: 6 },
      availablePercent: { requests: amounts('12.5', '50'), limits: amounts('12.5', '50'), workers: '62.5' },
      conditions: [
        { type: 'Ready', status: 'True', reason: 'UsageCounted', message: '6 workers', lastTransitionTime: '2025-01-31T12:00:00Z' },
        {
          type: 'AlertThresholdReached',
          status: 'False',
          reason: 'BelowThreshold',
          message: 'requests.tflops at 87.5% of 90%',
          lastTransitionTime: '2025-01-31T12:00:00Z',
        },
      ],
      lastUpdateTime: '2025-01-31T12:00:00Z',
    },
  };
}

/** One sample object of each kind. */
export function exampleObjects(): Array<GPUPool | GPUNode | GPU | WorkloadProfile | TensorFusionWorkload | GPUResourceQuota> {
  return [
    exampleGpuPool(),
    exampleGpuNode(),
    exampleGpu(),
    exampleWorkloadProfile(),
    exampleTensorFusionWorkload(),
    exampleGpuResourceQuota(),
  ];
}

/** GpuPool props that set every optional prop. */
export function fullGpuPoolProps(): GpuPoolProps {
  return {
    labels: { tier: 'gold' },
    annotations: { owner: 'platform' },
    isDefault: true,
    nodeSelector: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'gpu-type', operator: 'In' as const, values: ['a100', 'h100'] }] }],
    },
    defaultQos: 'high',
    placement: 'CompactFirst',
    isolation: 'shared',
    defaultUsingLocalGpu: true,
    tflopsOversellRatio: 300,
    vramExpandToHostMem: 50,
    vramExpandToHostDisk: 20,
    minResources: { tflops: '100', vram: '80Gi', cpu: '8', memory: '64Gi' },
    maxResources: { tflops: '1000', vram: '640Gi', cpu: '64', memory: '512Gi' },
    gpuTflops: { 'NVIDIA-A100-SXM4-80GB': '312' },
    growth: { gpusPerNode: 8, resource: 'example.com/gpu' },
    workerImage: 'registry.example.com/worker:1.0',
    workerPodTemplate: { spec: { priorityClassName: 'gpu-workers' } },
  };
}

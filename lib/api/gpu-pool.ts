/**
 * GPUPool (cluster-scoped): a set of GPU nodes shared by workloads, with its capacity,
 * oversubscription, default QoS and placement strategy. The pool used by pods that name none carries
 * the `DEFAULT_POOL_ANNOTATION` from lib/model/metadata-keys.ts (an annotation, as upstream, not a spec field).
 */
import { Type } from '@sinclair/typebox';
import { DEFAULT_ISOLATION_MODE, DEFAULT_PLACEMENT_MODE, ISOLATION_MODES, PLACEMENT_MODES, QOS_LEVELS } from '../model/rules';
import { DEFAULT_SHARE_DELIVERY, SHARE_DELIVERIES } from '../model/dra';
import { Bytes, Conditions, Cpu, Embedded, Int32, MapOf, NodeSelector, StringEnum, Tflops } from './common';
import type { GPUPoolSpecFields, GPUPoolStatusFields } from './generated/api-props';

/** Lifecycle of a pool, as upstream. */
export const POOL_PHASES = ['Pending', 'Running', 'Updating', 'Destroying', 'Unknown'] as const;
/** A pool phase. */
export type PoolPhase = (typeof POOL_PHASES)[number];

/** The resource a cloud's GPU nodes advertise, which growth placeholders ask for unless the pool names another. */
export const DEFAULT_GROWTH_RESOURCE = 'nvidia.com/gpu';
/** The most GPUs one new node may be said to bring (the largest cloud GPU machines have 16). */
export const MAX_GROWTH_GPUS_PER_NODE = 64;

/** Virtual TFLOPS as a percentage of physical TFLOPS when the pool sets none: 500, 5x (as upstream). */
export const DEFAULT_TFLOPS_OVERSELL_RATIO = 500;

const PoolResources = (description: string) =>
  Type.Optional(
    Type.Object(
      {
        tflops: Type.Optional(Tflops('FP16 TFLOPS.')),
        vram: Type.Optional(Bytes('GPU memory.')),
        cpu: Type.Optional(Cpu('CPU cores.')),
        memory: Type.Optional(Bytes('Host memory.')),
      },
      { description },
    ),
  );

/** The schema of the GPUPool spec (TypeBox), the source of its CRD schema, its type and its validation. */
export const GPUPoolSpec = Type.Object(
  {
    nodeManagerConfig: Type.Object(
      {
        nodeSelector: Type.Optional(NodeSelector),
        defaultIsolationMode: Type.Optional(
          StringEnum(ISOLATION_MODES, {
            description:
              'How nodes hold shares to their limits: hard (an MPS control daemon per share holds its VRAM and compute limits; the kubelet delivers the GPU and the daemon) ' +
              "or shared (no isolation: limits are advisory variables, and every admitted pod is warned). Upstream's soft and partitioned are not provided.",
            default: DEFAULT_ISOLATION_MODE,
          }),
        ),
        shareDelivery: Type.Optional(
          StringEnum(SHARE_DELIVERIES, {
            description:
              'How shares reach their pods (an extension of this package): DevicePlugin (the extended resource tensor-fusion.ai/share, placed by the scheduler extender) ' +
              "or DRA (a ResourceClaim per pod of the DeviceClass gpu.tensor-fusion.ai, allocated by kube-scheduler; Kubernetes 1.34+, needs hard isolation). A node's GPUs are delivered one way.",
            default: DEFAULT_SHARE_DELIVERY,
          }),
        ),
      },
      { description: 'Which nodes belong to the pool, and how they isolate shares.' },
    ),
    capacityConfig: Type.Optional(
      Type.Object(
        {
          minResources: PoolResources('Capacity the pool keeps even when idle.'),
          maxResources: PoolResources('Capacity the pool never exceeds.'),
          oversubscription: Type.Optional(
            Type.Object(
              {
                tflopsOversellRatio: Type.Optional(
                  Int32({
                    description: 'Virtual TFLOPS as a percentage of physical TFLOPS (500 = 5x).',
                    minimum: 100,
                    maximum: 100000,
                    default: DEFAULT_TFLOPS_OVERSELL_RATIO,
                  }),
                ),
                vramExpandToHostMem: Type.Optional(
                  Int32({ description: 'Percent of host memory usable as extra VRAM.', minimum: 0, maximum: 100 }),
                ),
                vramExpandToHostDisk: Type.Optional(
                  Int32({ description: 'Percent of host disk usable as extra VRAM.', minimum: 0, maximum: 100 }),
                ),
              },
              { description: 'How far allocations may exceed the physical GPUs.' },
            ),
          ),
          gpuTflops: Type.Optional(
            MapOf(
              Tflops('FP16 TFLOPS of one GPU of this model.'),
              "Extension (not upstream): FP16 TFLOPS per GPU model, overriding the controller's built-in table.",
            ),
          ),
        },
        { description: 'Capacity bounds and oversubscription.' },
      ),
    ),
    qosConfig: Type.Optional(
      Type.Object(
        {
          defaultQoS: Type.Optional(StringEnum(QOS_LEVELS, { description: 'QoS of workloads that set none.' })),
        },
        { description: 'Quality-of-service defaults.' },
      ),
    ),
    defaultUsingLocalGPU: Type.Optional(
      Type.Boolean({
        description:
          'Whether pods that do not say otherwise run on the GPU server. Unset means false here, as the TensorFusion annotation reference says, but true in the upstream code, so GpuPool always writes it.',
      }),
    ),
    placement: Type.Optional(
      Type.Object(
        {
          mode: Type.Optional(
            StringEnum(PLACEMENT_MODES, {
              description: 'Allocator strategy for GPU shares.',
              default: DEFAULT_PLACEMENT_MODE,
            }),
          ),
        },
        { description: 'Extension (not upstream, where it lives in SchedulingConfigTemplate): GPU placement.' },
      ),
    ),
    growth: Type.Optional(
      Type.Object(
        {
          resource: Type.String({
            description:
              'The extended resource the new nodes advertise for whole GPUs, which the placeholders ask for (e.g. nvidia.com/gpu).',
            minLength: 3,
          }),
          gpusPerNode: Int32({ description: 'GPUs one new node brings.', minimum: 1, maximum: MAX_GROWTH_GPUS_PER_NODE }),
        },
        {
          description:
            'Extension (not upstream): make the demand of shares that wait for GPU room visible to a node autoscaler (Karpenter, cluster-autoscaler), as placeholder pods asking for whole GPUs of new nodes (docs/growth.md).',
        },
      ),
    ),
    componentConfig: Type.Optional(
      Type.Object(
        {
          worker: Type.Optional(
            Type.Object(
              {
                image: Type.Optional(Type.String({ description: 'Image of the remote GPU worker.' })),
                podTemplate: Type.Optional(Embedded('Pod template merged into every remote worker pod.')),
              },
              { description: 'Remote-mode GPU worker pods.' },
            ),
          ),
        },
        { description: 'Components the pool runs.' },
      ),
    ),
  },
  { description: 'Desired state of the pool.' },
);
/** Desired state of a pool. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type GPUPoolSpec = GPUPoolSpecFields;

/** The schema of the GPUPool status (TypeBox), the source of its CRD schema, its type and its validation. */
export const GPUPoolStatus = Type.Object(
  {
    phase: StringEnum(POOL_PHASES, { description: 'Lifecycle phase.' }),
    conditions: Type.Optional(Conditions),
    totalNodes: Type.Optional(Int32({ description: 'Nodes in the pool.', minimum: 0 })),
    readyNodes: Int32({ description: 'Nodes ready to run GPU work.', minimum: 0 }),
    notReadyNodes: Int32({ description: 'Nodes not ready.', minimum: 0 }),
    totalGPUs: Type.Optional(Int32({ description: 'GPUs in the pool.', minimum: 0 })),
    readyGPUs: Type.Optional(Int32({ description: 'Extension (not upstream): GPUs that are Running.', minimum: 0 })),
    totalTFlops: Tflops('Physical TFLOPS of the pool.'),
    totalVRAM: Bytes('Physical VRAM of the pool.'),
    availableTFlops: Tflops('Physical TFLOPS not allocated.'),
    availableVRAM: Bytes('Physical VRAM not allocated.'),
    virtualTFlops: Tflops('TFLOPS after oversubscription.'),
    virtualVRAM: Bytes('VRAM after host expansion.'),
    virtualAvailableTFlops: Type.Optional(Tflops('Virtual TFLOPS not allocated.')),
    virtualAvailableVRAM: Type.Optional(Bytes('Virtual VRAM not allocated.')),
  },
  { description: 'Observed capacity and health of the pool.' },
);
/** Observed capacity and health of a pool. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type GPUPoolStatus = GPUPoolStatusFields;

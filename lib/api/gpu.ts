/**
 * GPU (cluster-scoped, status only): one physical device, reported by the node agent and updated by
 * the allocator as shares are assigned.
 */
import { Type } from '@sinclair/typebox';
import { Conditions, GpuAmounts, Int32, MapOf, StringEnum } from './common';
import type { GPUStatusFields } from './generated/api-props';

/** Lifecycle of a GPU, as upstream. */
export const GPU_PHASES = ['Pending', 'Provisioning', 'Running', 'Unknown', 'Destroying', 'Migrating'] as const;
/** A GPU phase. */
export type GpuPhase = (typeof GPU_PHASES)[number];

/** Which system hands out the device: us, or the NVIDIA device plugin (whole-GPU mode). */
export const GPU_USED_BY = ['tensor-fusion', 'nvidia-device-plugin'] as const;

/** The schema of the GPU status (TypeBox), the source of its CRD schema, its type and its validation. */
export const GPUStatus = Type.Object(
  {
    uuid: Type.String({ description: 'Device UUID reported by the driver.' }),
    index: Type.Optional(Int32({ description: 'Device index on its node (cuda:N).', minimum: 0 })),
    gpuModel: Type.String({ description: 'Short model name, e.g. A100; matched by family by spec.gpuModel of workloads.' }),
    vendor: Type.String({ description: 'Vendor name, e.g. NVIDIA.', default: 'NVIDIA' }),
    phase: StringEnum(GPU_PHASES, { description: 'Lifecycle phase.' }),
    capacity: GpuAmounts('Total TFLOPS and VRAM of the device.'),
    available: GpuAmounts('TFLOPS and VRAM not yet allocated.'),
    nodeSelector: MapOf(Type.String(), 'Labels that pin a pod to the node holding this GPU (kubernetes.io/hostname).'),
    usedBy: Type.Optional(StringEnum(GPU_USED_BY, { description: 'System that allocates this device.' })),
    runningApps: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.Optional(Type.String({ description: 'Workload name.' })),
            namespace: Type.Optional(Type.String({ description: 'Workload namespace.' })),
            count: Type.Integer({ description: 'Pods of that workload on this GPU.', minimum: 0 }),
          },
          { description: 'A workload with pods on this GPU.' },
        ),
        { description: 'Workloads sharing this GPU.' },
      ),
    ),
    message: Type.String({ description: 'Human-readable detail about the phase.' }),
    conditions: Type.Optional(Conditions),
  },
  { description: 'Observed state of the device.' },
);
/** Observed state of a GPU. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type GPUStatus = GPUStatusFields;

/**
 * GPUNode (cluster-scoped): the GPU inventory of one Kubernetes node, named after it. The controller
 * creates and updates it; IaC only labels the Node itself.
 */
import { Type } from '@sinclair/typebox';
import { Bytes, Conditions, GpuAmounts, Int32, MapOf, StringEnum, Tflops } from './common';
import { QOS_LEVELS } from '../model/rules';
import type { GPUNodeSpecFields, GPUNodeStatusFields } from './generated/api-props';

/** Who manages the node's GPUs, as upstream. */
export const GPU_NODE_MANAGE_MODES = ['Manual', 'AutoSelect', 'Provisioned'] as const;
/** A GPU node manage mode. */
export type GpuNodeManageMode = (typeof GPU_NODE_MANAGE_MODES)[number];

/** Lifecycle of a GPU node, as upstream. */
export const GPU_NODE_PHASES = ['Pending', 'Provisioning', 'Migrating', 'Running', 'Succeeded', 'Failed', 'Unknown', 'Destroying'] as const;
/** A GPU node phase. */
export type GpuNodePhase = (typeof GPU_NODE_PHASES)[number];

/** The schema of the GPUNode spec (TypeBox), the source of its CRD schema, its type and its validation. */
export const GPUNodeSpec = Type.Object(
  {
    manageMode: Type.Optional(
      StringEnum(GPU_NODE_MANAGE_MODES, {
        description: 'AutoSelect: the node joined through a pool node selector.',
        default: 'AutoSelect',
      }),
    ),
  },
  { description: 'How the node is managed.' },
);
/** How a GPU node is managed. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type GPUNodeSpec = GPUNodeSpecFields;

const PodShare = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'Pod name.' })),
    namespace: Type.Optional(Type.String({ description: 'Pod namespace.' })),
    uid: Type.Optional(Type.String({ description: 'Pod UID.' })),
    requests: Type.Optional(GpuAmounts('Requested share of the GPU.')),
    limits: Type.Optional(GpuAmounts('Share ceiling on the GPU.')),
    qos: Type.Optional(StringEnum(QOS_LEVELS, { description: 'QoS level of the pod.' })),
  },
  { description: 'A pod holding a share of a GPU.' },
);

/** The schema of the GPUNode status (TypeBox), the source of its CRD schema, its type and its validation. */
export const GPUNodeStatus = Type.Object(
  {
    phase: StringEnum(GPU_NODE_PHASES, { description: 'Lifecycle phase.' }),
    conditions: Type.Optional(Conditions),
    totalGPUs: Int32({ description: 'GPUs found on the node.', minimum: 0 }),
    managedGPUs: Int32({ description: 'GPUs the pool may allocate.', minimum: 0 }),
    managedGPUDeviceIDs: Type.Optional(Type.Array(Type.String(), { description: 'UUIDs of the managed GPUs.' })),
    totalTFlops: Tflops("Sum of the managed GPUs' TFLOPS."),
    totalVRAM: Bytes("Sum of the managed GPUs' VRAM."),
    availableTFlops: Type.Optional(Tflops('TFLOPS not yet allocated.')),
    availableVRAM: Type.Optional(Bytes('VRAM not yet allocated.')),
    virtualTFlops: Type.Optional(Tflops('TFLOPS after the pool oversubscription ratio.')),
    virtualVRAM: Type.Optional(Bytes('VRAM including host memory/disk expansion.')),
    virtualAvailableTFlops: Type.Optional(Tflops('Virtual TFLOPS not yet allocated.')),
    virtualAvailableVRAM: Type.Optional(Bytes('Virtual VRAM not yet allocated.')),
    totalGPUPods: Type.Optional(Int32({ description: 'Pods holding a GPU share on the node.', minimum: 0 })),
    allocatedPods: Type.Optional(MapOf(Type.Array(PodShare), 'Shares per GPU name, so allocations can be rebuilt after a restart.')),
  },
  { description: 'Observed GPU inventory and allocation of the node.' },
);
/** Observed GPU inventory and allocation of a node. The type of the schema, documented: generated into lib/api/generated/api-props.ts. */
export type GPUNodeStatus = GPUNodeStatusFields;

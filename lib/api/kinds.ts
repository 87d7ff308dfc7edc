/**
 * The registry of our tensor-fusion.ai/v1 kinds: names, scope, schemas and printer columns. The CRD
 * generator, the validators and the components all read kinds from here.
 */
import { TSchema, Type } from '@sinclair/typebox';
import { GPUStatus } from './gpu';
import { GPUNodeSpec, GPUNodeStatus } from './gpu-node';
import { GPUPoolSpec, GPUPoolStatus } from './gpu-pool';
import { GPUResourceQuotaSpec, GPUResourceQuotaStatus } from './gpu-resource-quota';
import { TensorFusionWorkloadSpec, TensorFusionWorkloadStatus } from './tensor-fusion-workload';
import { WorkloadProfileSpec } from './workload-profile';
import type { Scope } from '../k8s/scope';
import { KIND_SCOPES } from '../model/kind-scope';

/** A kind of the tensor-fusion.ai API. */
export type KindName = 'GPUPool' | 'GPUNode' | 'GPU' | 'WorkloadProfile' | 'TensorFusionWorkload' | 'GPUResourceQuota';
export type { Scope } from '../k8s/scope';

/** A column of `kubectl get` (CRD additionalPrinterColumns). */
export interface PrinterColumn {
  /** Column header. */
  readonly name: string;
  /** Type of the values (how kubectl formats them). */
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  /** JSONPath of the value in the object, e.g. `.status.phase`. */
  readonly jsonPath: string;
  /** What the column shows. */
  readonly description?: string;
  /** 0 shows in `kubectl get`, higher only with `-o wide`. */
  readonly priority?: number;
}

/** Everything a CRD says about one kind: names, scope, schemas and printer columns. */
export interface KindInfo {
  /** Kind, e.g. `GPUPool`. */
  readonly kind: KindName;
  /** Plural resource name, e.g. `gpupools`. */
  readonly plural: string;
  /** Singular resource name, e.g. `gpupool`. */
  readonly singular: string;
  /** Kind of a list, e.g. `GPUPoolList`. */
  readonly listKind: string;
  /** Short names for kubectl. */
  readonly shortNames: readonly string[];
  /** `Cluster` or `Namespaced`. */
  readonly scope: Scope;
  /** What the kind is, in words. */
  readonly description: string;
  /** Absent for GPU, which only has a status. */
  readonly spec?: TSchema;
  /** Empty object schema for WorkloadProfile, which has a status subresource but reports nothing. */
  readonly status: TSchema;
  /** Whole object: apiVersion, kind, metadata, spec, status. */
  readonly schema: TSchema;
  /** Columns of `kubectl get`. */
  readonly printerColumns: readonly PrinterColumn[];
}

/** A printer column; `priority` 1 shows only with `-o wide`. */
const column = (name: string, jsonPath: string, type: PrinterColumn['type'] = 'string', priority?: number): PrinterColumn =>
  priority === undefined ? { name, type, jsonPath } : { name, type, jsonPath, priority };

/** Integer columns, by header. */
const counts = (paths: Record<string, string>): PrinterColumn[] =>
  Object.entries(paths).map(([name, path]) => column(name, path, 'integer'));

const AGE = column('Age', '.metadata.creationTimestamp', 'date');
const PHASE = column('Phase', '.status.phase');

/** Free TFLOPS and VRAM, then the totals with `-o wide`: the columns of everything that holds GPUs. */
function capacityColumns(paths: {
  availableTflops: string;
  availableVram: string;
  totalTflops: string;
  totalVram: string;
}): PrinterColumn[] {
  return [
    column('Available TFLOPS', paths.availableTflops),
    column('Available VRAM', paths.availableVram),
    column('Total TFLOPS', paths.totalTflops, 'string', 1),
    column('Total VRAM', paths.totalVram, 'string', 1),
  ];
}

/** The capacity columns of a pool and a node, whose status names them alike. */
const AGGREGATE_CAPACITY = capacityColumns({
  availableTflops: '.status.availableTFlops',
  availableVram: '.status.availableVRAM',
  totalTflops: '.status.totalTFlops',
  totalVram: '.status.totalVRAM',
});

function kind(info: Omit<KindInfo, 'schema' | 'listKind' | 'singular'> & { readonly singular?: string }): KindInfo {
  // Nothing is required at the root: the API server fills apiVersion/kind/metadata and status is
  // written later through its subresource.
  const properties: Record<string, TSchema> = {
    apiVersion: Type.Optional(Type.String({ description: 'tensor-fusion.ai/v1' })),
    kind: Type.Optional(Type.String({ description: info.kind })),
    metadata: Type.Optional(Type.Unsafe({ type: 'object' })),
  };
  if (info.spec) properties.spec = Type.Optional(info.spec);
  properties.status = Type.Optional(info.status);
  return {
    ...info,
    singular: info.singular ?? info.kind.toLowerCase(),
    listKind: `${info.kind}List`,
    schema: Type.Object(properties, { description: info.description }),
  };
}

/** The kinds of the tensor-fusion.ai API, by name. */
export const KINDS: Readonly<Record<KindName, KindInfo>> = {
  GPUPool: kind({
    kind: 'GPUPool',
    plural: 'gpupools',
    shortNames: ['gpool'],
    scope: KIND_SCOPES.GPUPool,
    description: 'A pool of GPU nodes shared by workloads.',
    spec: GPUPoolSpec,
    status: GPUPoolStatus,
    printerColumns: [
      PHASE,
      ...counts({ Nodes: '.status.totalNodes', GPUs: '.status.totalGPUs' }),
      ...AGGREGATE_CAPACITY,
      column('Placement', '.spec.placement.mode', 'string', 1),
      AGE,
    ],
  }),
  GPUNode: kind({
    kind: 'GPUNode',
    plural: 'gpunodes',
    shortNames: ['gnode'],
    scope: KIND_SCOPES.GPUNode,
    description: 'GPU inventory and allocation of one Kubernetes node.',
    spec: GPUNodeSpec,
    status: GPUNodeStatus,
    printerColumns: [PHASE, column('GPUs', '.status.totalGPUs', 'integer'), ...AGGREGATE_CAPACITY, AGE],
  }),
  GPU: kind({
    kind: 'GPU',
    plural: 'gpus',
    shortNames: [],
    scope: KIND_SCOPES.GPU,
    description: 'One physical GPU device.',
    status: GPUStatus,
    printerColumns: [
      column('Model', '.status.gpuModel'),
      PHASE,
      ...capacityColumns({
        availableTflops: '.status.available.tflops',
        availableVram: '.status.available.vram',
        totalTflops: '.status.capacity.tflops',
        totalVram: '.status.capacity.vram',
      }),
      column('UUID', '.status.uuid', 'string', 1),
      AGE,
    ],
  }),
  WorkloadProfile: kind({
    kind: 'WorkloadProfile',
    plural: 'workloadprofiles',
    shortNames: ['wlprofile'],
    scope: KIND_SCOPES.WorkloadProfile,
    description: 'Reusable GPU settings referenced by pods.',
    spec: WorkloadProfileSpec,
    status: Type.Unsafe({ type: 'object', description: 'Reserved; nothing is reported yet.' }),
    printerColumns: [
      column('Pool', '.spec.poolName'),
      column('QoS', '.spec.qos'),
      column('TFLOPS Request', '.spec.resources.requests.tflops'),
      column('VRAM Request', '.spec.resources.requests.vram'),
      column('GPUs', '.spec.gpuCount', 'integer'),
      column('Replicas', '.spec.replicas', 'integer', 1),
      AGE,
    ],
  }),
  TensorFusionWorkload: kind({
    kind: 'TensorFusionWorkload',
    plural: 'tensorfusionworkloads',
    shortNames: ['tfw'],
    scope: KIND_SCOPES.TensorFusionWorkload,
    description: 'A group of GPU workers serving one workload.',
    spec: TensorFusionWorkloadSpec,
    status: TensorFusionWorkloadStatus,
    printerColumns: [
      PHASE,
      ...counts({ Ready: '.status.readyWorkers', Workers: '.status.workerCount' }),
      column('Pool', '.spec.poolName'),
      column('QoS', '.spec.qos', 'string', 1),
      AGE,
    ],
  }),
  GPUResourceQuota: kind({
    kind: 'GPUResourceQuota',
    plural: 'gpuresourcequotas',
    shortNames: ['gpuquota'],
    scope: KIND_SCOPES.GPUResourceQuota,
    description: 'GPU quotas of a namespace: totals over its GPU pods and bounds of each pod.',
    spec: GPUResourceQuotaSpec,
    status: GPUResourceQuotaStatus,
    printerColumns: [
      { name: 'TFLOPS Used', type: 'string', jsonPath: '.status.used.requests.tflops', description: 'TFLOPS requested in the namespace.' },
      {
        name: 'TFLOPS Total',
        type: 'string',
        jsonPath: '.spec.total.requests.tflops',
        description: 'Most TFLOPS the namespace may request.',
      },
      { name: 'VRAM Used', type: 'string', jsonPath: '.status.used.requests.vram', description: 'VRAM requested in the namespace.' },
      { name: 'VRAM Total', type: 'string', jsonPath: '.spec.total.requests.vram', description: 'Most VRAM the namespace may request.' },
      { name: 'Workers', type: 'integer', jsonPath: '.status.used.workers', description: 'Pods holding or reserving a GPU share.' },
      { name: 'Max Workers', type: 'integer', jsonPath: '.spec.total.maxWorkers', priority: 1 },
      {
        name: 'Alert %',
        type: 'integer',
        jsonPath: '.spec.total.alertThresholdPercent',
        description: 'Percent of a total that raises AlertThresholdReached.',
      },
      AGE,
    ],
  }),
};

/** The names of the kinds, in KINDS order. */
export const KIND_NAMES = Object.keys(KINDS) as KindName[];

/** Whether `value` names a kind of the tensor-fusion.ai API. */
export function isKindName(value: unknown): value is KindName {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(KINDS, value);
}

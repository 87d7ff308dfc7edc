/** GpuPool: a GPUPool object from typed props. */
import { DEFAULT_GROWTH_RESOURCE, GPUPoolSpec, MAX_GROWTH_GPUS_PER_NODE, validateSpec } from '../api';
import { isExtendedResourceName } from '../k8s/names';
import type { NodeSelectorProps } from '../api/generated/api-props';
import { FieldIssue, fieldIssue, throwIfInvalid } from '../model/errors';
import { KubeObject } from '../k8s/object';
import { API_VERSION } from '../model/group';
import { DEFAULT_POOL_ANNOTATION, poolMembershipLabel } from '../model/metadata-keys';
import { checkPoolName } from '../model/name-checks';
import { checkEnum, checkIsolation, checkQos, IsolationMode, PLACEMENT_MODES, PlacementMode, QosLevel } from '../model/rules';
import { GROWTH_NOT_FOR_DRA, SHARE_DELIVERIES, ShareDelivery } from '../model/dra';
import { checkMeta, ObjectMetaProps, RenderContext, renderMeta } from './metadata';

/** GPU resources of a pool bound. */
export interface PoolResources {
  /** FP16 TFLOPS. @example '1000' */
  readonly tflops?: string | number;
  /** GPU memory. @example '640Gi' */
  readonly vram?: string | number;
  /** CPU cores. @example '64' */
  readonly cpu?: string | number;
  /** Host memory. @example '512Gi' */
  readonly memory?: string | number;
}

/** How a pool grows with a node autoscaler (docs/growth.md). */
export interface GpuPoolGrowth {
  /**
   * GPUs one new node of the pool brings: the controller packs waiting shares into new nodes of this
   * many GPUs and asks for each such node with one placeholder pod.
   * @example 8
   */
  readonly gpusPerNode: number;
  /**
   * The extended resource the new nodes advertise for whole GPUs, which the placeholders ask for.
   * @default 'nvidia.com/gpu'
   */
  readonly resource?: string;
}

/** Props of GpuPool, the same in Pulumi and cdk8s. */
export interface GpuPoolProps extends ObjectMetaProps {
  /**
   * Marks the pool used by pods that name no `tensor-fusion.ai/gpupool`.
   * @default false
   */
  readonly isDefault?: boolean;
  /**
   * Which nodes belong to the pool.
   * @default nodes labelled `tensor-fusion.ai/pool-<name>: "true"` (what GpuNode's `pools` writes)
   */
  readonly nodeSelector?: NodeSelectorProps;
  /** QoS of workloads that set none. @default 'medium' (decided by the webhook when unset) */
  readonly defaultQos?: QosLevel;
  /** How the allocator places GPU shares. @default 'MinFragmentation' */
  readonly placement?: PlacementMode;
  /**
   * How the pool's nodes hold shares to their limits (`spec.nodeManagerConfig.defaultIsolationMode`):
   * `hard`, an MPS control daemon per share holds its VRAM and compute limits and the kubelet
   * delivers the GPU and the daemon (needs `TensorFusionController`'s `nodeAgent`); `shared`, for
   * clusters that cannot run MPS: limits are advisory and every admitted pod is warned.
   * @default 'hard'
   * @example 'shared'
   */
  readonly isolation?: IsolationMode;
  /**
   * How shares reach their pods (`spec.nodeManagerConfig.shareDelivery`): `DevicePlugin`, the
   * extended resource `tensor-fusion.ai/share` placed by the scheduler extender's
   * fragmentation-aware allocator (any Kubernetes the package supports); `DRA`, a ResourceClaim per
   * pod allocated by kube-scheduler (first fit), which cluster autoscalers can simulate (Kubernetes
   * 1.34+, `hard` isolation). See docs/dra.md.
   * @default 'DevicePlugin'
   * @example 'DRA'
   */
  readonly shareDelivery?: ShareDelivery;
  /**
   * Whether pods run on the GPU server itself unless they say otherwise (`is-local-gpu`).
   * Always written out, because upstream reads an unset value as true.
   * @default false (pods run remotely unless they ask for a local GPU)
   */
  readonly defaultUsingLocalGpu?: boolean;
  /**
   * Virtual TFLOPS as a percentage of physical TFLOPS; TFLOPS limits may add up to this.
   * @default 500
   */
  readonly tflopsOversellRatio?: number;
  /** Percent of host memory usable as extra VRAM. @default none */
  readonly vramExpandToHostMem?: number;
  /** Percent of host disk usable as extra VRAM. @default none */
  readonly vramExpandToHostDisk?: number;
  /** Capacity the pool keeps even when idle. @default none */
  readonly minResources?: PoolResources;
  /** Capacity the pool never exceeds. @default none */
  readonly maxResources?: PoolResources;
  /**
   * FP16 TFLOPS per GPU model, overriding the controller's built-in table.
   * @example { 'NVIDIA-A100-SXM4-80GB': '312' }
   */
  readonly gpuTflops?: Readonly<Record<string, string | number>>;
  /**
   * Makes shares that wait for GPU room visible to a node autoscaler (Karpenter, cluster-autoscaler):
   * the controller keeps placeholder pods asking for the whole GPUs of the new nodes they need, at a
   * negative priority, until the shares are placed (docs/growth.md). Refused with `shareDelivery:
   * 'DRA'`, whose shares it cannot count (docs/growth.md, "DRA pools").
   * @default none (the pool does not ask for nodes)
   * @example { gpusPerNode: 8 }
   */
  readonly growth?: GpuPoolGrowth;
  /** Image of remote-mode GPU workers (this package does not provide one). @default none */
  readonly workerImage?: string;
  /** Pod template merged into every remote worker pod. @default none */
  readonly workerPodTemplate?: Record<string, unknown>;
}

function defined<T extends object>(value: T): T | undefined {
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  return entries.length ? (Object.fromEntries(entries) as T) : undefined;
}

/** The GPUPool spec for these props (defaults filled where upstream needs them explicit). */
export function gpuPoolSpec(name: string, props: GpuPoolProps): GPUPoolSpec {
  const nodeSelector = props.nodeSelector ?? {
    nodeSelectorTerms: [{ matchExpressions: [{ key: poolMembershipLabel(name), operator: 'In' as const, values: ['true'] }] }],
  };
  const oversubscription = defined({
    tflopsOversellRatio: props.tflopsOversellRatio,
    vramExpandToHostMem: props.vramExpandToHostMem,
    vramExpandToHostDisk: props.vramExpandToHostDisk,
  });
  const capacityConfig = defined({
    minResources: props.minResources && { ...props.minResources },
    maxResources: props.maxResources && { ...props.maxResources },
    oversubscription,
    gpuTflops: props.gpuTflops && { ...props.gpuTflops },
  });
  const worker = defined({ image: props.workerImage, podTemplate: props.workerPodTemplate });
  return {
    nodeManagerConfig: {
      nodeSelector,
      ...(props.isolation ? { defaultIsolationMode: props.isolation } : {}),
      ...(props.shareDelivery ? { shareDelivery: props.shareDelivery } : {}),
    },
    ...(capacityConfig ? { capacityConfig } : {}),
    ...(props.defaultQos ? { qosConfig: { defaultQoS: props.defaultQos } } : {}),
    defaultUsingLocalGPU: props.defaultUsingLocalGpu ?? false,
    ...(props.placement ? { placement: { mode: props.placement } } : {}),
    ...(props.growth
      ? { growth: { resource: props.growth.resource ?? DEFAULT_GROWTH_RESOURCE, gpusPerNode: props.growth.gpusPerNode } }
      : {}),
    ...(worker ? { componentConfig: { worker } } : {}),
  };
}

function checkPercent(field: string, value: number | undefined, min: number, max: number): FieldIssue | undefined {
  if (value === undefined || (Number.isInteger(value) && value >= min && value <= max)) return undefined;
  return fieldIssue(field, value, `an integer percentage from ${min} to ${max}`);
}

/**
 * A delivery is one of SHARE_DELIVERIES, and DRA holds limits only by MPS: its kubelet plugin starts
 * each claim's daemon, and `shared` isolation has none to start.
 */
function checkShareDelivery(value: unknown, isolation: IsolationMode | undefined): FieldIssue | undefined {
  const bad = checkEnum('shareDelivery', value, SHARE_DELIVERIES);
  if (bad || value !== 'DRA' || isolation !== 'shared') return bad;
  return fieldIssue(
    'shareDelivery',
    value,
    '"DevicePlugin" while isolation is "shared" (DRA delivers a share with its MPS daemon, so it needs isolation "hard")',
  );
}

function checkGrowth(growth: GpuPoolGrowth | undefined, shareDelivery: unknown): (FieldIssue | undefined)[] {
  if (growth === undefined) return [];
  const n = growth.gpusPerNode;
  return [
    shareDelivery === 'DRA' ? fieldIssue('growth', growth, `unset while shareDelivery is "DRA" (${GROWTH_NOT_FOR_DRA})`) : undefined,
    Number.isInteger(n) && n >= 1 && n <= MAX_GROWTH_GPUS_PER_NODE
      ? undefined
      : fieldIssue('growth.gpusPerNode', n, `an integer from 1 to ${MAX_GROWTH_GPUS_PER_NODE}`),
    growth.resource === undefined || isExtendedResourceName(growth.resource)
      ? undefined
      : fieldIssue(
          'growth.resource',
          growth.resource,
          'an extended resource name <domain>/<name> outside kubernetes.io, such as nvidia.com/gpu',
        ),
  ];
}

/** Validates the props that are not plain spec fields (their spec paths differ from the prop names). */
export function checkGpuPoolProps(name: string, props: GpuPoolProps, nameFromId = false): FieldIssue[] {
  // The pool name becomes part of the membership label key, so it follows the stricter pool rule.
  const issues = checkMeta(name, props, checkPoolName, nameFromId);
  const more = [
    props.defaultQos === undefined ? undefined : checkQos('defaultQos', props.defaultQos),
    props.placement === undefined ? undefined : checkEnum('placement', props.placement, PLACEMENT_MODES),
    props.isolation === undefined ? undefined : checkIsolation('isolation', props.isolation),
    props.shareDelivery === undefined ? undefined : checkShareDelivery(props.shareDelivery, props.isolation),
    checkPercent('tflopsOversellRatio', props.tflopsOversellRatio, 100, 100000),
    checkPercent('vramExpandToHostMem', props.vramExpandToHostMem, 0, 100),
    checkPercent('vramExpandToHostDisk', props.vramExpandToHostDisk, 0, 100),
    ...checkGrowth(props.growth, props.shareDelivery),
  ];
  return [...issues, ...more.filter((i): i is FieldIssue => i !== undefined)];
}

/**
 * Renders the GPUPool.
 * @throws ValidationError naming every bad prop
 */
export function renderGpuPool(
  name: string,
  props: GpuPoolProps,
  { context = `GpuPool ${name}`, nameFromId }: RenderContext = {},
): KubeObject {
  throwIfInvalid(checkGpuPoolProps(name, props, nameFromId), context);
  const spec = gpuPoolSpec(name, props);
  throwIfInvalid(validateSpec('GPUPool', spec), context);
  const marker: Record<string, string> = props.isDefault ? { [DEFAULT_POOL_ANNOTATION]: 'true' } : {};
  return { apiVersion: API_VERSION, kind: 'GPUPool', metadata: renderMeta(name, props, marker), spec };
}

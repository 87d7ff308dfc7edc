/**
 * The effective GPU settings of a pod: its annotations, over the WorkloadProfile it references, over
 * its GPUPool's defaults, over built-in defaults. The webhook calls this after decoding.
 *
 * Choices (documented here once):
 * - Per field, the first layer that sets it wins: annotation > WorkloadProfile > GPUPool > default.
 *   Unlike upstream TensorFusion, the profile's `poolName` and `isLocalGPU` are honoured (below the
 *   annotations), as the seed's profile example sets them.
 * - A request without a limit gets limit = request (no burst unless asked); a limit without a request
 *   gets request = limit (the pod reserves what it may use), as upstream does. Done per resource after
 *   the layers merge, so an annotation limit combines with a profile request.
 * - QoS defaults to `medium`; `is-local-gpu` to false (seed 002; upstream code defaults to true);
 *   gpu-count to 1; generate-workload to true; replicas stay unset (dynamic).
 * - `auto-requests|limits|replicas` set `enable` of the matching autoScalingConfig block and keep the
 *   profile's other settings of that block.
 * The merged result is validated again (limit >= request, no-standalone-worker-mode needs local GPU).
 */
import type { AutoScalingConfig, GPUPoolSpec, NodeAffinity, WorkloadProfileSpec } from '../api';
import { FieldIssue, fieldIssue } from '../errors';
import { lookupGpuTflops } from '../gpu-catalog';
import { DEFAULT_QOS, QosLevel } from '../rules';
import { checkCrossRules, showQuantity } from './check';
import { ANNOTATION, AnnotationValueKind } from './keys';
import type { GpuWorkloadOptionName, GpuWorkloadSettings } from './options';
import { checkValue } from './values';

/** Whether GPUs are on the pod's own node when nothing says: no, they are remote. */
export const DEFAULT_IS_LOCAL_GPU = false;
/** GPUs per worker when nothing says. */
export const DEFAULT_GPU_COUNT = 1;
/** Whether the webhook generates a TensorFusionWorkload for a pod when nothing says. */
export const DEFAULT_GENERATE_WORKLOAD = true;

/** The GPUPool fields the merge reads. */
export type PoolDefaults = Pick<GPUPoolSpec, 'qosConfig' | 'defaultUsingLocalGPU'> & {
  /** Read for `capacityConfig.gpuTflops`, the per-model TFLOPS that turn compute-percent into TFLOPS. */
  readonly capacityConfig?: {
    /** TFLOPS per GPU model, e.g. `{ 'NVIDIA-A100-SXM4-80GB': '312' }`. */
    readonly gpuTflops?: Record<string, string | number>;
  };
};

/** Which layer a resolved value came from; `derived` is a request copied from its limit or back. */
export type SettingSource = 'annotation' | 'profile' | 'pool' | 'default' | 'derived';

/** The settings a GPU pod runs with: annotations over its WorkloadProfile over its GPUPool over the defaults. */
export interface ResolvedWorkloadSettings {
  /** Pool the GPUs come from; unset for the default pool. */
  readonly pool?: string;
  /** QoS level. @default medium */
  readonly qos: QosLevel;
  /** Whether the GPUs are on the pod's own node. @default false */
  readonly isLocalGpu: boolean;
  /** GPUs per worker. @default 1 */
  readonly gpuCount: number;
  /** GPU model the workers need; unset for any. */
  readonly gpuModel?: string;
  /** Unset means dynamic: one worker per pending pod. */
  readonly replicas?: number;
  /** TFLOPS. */
  readonly tflopsRequest?: number;
  /** TFLOPS. */
  readonly tflopsLimit?: number;
  /** Bytes. */
  readonly vramRequest?: number;
  /** Bytes. */
  readonly vramLimit?: number;
  /** Containers that get the GPU client. */
  readonly injectContainers?: readonly string[];
  /** TensorFusionWorkload the pod joins. */
  readonly workload?: string;
  /** Whether the webhook generates the workload for the pod. @default true */
  readonly generateWorkload: boolean;
  /** WorkloadProfile the settings were merged over. */
  readonly workloadProfile?: string;
  /** Whether local GPU pods run without a standalone worker. @default false */
  readonly noStandaloneWorkerMode: boolean;
  /** Device indices the GPUs must have on their node (upstream `gpu-indices`). */
  readonly gpuIndices?: readonly number[];
  /** Whole GPUs: the TFLOPS are the model's (upstream `dedicated-gpu`). */
  readonly dedicatedGpu?: boolean;
  /** Upstream `vendor`, checked (always NVIDIA here). */
  readonly vendor?: string;
  /** Upstream `eviction-protection`, checked; no effect here (no pricing). */
  readonly evictionProtection?: string;
  /** Node affinity of the workers (from the profile). */
  readonly nodeAffinity?: NodeAffinity;
  /** Autoscaling (the profile's, with the auto-* annotations over it). */
  readonly autoScalingConfig?: AutoScalingConfig;
  /** Where each set field came from (auto-scaling flags under autoSetLimits/autoSetReplicas/autoSetRequests). */
  readonly sources: Readonly<Record<string, SettingSource>>;
}

/** The result of {@link resolveWorkloadSettings}: the settings and what is wrong with them. */
export interface ResolvedWorkload {
  /** The merged settings. */
  readonly settings: ResolvedWorkloadSettings;
  /** Issues in the profile or pool values and in the merged result; empty when valid. */
  readonly issues: readonly FieldIssue[];
}

const PROFILE = 'WorkloadProfile.spec.';
const POOL = 'GPUPool.spec.';

type Candidate = readonly [value: unknown, source: SettingSource, field: string];

/**
 * Merges decoded annotations over a WorkloadProfile spec and GPUPool defaults.
 * @example
 * resolveWorkloadSettings({ tflopsLimit: 20 }, { resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } } })
 * // settings: tflopsRequest 5 (profile), tflopsLimit 20 (annotation), vram 3Gi/3Gi (profile), qos medium (default)
 */
export function resolveWorkloadSettings(
  annotations: GpuWorkloadSettings,
  profile?: WorkloadProfileSpec,
  pool?: PoolDefaults,
): ResolvedWorkload {
  const issues: FieldIssue[] = [];
  const out: Record<string, unknown> = {};
  const sources: Record<string, SettingSource> = {};
  const fields: Partial<Record<GpuWorkloadOptionName, string>> = {};

  // Profile and pool values come from the cluster as written: check them with the same rules.
  const checked = (kind: AnnotationValueKind, field: string, value: unknown): unknown => {
    if (value === undefined) return undefined;
    const r = checkValue(kind, field, value, { source: 'option' });
    issues.push(...r.issues);
    return r.value;
  };
  const fromAnnotation = (option: GpuWorkloadOptionName): Candidate => [annotations[option], 'annotation', ANNOTATION[option]];
  const fromProfile = (kind: AnnotationValueKind, path: string, value: unknown): Candidate =>
    [checked(kind, PROFILE + path, value), 'profile', PROFILE + path];
  const resolve = (option: GpuWorkloadOptionName, ...candidates: Candidate[]) => {
    const hit = candidates.find(([value]) => value !== undefined);
    if (!hit) return;
    out[option] = hit[0];
    sources[option] = hit[1];
    fields[option] = hit[2];
  };

  const res = profile?.resources;
  resolve('pool', fromAnnotation('pool'), fromProfile('poolName', 'poolName', profile?.poolName));
  resolve('qos', fromAnnotation('qos'), fromProfile('qos', 'qos', profile?.qos),
    [checked('qos', `${POOL}qosConfig.defaultQoS`, pool?.qosConfig?.defaultQoS), 'pool', `${POOL}qosConfig.defaultQoS`],
    [DEFAULT_QOS, 'default', ANNOTATION.qos]);
  resolve('isLocalGpu', fromAnnotation('isLocalGpu'), fromProfile('boolean', 'isLocalGPU', profile?.isLocalGPU),
    [checked('boolean', `${POOL}defaultUsingLocalGPU`, pool?.defaultUsingLocalGPU), 'pool', `${POOL}defaultUsingLocalGPU`],
    [DEFAULT_IS_LOCAL_GPU, 'default', ANNOTATION.isLocalGpu]);
  resolve('gpuCount', fromAnnotation('gpuCount'), [annotations.gpuIndices?.length, 'annotation', ANNOTATION.gpuIndices],
    fromProfile('gpuCount', 'gpuCount', profile?.gpuCount),
    [DEFAULT_GPU_COUNT, 'default', ANNOTATION.gpuCount]);
  resolve('gpuModel', fromAnnotation('gpuModel'), fromProfile('gpuModel', 'gpuModel', profile?.gpuModel));
  resolve('replicas', fromAnnotation('replicas'), fromProfile('replicas', 'replicas', profile?.replicas));
  // compute-percent and dedicated-gpu are TFLOPS written as a share of one GPU of the resolved model.
  const modelTflops = out.gpuModel === undefined ? undefined : lookupGpuTflops(out.gpuModel as string, pool?.capacityConfig?.gpuTflops ?? {})?.tflops;
  const ofGpu = (option: 'computePercentRequest' | 'computePercentLimit' | 'dedicatedGpu', percent: number | undefined, shown: unknown): Candidate => {
    if (percent === undefined) return [undefined, 'annotation', ANNOTATION[option]];
    if (modelTflops === undefined) {
      const model = out.gpuModel === undefined ? '' : `; ${fields.gpuModel} ${JSON.stringify(out.gpuModel)} is in neither`;
      issues.push(fieldIssue(ANNOTATION[option], shown,
        `a value together with a ${ANNOTATION.gpuModel} whose TFLOPS are known (the GPU catalog or ${POOL}capacityConfig.gpuTflops)${model}`));
      return [undefined, 'annotation', ANNOTATION[option]];
    }
    return [Number(((modelTflops * percent) / 100).toPrecision(12)), 'annotation', ANNOTATION[option]];
  };
  const dedicated = ofGpu('dedicatedGpu', annotations.dedicatedGpu ? 100 : undefined, 'true');
  const percent = (option: 'computePercentRequest' | 'computePercentLimit') => ofGpu(option, annotations[option], annotations[option] === undefined ? undefined : String(annotations[option]));
  resolve('tflopsRequest', fromAnnotation('tflopsRequest'), percent('computePercentRequest'), dedicated, fromProfile('tflops', 'resources.requests.tflops', res?.requests?.tflops));
  resolve('tflopsLimit', fromAnnotation('tflopsLimit'), percent('computePercentLimit'), dedicated, fromProfile('tflops', 'resources.limits.tflops', res?.limits?.tflops));
  if (annotations.gpuIndices !== undefined) [out.gpuIndices, sources.gpuIndices, fields.gpuIndices] = [annotations.gpuIndices, 'annotation', ANNOTATION.gpuIndices];
  resolve('vramRequest', fromAnnotation('vramRequest'), fromProfile('vram', 'resources.requests.vram', res?.requests?.vram));
  resolve('vramLimit', fromAnnotation('vramLimit'), fromProfile('vram', 'resources.limits.vram', res?.limits?.vram));
  for (const option of ['injectContainers', 'workload', 'workloadProfile'] as const) resolve(option, fromAnnotation(option));
  resolve('generateWorkload', fromAnnotation('generateWorkload'), [DEFAULT_GENERATE_WORKLOAD, 'default', ANNOTATION.generateWorkload]);
  resolve('noStandaloneWorkerMode', fromAnnotation('noStandaloneWorkerMode'), [false, 'default', ANNOTATION.noStandaloneWorkerMode]);

  for (const [request, limit] of [['tflopsRequest', 'tflopsLimit'], ['vramRequest', 'vramLimit']] as const) {
    if (out[request] === undefined && out[limit] !== undefined) [out[request], sources[request]] = [out[limit], 'derived'];
    if (out[limit] === undefined && out[request] !== undefined) [out[limit], sources[limit]] = [out[request], 'derived'];
  }

  if (profile?.nodeAffinity !== undefined) [out.nodeAffinity, sources.nodeAffinity] = [profile.nodeAffinity, 'profile'];
  const autoScalingConfig = mergeAutoScaling(profile?.autoScalingConfig, annotations, sources);
  if (autoScalingConfig) out.autoScalingConfig = autoScalingConfig;

  // Validate the merged result with the codec's own rules; values show as they are written.
  const merged = out as unknown as GpuWorkloadSettings;
  const raw: Partial<Record<GpuWorkloadOptionName, unknown>> = { ...merged };
  for (const [option, kind] of [['tflopsRequest', 'tflops'], ['tflopsLimit', 'tflops'], ['vramRequest', 'vram'], ['vramLimit', 'vram']] as const) {
    const value = merged[option];
    if (value !== undefined) raw[option] = showQuantity(kind, value);
  }
  for (const option of ['isLocalGpu', 'noStandaloneWorkerMode'] as const) raw[option] = String(merged[option]);
  issues.push(...checkCrossRules(merged, raw, (o) => fields[o] ?? ANNOTATION[o], 'annotation'));
  // Set after the rules: its TFLOPS are resolved above, not a second value beside them.
  if (annotations.dedicatedGpu === true) [out.dedicatedGpu, sources.dedicatedGpu] = [true, 'annotation'];
  for (const option of ['vendor', 'evictionProtection'] as const) {
    if (annotations[option] !== undefined) [out[option], sources[option]] = [annotations[option], 'annotation'];
  }

  return { settings: { ...(out as object), sources } as ResolvedWorkloadSettings, issues };
}

const AUTO_BLOCKS = [
  ['autoSetLimits', 'autoLimits'],
  ['autoSetReplicas', 'autoReplicas'],
  ['autoSetRequests', 'autoRequests'],
] as const;

function mergeAutoScaling(
  profileConfig: AutoScalingConfig | undefined,
  annotations: GpuWorkloadSettings,
  sources: Record<string, SettingSource>,
): AutoScalingConfig | undefined {
  if (profileConfig === undefined && AUTO_BLOCKS.every(([, option]) => annotations[option] === undefined)) return undefined;
  const config: Record<string, unknown> = { ...profileConfig };
  for (const [block, option] of AUTO_BLOCKS) {
    const enable = annotations[option];
    if (enable !== undefined) {
      config[block] = { ...profileConfig?.[block], enable };
      sources[block] = 'annotation';
    } else if (profileConfig?.[block] !== undefined) {
      sources[block] = 'profile';
    }
  }
  return config as AutoScalingConfig;
}

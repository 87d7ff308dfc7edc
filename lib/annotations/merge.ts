/**
 * The effective GPU settings of a pod: its annotations, over the WorkloadProfile it references, over
 * its GPUPool's defaults, over built-in defaults. The webhook calls this after decoding.
 *
 * Choices (documented here once):
 * - Per field, the first layer that sets it wins: annotation > WorkloadProfile > GPUPool > default.
 *   Unlike upstream TensorFusion, the profile's `poolName` and `isLocalGPU` are honoured (below the
 *   annotations), as TensorFusion's WorkloadProfile example sets them.
 * - A request without a limit gets limit = request (no burst unless asked); a limit without a request
 *   gets request = limit (the pod reserves what it may use), as upstream does. Done per resource after
 *   the layers merge, so an annotation limit combines with a profile request.
 * - QoS defaults to `medium`; `is-local-gpu` to false (as TensorFusion's annotation reference says; upstream code defaults to true);
 *   gpu-count to 1; generate-workload to true; replicas stay unset (dynamic).
 * - `auto-requests|limits|replicas` set `enable` of the matching autoScalingConfig block and keep the
 *   profile's other settings of that block.
 * The merged result is validated again (limit >= request, no-standalone-worker-mode needs local GPU).
 */
import type { AutoScalingConfig, GPUPoolSpec, NodeAffinity, WorkloadProfileSpec } from '../api';
import { FieldIssue, fieldIssue } from '../model/errors';
import { exactModelName, GpuTflops, modelTflopsInPool } from '../model/gpu-catalog';
import { DEFAULT_QOS, QosLevel } from '../model/rules';
import { checkCrossRules, showQuantity } from './check';
import { ANNOTATION, AnnotationValueKind } from './reference';
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

/** The merge in progress: the values set so far, where each came from, and the issues found. */
interface Merge {
  readonly annotations: GpuWorkloadSettings;
  readonly out: Record<string, unknown>;
  readonly sources: Record<string, SettingSource>;
  /** The field each value was read from, named in the merged result's issues. */
  readonly fields: Partial<Record<GpuWorkloadOptionName, string>>;
  readonly issues: FieldIssue[];
}

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
  const m: Merge = { annotations, out: {}, sources: {}, fields: {}, issues: [] };
  resolvePlacement(m, profile, pool);
  resolveResources(m, profile, pool);
  resolveWorkloadOptions(m);
  deriveMissingBounds(m);

  if (profile?.nodeAffinity !== undefined) [m.out.nodeAffinity, m.sources.nodeAffinity] = [profile.nodeAffinity, 'profile'];
  const autoScalingConfig = mergeAutoScaling(profile?.autoScalingConfig, annotations, m.sources);
  if (autoScalingConfig) m.out.autoScalingConfig = autoScalingConfig;

  m.issues.push(...mergedIssues(m));
  // Set after the rules: its TFLOPS are resolved above, not a second value beside them.
  if (annotations.dedicatedGpu === true) [m.out.dedicatedGpu, m.sources.dedicatedGpu] = [true, 'annotation'];
  for (const option of ['vendor', 'evictionProtection'] as const) {
    if (annotations[option] !== undefined) [m.out[option], m.sources[option]] = [annotations[option], 'annotation'];
  }

  // Set on m.out, not spread into a copy with it (see docs/runtime/webhook.md, "Objects that outlive").
  m.out.sources = m.sources;
  return { settings: m.out as unknown as ResolvedWorkloadSettings, issues: m.issues };
}

/** Sets `option` from the first candidate with a value: candidates come in precedence order. */
function resolve(m: Merge, option: GpuWorkloadOptionName, ...candidates: Candidate[]): void {
  const hit = candidates.find(([value]) => value !== undefined);
  if (!hit) return;
  m.out[option] = hit[0];
  m.sources[option] = hit[1];
  m.fields[option] = hit[2];
}

/** Profile and pool values come from the cluster as written: they are checked with the annotations' rules. */
function checked(m: Merge, kind: AnnotationValueKind, field: string, value: unknown): unknown {
  if (value === undefined) return undefined;
  const r = checkValue(kind, field, value, { source: 'option' });
  m.issues.push(...r.issues);
  return r.value;
}

const fromAnnotation = (m: Merge, option: GpuWorkloadOptionName): Candidate => [m.annotations[option], 'annotation', ANNOTATION[option]];
const fromProfile = (m: Merge, kind: AnnotationValueKind, path: string, value: unknown): Candidate => [
  checked(m, kind, PROFILE + path, value),
  'profile',
  PROFILE + path,
];
const fromPool = (m: Merge, kind: AnnotationValueKind, path: string, value: unknown): Candidate => [
  checked(m, kind, POOL + path, value),
  'pool',
  POOL + path,
];
const byDefault = (option: GpuWorkloadOptionName, value: unknown): Candidate => [value, 'default', ANNOTATION[option]];

/** Where the pod's GPUs come from and how many: pool, QoS, local or remote, count, model, replicas. */
function resolvePlacement(m: Merge, profile: WorkloadProfileSpec | undefined, pool: PoolDefaults | undefined): void {
  resolve(m, 'pool', fromAnnotation(m, 'pool'), fromProfile(m, 'poolName', 'poolName', profile?.poolName));
  resolve(
    m,
    'qos',
    fromAnnotation(m, 'qos'),
    fromProfile(m, 'qos', 'qos', profile?.qos),
    fromPool(m, 'qos', 'qosConfig.defaultQoS', pool?.qosConfig?.defaultQoS),
    byDefault('qos', DEFAULT_QOS),
  );
  resolve(
    m,
    'isLocalGpu',
    fromAnnotation(m, 'isLocalGpu'),
    fromProfile(m, 'boolean', 'isLocalGPU', profile?.isLocalGPU),
    fromPool(m, 'boolean', 'defaultUsingLocalGPU', pool?.defaultUsingLocalGPU),
    byDefault('isLocalGpu', DEFAULT_IS_LOCAL_GPU),
  );
  resolve(
    m,
    'gpuCount',
    fromAnnotation(m, 'gpuCount'),
    [m.annotations.gpuIndices?.length, 'annotation', ANNOTATION.gpuIndices],
    fromProfile(m, 'gpuCount', 'gpuCount', profile?.gpuCount),
    byDefault('gpuCount', DEFAULT_GPU_COUNT),
  );
  resolve(m, 'gpuModel', fromAnnotation(m, 'gpuModel'), fromProfile(m, 'gpuModel', 'gpuModel', profile?.gpuModel));
  resolve(m, 'replicas', fromAnnotation(m, 'replicas'), fromProfile(m, 'replicas', 'replicas', profile?.replicas));
}

/** TFLOPS and VRAM requests and limits, and the GPU indices. */
function resolveResources(m: Merge, profile: WorkloadProfileSpec | undefined, pool: PoolDefaults | undefined): void {
  const res = profile?.resources;
  const a = m.annotations;
  const overrides = pool?.capacityConfig?.gpuTflops ?? {};
  const model = m.out.gpuModel as string | undefined;
  // The figures of the pool's GPUs the model selects: its own by product, then the catalog's.
  const figures = model === undefined ? [] : modelTflopsInPool(model, overrides);
  const modelTflops = figures[0]?.tflops;
  const variants = figures.length > 1 ? figures : [];
  const dedicated = shareOfGpu(m, modelTflops, variants, 'dedicatedGpu', a.dedicatedGpu ? 100 : undefined, 'true');
  const percent = (option: 'computePercentRequest' | 'computePercentLimit') =>
    shareOfGpu(m, modelTflops, variants, option, a[option], a[option] === undefined ? undefined : String(a[option]));
  resolve(
    m,
    'tflopsRequest',
    fromAnnotation(m, 'tflopsRequest'),
    percent('computePercentRequest'),
    dedicated,
    fromProfile(m, 'tflops', 'resources.requests.tflops', res?.requests?.tflops),
  );
  resolve(
    m,
    'tflopsLimit',
    fromAnnotation(m, 'tflopsLimit'),
    percent('computePercentLimit'),
    dedicated,
    fromProfile(m, 'tflops', 'resources.limits.tflops', res?.limits?.tflops),
  );
  if (a.gpuIndices !== undefined)
    [m.out.gpuIndices, m.sources.gpuIndices, m.fields.gpuIndices] = [a.gpuIndices, 'annotation', ANNOTATION.gpuIndices];
  resolve(m, 'vramRequest', fromAnnotation(m, 'vramRequest'), fromProfile(m, 'vram', 'resources.requests.vram', res?.requests?.vram));
  resolve(m, 'vramLimit', fromAnnotation(m, 'vramLimit'), fromProfile(m, 'vram', 'resources.limits.vram', res?.limits?.vram));
}

/**
 * compute-percent and dedicated-gpu are TFLOPS written as a share of one GPU of the resolved model:
 * `percent` of `modelTflops`; an issue when the model's TFLOPS are unknown, or when the model name
 * selects models of different TFLOPS (`H100`: SXM, PCIe, NVL), since the share would be sized for one
 * and could land on another (a whole SXM GPU never fits a PCIe one; 50 % of an SXM is 65 % of a PCIe).
 */
function shareOfGpu(
  m: Merge,
  modelTflops: number | undefined,
  variants: readonly GpuTflops[],
  option: 'computePercentRequest' | 'computePercentLimit' | 'dedicatedGpu',
  percent: number | undefined,
  shown: unknown,
): Candidate {
  if (percent === undefined) return [undefined, 'annotation', ANNOTATION[option]];
  if (modelTflops === undefined) {
    const model = m.out.gpuModel === undefined ? '' : `; ${m.fields.gpuModel} ${JSON.stringify(m.out.gpuModel)} is in neither`;
    m.issues.push(
      fieldIssue(
        ANNOTATION[option],
        shown,
        `a value together with a ${ANNOTATION.gpuModel} whose TFLOPS are known (the GPU catalog or ${POOL}capacityConfig.gpuTflops)${model}`,
      ),
    );
    return [undefined, 'annotation', ANNOTATION[option]];
  }
  if (variants.length > 0) {
    const names = variants.map((v) => exactModelName(v.model)).filter((n): n is string => n !== undefined);
    m.issues.push(
      fieldIssue(
        ANNOTATION[option],
        shown,
        `a value together with a ${ANNOTATION.gpuModel} that selects GPUs of one TFLOPS figure; ${m.fields.gpuModel} ${JSON.stringify(m.out.gpuModel)} selects ` +
          `${variants.map((v) => `${v.model} (${v.tflops})`).join(', ')}, so the share would be sized for one and could land on another: name one model${names.length ? ` (${names.join(', ')})` : ''}`,
      ),
    );
    return [undefined, 'annotation', ANNOTATION[option]];
  }
  return [Number(((modelTflops * percent) / 100).toPrecision(12)), 'annotation', ANNOTATION[option]];
}

/** Options only annotations set: containers, workload, profile name, generation and worker mode. */
function resolveWorkloadOptions(m: Merge): void {
  for (const option of ['injectContainers', 'workload', 'workloadProfile'] as const) resolve(m, option, fromAnnotation(m, option));
  resolve(m, 'generateWorkload', fromAnnotation(m, 'generateWorkload'), byDefault('generateWorkload', DEFAULT_GENERATE_WORKLOAD));
  resolve(m, 'noStandaloneWorkerMode', fromAnnotation(m, 'noStandaloneWorkerMode'), byDefault('noStandaloneWorkerMode', false));
}

/** A lone request becomes the limit too, a lone limit the request (see the choices above). */
function deriveMissingBounds(m: Merge): void {
  const { out, sources } = m;
  for (const [request, limit] of [
    ['tflopsRequest', 'tflopsLimit'],
    ['vramRequest', 'vramLimit'],
  ] as const) {
    if (out[request] === undefined && out[limit] !== undefined) [out[request], sources[request]] = [out[limit], 'derived'];
    if (out[limit] === undefined && out[request] !== undefined) [out[limit], sources[limit]] = [out[request], 'derived'];
  }
}

/** The merged result checked with the codec's own rules; values show as they are written. */
function mergedIssues(m: Merge): FieldIssue[] {
  const merged = m.out as unknown as GpuWorkloadSettings;
  const raw: Partial<Record<GpuWorkloadOptionName, unknown>> = { ...merged };
  for (const [option, kind] of [
    ['tflopsRequest', 'tflops'],
    ['tflopsLimit', 'tflops'],
    ['vramRequest', 'vram'],
    ['vramLimit', 'vram'],
  ] as const) {
    const value = merged[option];
    if (value !== undefined) raw[option] = showQuantity(kind, value);
  }
  for (const option of ['isLocalGpu', 'noStandaloneWorkerMode'] as const) raw[option] = String(merged[option]);
  return checkCrossRules(merged, raw, (o) => m.fields[o] ?? ANNOTATION[o], 'annotation');
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

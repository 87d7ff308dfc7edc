/**
 * A pod's GPU settings: its `tensor-fusion.ai/*` annotations decoded, gaps filled from the referenced
 * WorkloadProfile and then the GPUPool defaults, and what a share needs checked. The webhook refuses a
 * pod on any issue; the controller's workload generator reads existing pods with the same function, so
 * both see one pod the same way.
 */
import { ANNOTATION, decodeGpuAnnotations, resolveWorkloadSettings, ResolvedWorkloadSettings } from '../../annotations';
import type { GPUPool, TensorFusionWorkloadSpec, WorkloadProfile } from '../../api';
import { FieldIssue, fieldIssue } from '../../model/errors';
import { DEFAULT_POOL_ANNOTATION } from '../../model/metadata-keys';
import { formatBytes } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import type { ShareRequest } from './share';
import type { ShareSettings } from './pod-share/container-env';

/** Cluster reads resolution needs, answered from informer caches. */
export interface SettingsView {
  pool(name: string): GPUPool | undefined;
  poolNames(): string[];
  /** The pool annotated as default (the first by name when several are). */
  defaultPool(): string | undefined;
  profile(namespace: string, name: string): WorkloadProfile | undefined | Promise<WorkloadProfile | undefined>;
}

export interface ResolvedPod {
  readonly settings: ResolvedWorkloadSettings;
  readonly pool: string;
  readonly poolObject: GPUPool;
  /** Per-GPU requests and limits, complete (a missing one is an issue). */
  readonly share: ShareSettings;
}

/**
 * Resolves `annotations` (a pod's, in `namespace`). `containers` checks `inject-container` against the
 * pod's containers; without it that check is skipped (the controller caches no container lists).
 */
export async function resolvePodSettings(
  annotations: Record<string, unknown>,
  namespace: string,
  view: SettingsView,
  containers?: readonly string[],
): Promise<ResolvedPod | FieldIssue[]> {
  const decoded = decodeGpuAnnotations(annotations, containers ? { containers: [...containers] } : {});
  if (decoded.issues.length > 0) return [...decoded.issues];
  const a = decoded.settings;

  let profile: WorkloadProfile | undefined;
  if (a.workloadProfile !== undefined) {
    profile = await view.profile(namespace, a.workloadProfile);
    if (!profile) {
      return [
        fieldIssue(
          ANNOTATION.workloadProfile,
          a.workloadProfile,
          `the name of a WorkloadProfile in namespace ${JSON.stringify(namespace)}`,
        ),
      ];
    }
  }
  const profilePool = typeof profile?.spec?.poolName === 'string' ? profile.spec.poolName : undefined;
  const poolName = a.pool ?? profilePool ?? view.defaultPool();
  if (poolName === undefined) {
    return [fieldIssue(ANNOTATION.pool, undefined, `a GPUPool name, since no GPUPool is annotated ${DEFAULT_POOL_ANNOTATION}: "true"`)];
  }
  const poolObject = view.pool(poolName);
  if (!poolObject) {
    const field =
      a.pool !== undefined ? ANNOTATION.pool : profilePool !== undefined ? 'WorkloadProfile.spec.poolName' : DEFAULT_POOL_ANNOTATION;
    const names = view.poolNames();
    return [
      fieldIssue(
        field,
        poolName,
        names.length ? `the name of a GPUPool: ${names.join(', ')}` : 'the name of a GPUPool, but the cluster has none',
      ),
    ];
  }
  const resolved = resolveWorkloadSettings(a, profile?.spec, poolObject.spec);
  if (resolved.issues.length > 0) return [...resolved.issues];
  const s = resolved.settings;
  const issues: FieldIssue[] = [];
  if (s.tflopsRequest === undefined) {
    issues.push(
      fieldIssue(ANNOTATION.tflopsRequest, undefined, `a TFLOPS request (or ${ANNOTATION.tflopsLimit}), here or in the WorkloadProfile`),
    );
  }
  if (s.vramRequest === undefined) {
    issues.push(
      fieldIssue(ANNOTATION.vramRequest, undefined, `a VRAM request (or ${ANNOTATION.vramLimit}), here or in the WorkloadProfile`),
    );
  }
  if (s.isLocalGpu && s.noStandaloneWorkerMode && !poolObject.spec.componentConfig?.worker?.image) {
    issues.push(
      fieldIssue(
        ANNOTATION.noStandaloneWorkerMode,
        'true',
        `"false" or nothing, unless GPUPool ${JSON.stringify(poolName)} sets spec.componentConfig.worker.image (the worker this mode injects)`,
      ),
    );
  }
  if (issues.length > 0) return issues;
  const share: ShareSettings = {
    pool: poolName,
    qos: s.qos,
    gpuCount: s.gpuCount,
    tflopsRequest: s.tflopsRequest as number,
    tflopsLimit: s.tflopsLimit as number,
    vramRequest: s.vramRequest as number,
    vramLimit: s.vramLimit as number,
  };
  return { settings: s, pool: poolName, poolObject, share };
}

/** The share request the scheduler extender places (see lib/runtime/shared/share.ts), for `containers` inject-containers. */
export function shareRequest(r: ResolvedPod, containers = 1): ShareRequest {
  const s = r.share;
  return {
    pool: s.pool,
    qos: s.qos,
    gpuCount: s.gpuCount,
    tflopsRequest: s.tflopsRequest,
    tflopsLimit: s.tflopsLimit,
    vramRequest: s.vramRequest,
    vramLimit: s.vramLimit,
    ...(r.settings.gpuModel !== undefined ? { gpuModel: r.settings.gpuModel } : {}),
    ...(r.settings.gpuIndices !== undefined ? { gpuIndices: r.settings.gpuIndices } : {}),
    ...(containers > 1 ? { containers } : {}),
  };
}

/** The spec of a generated TensorFusionWorkload: the resolved share, replicas (1 by default in remote mode), autoscaling. */
export function workloadSpec(r: ResolvedPod): TensorFusionWorkloadSpec {
  const s = r.settings;
  const spec: Record<string, unknown> = {
    poolName: r.pool,
    qos: s.qos,
    isLocalGPU: s.isLocalGpu,
    gpuCount: s.gpuCount,
    resources: {
      requests: { tflops: formatTflops(s.tflopsRequest ?? 0), vram: formatBytes(s.vramRequest ?? 0) },
      limits: { tflops: formatTflops(s.tflopsLimit ?? 0), vram: formatBytes(s.vramLimit ?? 0) },
    },
  };
  if (s.gpuModel !== undefined) spec.gpuModel = s.gpuModel;
  if (s.replicas !== undefined) spec.replicas = s.replicas;
  else if (!s.isLocalGpu) spec.replicas = 1;
  if (s.autoScalingConfig !== undefined) spec.autoScalingConfig = s.autoScalingConfig;
  return spec as TensorFusionWorkloadSpec;
}

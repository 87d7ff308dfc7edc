/**
 * The admission decision for one pod CREATE: decode and validate the annotations, resolve them over
 * the WorkloadProfile and the GPUPool, take a GPU share (local mode) or point the pod at its workload
 * (remote mode), and say how to patch the pod. No HTTP here; cluster reads and the allocation go
 * through {@link AdmissionServices}, so tests drive it directly.
 *
 * Every check happens before the share is taken, so a denied pod never holds one.
 */
import {
  ANNOTATION, decodeGpuAnnotations, resolveWorkloadSettings, ResolvedWorkloadSettings,
} from '../../annotations';
import type { GPUPool, TensorFusionWorkload, TensorFusionWorkloadSpec, WorkloadProfile } from '../../api';
import { FieldIssue, fieldIssue } from '../../errors';
import { ALLOCATION_ANNOTATION, DEFAULT_POOL_ANNOTATION, ENABLED_LABEL, GPU_IDS_ANNOTATION, WORKLOAD_LABEL } from '../../labels';
import { formatBytes, formatTflops } from '../../quantity';
import type { AllocateResult, Allocation, AllocationRequest } from '../../scheduler';
import type { K8sObject } from '../cluster';
import { EnvVar, localGpuEnv, remoteClientEnv, ShareSettings } from './env';
import { topOwnerName } from './owner';
import { PodMutation, podPatch } from './patch';
import { AdmissionRequest, allow, Decision, deny } from './review';
import type { GpuInfo } from './topology';

export interface Taint {
  key: string;
  value?: string;
  effect?: string;
}

/** Cluster reads the handler needs, answered from informer caches (with a live read on a miss). */
export interface AdmissionView {
  pool(name: string): GPUPool | undefined;
  poolNames(): string[];
  /** The pool annotated as default (the first by name when several are). */
  defaultPool(): string | undefined;
  profile(namespace: string, name: string): Promise<WorkloadProfile | undefined>;
  workload(namespace: string, name: string): Promise<TensorFusionWorkload | undefined>;
  gpu(name: string): GpuInfo | undefined;
  nodeTaints(node: string): readonly Taint[];
}

export interface AdmissionServices {
  readonly view: AdmissionView;
  /** Places a share for allocation id `request.id`; a dry run changes nothing. */
  reserve(request: AllocationRequest, namespace: string, dryRun: boolean): Promise<AllocateResult>;
  /**
   * The placed allocation with this id, if the ledger holds it (a reinvoked admission, possibly
   * answered first by another replica: a miss re-reads the ledger before saying no).
   */
  allocation(pool: string, id: string): Promise<Allocation | undefined>;
  /** Creates or updates a generated TensorFusionWorkload; never called for dry runs. */
  ensureWorkload(namespace: string, name: string, pool: string, spec: TensorFusionWorkloadSpec): Promise<void>;
}

/** Node taints a GPU pod is given tolerations for: those GPU pools and the GPU operator put there. */
export const TOLERATED_TAINT_PREFIXES = ['tensor-fusion.ai/', 'nvidia.com/gpu'] as const;

/** Name of the init container added in no-standalone-worker mode. */
export const WORKER_INIT_CONTAINER = 'tensor-fusion-worker';

/** The annotation keys this webhook writes; dropped before decoding so an admitted pod decodes again. */
const WRITTEN_KEYS = [ALLOCATION_ANNOTATION, GPU_IDS_ANNOTATION];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function containerNames(pod: K8sObject): string[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const list = Array.isArray(spec.containers) ? spec.containers : [];
  return list.map((c) => (isObject(c) && typeof c.name === 'string' ? c.name : '')).filter((n) => n !== '');
}

function userAnnotations(pod: K8sObject): Record<string, unknown> {
  const ann = isObject(pod.metadata?.annotations) ? { ...(pod.metadata.annotations as Record<string, unknown>) } : {};
  for (const k of WRITTEN_KEYS) delete ann[k];
  return ann;
}

/** The allocation recorded on a pod by an earlier invocation, if it parses. */
export function recordedAllocation(pod: K8sObject): Allocation | undefined {
  const text = pod.metadata?.annotations?.[ALLOCATION_ANNOTATION];
  if (typeof text !== 'string') return undefined;
  try {
    const a = JSON.parse(text);
    return isObject(a) && typeof a.id === 'string' && typeof a.pool === 'string' && Array.isArray(a.gpuIds) ? (a as unknown as Allocation) : undefined;
  } catch {
    return undefined;
  }
}

function describeShare(s: ShareSettings): string {
  return `${s.gpuCount} GPU${s.gpuCount === 1 ? '' : 's'} with ${formatTflops(s.tflopsRequest)} TFLOPS and ${formatBytes(s.vramRequest)} VRAM each on one node`;
}

function workloadSpec(s: ResolvedWorkloadSettings, pool: string): TensorFusionWorkloadSpec {
  const spec: Record<string, unknown> = {
    poolName: pool, qos: s.qos, isLocalGPU: s.isLocalGpu, gpuCount: s.gpuCount,
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

interface Resolved {
  settings: ResolvedWorkloadSettings;
  pool: string;
  poolObject: GPUPool;
  share: ShareSettings;
  injectInto: string[];
}

async function resolve(req: AdmissionRequest, pod: K8sObject, svc: AdmissionServices): Promise<Resolved | FieldIssue[]> {
  const namespace = req.namespace ?? pod.metadata?.namespace ?? '';
  const containers = containerNames(pod);
  if (containers.length === 0) return [fieldIssue('spec.containers', pod.spec && (pod.spec as Record<string, unknown>).containers, 'at least one named container')];
  const decoded = decodeGpuAnnotations(userAnnotations(pod), { containers });
  if (decoded.issues.length > 0) return [...decoded.issues];
  const annotations = decoded.settings;

  let profile: WorkloadProfile | undefined;
  if (annotations.workloadProfile !== undefined) {
    profile = await svc.view.profile(namespace, annotations.workloadProfile);
    if (!profile) {
      return [fieldIssue(ANNOTATION.workloadProfile, annotations.workloadProfile, `the name of a WorkloadProfile in namespace ${JSON.stringify(namespace)}`)];
    }
  }
  const profilePool = typeof profile?.spec?.poolName === 'string' ? profile.spec.poolName : undefined;
  const poolName = annotations.pool ?? profilePool ?? svc.view.defaultPool();
  if (poolName === undefined) {
    return [fieldIssue(ANNOTATION.pool, undefined, `a GPUPool name, since no GPUPool is annotated ${DEFAULT_POOL_ANNOTATION}: "true"`)];
  }
  const poolObject = svc.view.pool(poolName);
  if (!poolObject) {
    const field = annotations.pool !== undefined ? ANNOTATION.pool : profilePool !== undefined ? 'WorkloadProfile.spec.poolName' : DEFAULT_POOL_ANNOTATION;
    const names = svc.view.poolNames();
    return [fieldIssue(field, poolName, names.length ? `the name of a GPUPool: ${names.join(', ')}` : 'the name of a GPUPool, but the cluster has none')];
  }
  const resolved = resolveWorkloadSettings(annotations, profile?.spec, poolObject.spec);
  if (resolved.issues.length > 0) return [...resolved.issues];
  const s = resolved.settings;
  const issues: FieldIssue[] = [];
  if (s.tflopsRequest === undefined) {
    issues.push(fieldIssue(ANNOTATION.tflopsRequest, undefined, `a TFLOPS request (or ${ANNOTATION.tflopsLimit}), here or in the WorkloadProfile`));
  }
  if (s.vramRequest === undefined) {
    issues.push(fieldIssue(ANNOTATION.vramRequest, undefined, `a VRAM request (or ${ANNOTATION.vramLimit}), here or in the WorkloadProfile`));
  }
  if (s.isLocalGpu && s.noStandaloneWorkerMode && !poolObject.spec.componentConfig?.worker?.image) {
    issues.push(fieldIssue(ANNOTATION.noStandaloneWorkerMode, 'true',
      `"false" or nothing, unless GPUPool ${JSON.stringify(poolName)} sets spec.componentConfig.worker.image (the worker this mode injects)`));
  }
  if (issues.length > 0) return issues;
  const injectInto = s.injectContainers ? [...s.injectContainers] : [containers[0]];
  const share: ShareSettings = {
    pool: poolName, qos: s.qos, gpuCount: s.gpuCount,
    tflopsRequest: s.tflopsRequest as number, tflopsLimit: s.tflopsLimit as number,
    vramRequest: s.vramRequest as number, vramLimit: s.vramLimit as number,
  };
  return { settings: s, pool: poolName, poolObject, share, injectInto };
}

/** Finds or generates the workload; returns its name, or the issue that denies the pod. */
async function workloadFor(req: AdmissionRequest, pod: K8sObject, r: Resolved, svc: AdmissionServices): Promise<string | FieldIssue | undefined> {
  const namespace = req.namespace ?? pod.metadata?.namespace ?? '';
  const s = r.settings;
  if (!s.generateWorkload) {
    const name = s.workload as string;
    if (!(await svc.view.workload(namespace, name))) {
      return fieldIssue(ANNOTATION.workload, name, `the name of an existing TensorFusionWorkload in namespace ${JSON.stringify(namespace)}, since ${ANNOTATION.generateWorkload} is "false"`);
    }
    return name;
  }
  const name = s.workload ?? topOwnerName(pod);
  if (name === undefined) return undefined;
  if (!req.dryRun) await svc.ensureWorkload(namespace, name, r.pool, workloadSpec(s, r.pool));
  return name;
}

function tolerationsFor(taints: readonly Taint[]): Record<string, unknown>[] {
  return taints
    .filter((t) => TOLERATED_TAINT_PREFIXES.some((p) => t.key.startsWith(p)))
    .map((t) => ({ key: t.key, operator: 'Equal', value: t.value ?? '', ...(t.effect ? { effect: t.effect } : {}) }));
}

function envFor(containers: readonly string[], vars: EnvVar[]): Map<string, EnvVar[]> {
  return new Map(containers.map((c) => [c, vars]));
}

/**
 * Decides one AdmissionReview request. Pods that are not opted in, and anything but a pod CREATE,
 * are allowed unchanged.
 */
export async function admitPod(req: AdmissionRequest, svc: AdmissionServices): Promise<Decision> {
  const pod = req.object;
  if (req.operation !== 'CREATE' || req.kind?.kind !== 'Pod' || req.subResource) return allow();
  if (!isObject(pod) || !isObject(pod.metadata)) return allow();
  if (pod.metadata.labels?.[ENABLED_LABEL] !== 'true') return allow();
  const namespace = req.namespace ?? pod.metadata.namespace ?? '';

  const r = await resolve(req, pod, svc);
  if (Array.isArray(r)) return deny(r);
  const workload = await workloadFor(req, pod, r, svc);
  if (isObject(workload)) return deny([workload as FieldIssue]);
  const share: ShareSettings = { ...r.share, workload: workload as string | undefined };
  const labels = typeof workload === 'string' ? { [WORKLOAD_LABEL]: workload } : undefined;

  if (!r.settings.isLocalGpu) {
    if (workload === undefined) {
      return deny([fieldIssue(ANNOTATION.workload, undefined, 'a TensorFusionWorkload name, since the pod has neither a name nor an owner to name one after')]);
    }
    const vars = remoteClientEnv(share, workload as string, namespace, `${WORKLOAD_LABEL}=${workload}`);
    return allow(podPatch(pod, { labels, env: envFor(r.injectInto, vars) }));
  }

  // A reinvocation sees the allocation the first call recorded; reuse it only if the ledger has it
  // (or, for a dry run, if this very request made it), so a copied annotation never grants a share.
  const previous = recordedAllocation(pod);
  let allocation = previous && previous.pool === r.pool
    ? (req.dryRun && previous.id === req.uid ? previous : await svc.allocation(r.pool, previous.id))
    : undefined;
  if (!allocation) {
    const result = await svc.reserve({
      id: req.uid, pool: r.pool, qos: r.share.qos, gpuCount: r.share.gpuCount,
      tflopsRequest: r.share.tflopsRequest, tflopsLimit: r.share.tflopsLimit,
      // Quantities may be fractional (`1500m`); the allocator counts whole bytes, rounded up.
      vramRequest: Math.ceil(r.share.vramRequest), vramLimit: Math.ceil(r.share.vramLimit),
      ...(r.settings.gpuModel !== undefined ? { gpuModel: r.settings.gpuModel } : {}),
    }, namespace, req.dryRun === true);
    if (!result.ok) {
      return deny([fieldIssue(ANNOTATION.pool, r.pool, `a GPUPool with room for ${describeShare(share)}; ${result.reasons.map((x) => x.message).join('; ')}`)]);
    }
    allocation = result.allocation;
  }

  const gpus = allocation.gpuIds.map((id) => svc.view.gpu(id));
  const smallest = Math.min(...gpus.map((g) => g?.tflops ?? Infinity));
  const devices = allocation.gpuIds.map((id, i) => gpus[i]?.device ?? id);
  const vars = localGpuEnv(share, { ...allocation, gpuIds: devices }, Number.isFinite(smallest) ? smallest : 0);
  const mutation: PodMutation = {
    annotations: { [ALLOCATION_ANNOTATION]: JSON.stringify(allocation), [GPU_IDS_ANNOTATION]: allocation.gpuIds.join(',') },
    labels,
    nodeSelector: gpus[0]?.nodeSelector ?? { 'kubernetes.io/hostname': allocation.node },
    tolerations: tolerationsFor(svc.view.nodeTaints(allocation.node)),
    env: envFor(r.injectInto, vars),
    initContainers: r.settings.noStandaloneWorkerMode
      ? [{ name: WORKER_INIT_CONTAINER, image: r.poolObject.spec.componentConfig?.worker?.image, env: vars }]
      : undefined,
  };
  return allow(podPatch(pod, mutation));
}

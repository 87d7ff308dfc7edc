/**
 * The MPS limits as files: a downwardAPI volume over the annotations the bind writes (and an in-place
 * resize rewrites, lib/runtime/autoscale/resize.ts), mounted in every inject-container. The kubelet
 * refreshes downward API files when the annotations change; environment variables are fixed when the
 * container starts, and MPS reads its variables only when a process starts. So the files show a new
 * limit at once, the variables (kept beside them) from the next restart.
 */
import { fieldIssue, FieldIssue } from '../../../model/errors';
import { PLACEMENT_ANNOTATIONS } from '../../../model/metadata-keys';
import type { JsonPatchOp, K8sObject } from '../../kube/cluster';
import { NVIDIA_ENV } from './container-env';

/** Name of the volume the webhook adds. */
export const LIMITS_VOLUME = 'tensor-fusion-limits';
/** Where inject-containers find it; one file per MPS variable, named after it. */
export const LIMITS_MOUNT_PATH = '/var/run/tensor-fusion/limits';

/** File name (the variable's name) and the annotation it shows. */
export const LIMIT_FILES: ReadonlyArray<readonly [file: string, annotation: string]> = [
  [NVIDIA_ENV.mpsMemLimit, PLACEMENT_ANNOTATIONS.mpsMemoryLimit],
  [NVIDIA_ENV.mpsThreads, PLACEMENT_ANNOTATIONS.mpsThreadPercentage],
];

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The volume as the webhook adds it. */
export function limitsVolume(): Json {
  return {
    name: LIMITS_VOLUME,
    downwardAPI: { items: LIMIT_FILES.map(([path, a]) => ({ path, fieldRef: { fieldPath: `metadata.annotations['${a}']` } })) },
  };
}

/** True when `v` is our volume (as the API server stores it: defaults such as apiVersion and defaultMode added). */
function isOurs(v: Json): boolean {
  const items = isObject(v.downwardAPI) && Array.isArray(v.downwardAPI.items) ? v.downwardAPI.items : [];
  const want = LIMIT_FILES.map(([path, a]) => `${path}=metadata.annotations['${a}']`);
  const have = items.map((i) => (isObject(i) && isObject(i.fieldRef) ? `${i.path}=${i.fieldRef.fieldPath}` : ''));
  return JSON.stringify(have) === JSON.stringify(want);
}

/** A volume of the pod that already has our name but is not ours: the pod is refused rather than have it replaced. */
export function limitsVolumeIssues(pod: K8sObject): FieldIssue[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const volumes = Array.isArray(spec.volumes) ? spec.volumes : [];
  const issues: FieldIssue[] = [];
  volumes.forEach((v, i) => {
    if (isObject(v) && v.name === LIMITS_VOLUME && !isOurs(v)) {
      issues.push(
        fieldIssue(
          `spec.volumes[${i}].name`,
          v.name,
          `a name other than "${LIMITS_VOLUME}", which the webhook gives the volume of MPS limit files it adds`,
        ),
      );
    }
  });
  return issues;
}

/**
 * Operations adding the volume and its mount in `containers` (by name), when missing: none on a pod
 * that has them (reinvocation). Apply after the pod's other operations (they may add `/spec`).
 */
export function limitsVolumeOps(pod: K8sObject, containers: readonly string[]): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  const spec = isObject(pod.spec) ? pod.spec : {};
  const volumes = spec.volumes;
  if (!Array.isArray(volumes)) ops.push({ op: 'add', path: '/spec/volumes', value: [limitsVolume()] });
  else if (!volumes.some((v) => isObject(v) && v.name === LIMITS_VOLUME))
    ops.push({ op: 'add', path: '/spec/volumes/-', value: limitsVolume() });
  const list = Array.isArray(spec.containers) ? spec.containers : [];
  const mount = { name: LIMITS_VOLUME, mountPath: LIMITS_MOUNT_PATH, readOnly: true };
  for (const name of containers) {
    const i = list.findIndex((c) => isObject(c) && c.name === name);
    if (i < 0) continue;
    const mounts = (list[i] as Json).volumeMounts;
    const path = `/spec/containers/${i}/volumeMounts`;
    if (!Array.isArray(mounts)) ops.push({ op: 'add', path, value: [mount] });
    else if (!mounts.some((m) => isObject(m) && m.name === LIMITS_VOLUME)) ops.push({ op: 'add', path: `${path}/-`, value: mount });
  }
  return ops;
}

/**
 * Generated TensorFusionWorkloads (`generate-workload`, on by default). The leader makes them from
 * opted-in pods that exist and carry the workload label the webhook gave them, never from an
 * AdmissionReview: a pod that exists passed the API server's authentication, authorization and
 * quota, and the workload goes in that pod's namespace. The spec is the resolved share of the newest
 * such pod, resolved with the webhook's own rules, in the shape the webhook used to write.
 *
 * Only workloads carrying {@link GENERATED_WORKLOAD_LABEL} are ever updated: one someone else made is
 * left as it is. A generated workload is owned by the top owner of every pod it was generated for
 * (a Deployment, StatefulSet, Job, CronJob, or the pod itself; see top-owner.ts), so the garbage
 * collector deletes it, and its remote-mode workers, when the last of them goes, not when its pods do
 * (a Deployment scaled to zero comes back). One left with no owner and no pod asking for it (made by
 * an earlier version, or whose owners could not be read) is deleted here: an orphan.
 */
import type { TensorFusionWorkload } from '../../api';
import { ANNOTATION } from '../../annotations';
import { GENERATED_WORKLOAD_LABEL, WORKLOAD_LABEL } from '../../model/metadata-keys';
import { API_VERSION } from '../../model/group';
import type { K8sObject } from '../kube/cluster';
import { isActivePod } from '../shared/pod-lifecycle';
import { isOptedIn } from '../shared/share';
import { resolvePodSettings, SettingsView, workloadSpec } from '../shared/resolve-pod';
import { isGenerated } from '../shared/workload-origin';
import type { OwnerReference } from '../shared/top-owner';

/** What to do for one workload name: apply this object, delete the orphan, or nothing (and why, when it matters). */
export interface GenerationPlan {
  readonly apply?: K8sObject;
  readonly delete?: boolean;
  readonly skipped?: string;
}

/** The top owner of a pod, or undefined when it cannot be told now. */
export type OwnerOf = (pod: K8sObject) => Promise<OwnerReference | undefined>;

/** The spec fields a generated workload gets from its pod; others (added by hand) are left alone. */
const GENERATED_FIELDS = ['poolName', 'qos', 'isLocalGPU', 'gpuCount', 'resources', 'gpuModel', 'replicas', 'autoScalingConfig'] as const;

/** JSON with object keys sorted, so that specs read back from the API server compare equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Opted-in, live pods labelled for workload `name` that ask for it to be generated, newest first. */
export function generatingPods(name: string, pods: readonly K8sObject[]): K8sObject[] {
  return pods
    .filter((p) => isOptedIn(p) && p.metadata.labels?.[WORKLOAD_LABEL] === name && isActivePod(p))
    .filter((p) => p.metadata.annotations?.[ANNOTATION.generateWorkload] !== 'false')
    .sort((a, b) => {
      const ta = a.metadata.creationTimestamp ?? '';
      const tb = b.metadata.creationTimestamp ?? '';
      if (ta !== tb) return ta < tb ? 1 : -1;
      return (a.metadata.name ?? '') < (b.metadata.name ?? '') ? 1 : -1;
    });
}

/**
 * What the workload `namespace/name` should be, from the pods labelled for it (`pods`, any order) and
 * the workload as cached (`existing`). Pods whose annotations no longer resolve (an edited annotation,
 * a profile gone) are passed over for the next newest.
 */
export async function planGeneratedWorkload(
  namespace: string,
  name: string,
  pods: readonly K8sObject[],
  existing: TensorFusionWorkload | undefined,
  view: SettingsView,
  ownerOf?: OwnerOf,
): Promise<GenerationPlan> {
  const generating = generatingPods(name, pods);
  const existingRefs = (existing?.metadata?.ownerReferences ?? []) as OwnerReference[];
  if (generating.length === 0) {
    const orphan = existing && isGenerated(existing) && !existing.metadata?.deletionTimestamp && existingRefs.length === 0;
    return orphan ? { delete: true } : {};
  }
  for (const pod of generating) {
    const r = await resolvePodSettings(pod.metadata.annotations ?? {}, namespace, view);
    // A `workload` annotation that no longer matches the label means the label was edited: not ours to follow.
    if (Array.isArray(r) || !r.settings.generateWorkload || (r.settings.workload !== undefined && r.settings.workload !== name)) continue;
    if (existing && !isGenerated(existing)) {
      return {
        skipped: `TensorFusionWorkload ${namespace}/${name} exists and was not generated (no ${GENERATED_WORKLOAD_LABEL}: "true"); left as it is`,
      };
    }
    const spec = workloadSpec(r) as unknown as Record<string, unknown>;
    const have = (existing?.spec ?? {}) as Record<string, unknown>;
    // Owners are only added: the garbage collector drops a reference whose owner is gone.
    const owners = new Map(existingRefs.map((o) => [o.uid, o]));
    const added: OwnerReference[] = [];
    for (const p of generating) {
      const o = ownerOf ? await ownerOf(p) : undefined;
      if (o && !owners.has(o.uid)) {
        owners.set(o.uid, o);
        added.push(o);
      }
    }
    if (
      existing &&
      added.length === 0 &&
      GENERATED_FIELDS.every((k) => canonical(have[k]) === canonical(spec[k])) &&
      existing.metadata?.labels?.[WORKLOAD_LABEL] === name
    )
      return {};
    // No controller flag and no blockOwnerDeletion: the owners do not manage the workload, and
    // blockOwnerDeletion would need update rights on every owner kind's finalizers.
    const ownerReferences = [...owners.values()].map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.name, uid: o.uid }));
    return {
      apply: {
        apiVersion: API_VERSION,
        kind: 'TensorFusionWorkload',
        metadata: {
          name,
          namespace,
          labels: { [WORKLOAD_LABEL]: name, [GENERATED_WORKLOAD_LABEL]: 'true' },
          ...(ownerReferences.length > 0 ? { ownerReferences } : {}),
        },
        spec,
      },
    };
  }
  return {};
}

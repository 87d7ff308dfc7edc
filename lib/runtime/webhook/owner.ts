/**
 * Names a pod's generated TensorFusionWorkload after its top owner, without reading the owners (the
 * controller has no RBAC on ReplicaSets or Jobs): a ReplicaSet's name minus its pod-template-hash is
 * its Deployment; a Job named `<name>-<digits>` (8+ digits, the scheduled minute) belongs to CronJob
 * `<name>`; other controllers (StatefulSet, DaemonSet, Job, custom) give their own name; a bare pod
 * gives its name, or its generateName without the trailing dash.
 */
import type { K8sObject } from '../kube/cluster';

const POD_TEMPLATE_HASH = 'pod-template-hash';
const CRONJOB_SUFFIX = /^(.+)-\d{8,}$/;

/** The name of the pod's top owner as a workload name, or undefined when the pod has no name yet. */
export function topOwnerName(pod: K8sObject): string | undefined {
  const refs = Array.isArray(pod.metadata?.ownerReferences) ? pod.metadata.ownerReferences : [];
  const owner = refs.find((r) => r && r.controller === true) ?? refs[0];
  if (owner && typeof owner.name === 'string' && owner.name !== '') {
    const name = owner.name;
    if (owner.kind === 'ReplicaSet') {
      const hash = pod.metadata.labels?.[POD_TEMPLATE_HASH];
      if (hash && name.endsWith(`-${hash}`)) return name.slice(0, -hash.length - 1);
      return name;
    }
    if (owner.kind === 'Job') return CRONJOB_SUFFIX.exec(name)?.[1] ?? name;
    return name;
  }
  if (typeof pod.metadata?.name === 'string' && pod.metadata.name !== '') return pod.metadata.name;
  const prefix = typeof pod.metadata?.generateName === 'string' ? pod.metadata.generateName.replace(/-+$/, '') : '';
  return prefix || undefined;
}

/**
 * How the webhook hands a local-GPU pod to the Kubernetes scheduler: which scheduler names it takes
 * over, and the priority class of the pod's QoS level (so critical and high pods leave the scheduling
 * queue before low ones, and may preempt them).
 */
import type { FieldIssue } from '../../model/errors';
import { fieldIssue } from '../../model/errors';
import { T9K } from '../../t9k/keys';
import { qosPriorityClassName, SCHEDULER_NAME } from '../../contract/object-names';
import { QOS_PREEMPTION_POLICY, QOS_PRIORITY_VALUES, QosLevel } from '../../model/rules';
import type { K8sObject } from '../kube/cluster';

/** What kube-scheduler calls itself when a pod names no scheduler. */
export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';

function specOf(pod: K8sObject): Record<string, unknown> {
  return pod.spec !== null && typeof pod.spec === 'object' ? (pod.spec as Record<string, unknown>) : {};
}

/** Pods the T9k Scheduler places; the T9k GPU modes are left exactly as they are. */
export function isT9kPod(pod: K8sObject): boolean {
  return specOf(pod).schedulerName === T9K.schedulerName;
}

/**
 * Refuses a local-GPU pod that names a scheduler we would have to override: only our scheduler places
 * GPU shares, and silently replacing a scheduler someone chose on purpose would hide that.
 */
export function schedulerIssue(pod: K8sObject): FieldIssue | undefined {
  const name = specOf(pod).schedulerName;
  if (name === undefined || name === '' || name === DEFAULT_SCHEDULER_NAME || name === SCHEDULER_NAME) return undefined;
  return fieldIssue(
    'spec.schedulerName',
    name,
    `nothing, "${DEFAULT_SCHEDULER_NAME}" or "${SCHEDULER_NAME}", since local GPU shares are placed by ${SCHEDULER_NAME}`,
  );
}

/** A priority class with the values the Priority admission plugin derives from it. */
export interface PodPriority {
  readonly className: string;
  readonly value: number;
  readonly preemptionPolicy: string;
}

/**
 * The priority to set, or the warning to give when the pod already names a class: the user's
 * choice is kept (it may be there for preemption or quota reasons we cannot see).
 */
export function priorityFor(pod: K8sObject, qos: QosLevel): { priority?: PodPriority; warning?: string } {
  const ours = qosPriorityClassName(qos);
  const have = specOf(pod).priorityClassName;
  if (typeof have !== 'string' || have === '' || have === ours) {
    return { priority: { className: ours, value: QOS_PRIORITY_VALUES[qos], preemptionPolicy: QOS_PREEMPTION_POLICY } };
  }
  return {
    warning: `spec.priorityClassName: kept ${JSON.stringify(have)}, so QoS "${qos}" does not set the pod's scheduling priority (it would be ${JSON.stringify(ours)})`,
  };
}

/**
 * One PriorityClass per QoS level, which the webhook gives GPU pods: kube-scheduler's queue pops the
 * highest priority first, so critical and high pods are placed before low ones when they wait for the
 * same room. `preemptionPolicy: Never`: a pod's QoS never evicts another pod. And one below every
 * pod for the growth placeholders (docs/growth.md).
 */
import { KubeObject } from '../../k8s/object';
import { GROWTH_PRIORITY_CLASS, qosPriorityClassName } from '../../contract/object-names';
import { QOS_LEVELS, QOS_PREEMPTION_POLICY, QOS_PRIORITY_VALUES } from '../../model/rules';

export function renderPriorityClasses(labels: Record<string, string>): KubeObject[] {
  const growth: KubeObject = {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: GROWTH_PRIORITY_CLASS.name, labels },
    value: GROWTH_PRIORITY_CLASS.value,
    globalDefault: false,
    preemptionPolicy: 'Never',
    description:
      'Tensor Fusion growth placeholders: pods that ask a node autoscaler for the GPU nodes waiting shares need. ' +
      'Below every pod, so any pod displaces them; never preempts.',
  };
  return [...qosPriorityClasses(labels), growth];
}

function qosPriorityClasses(labels: Record<string, string>): KubeObject[] {
  return QOS_LEVELS.map((qos) => ({
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: qosPriorityClassName(qos), labels },
    value: QOS_PRIORITY_VALUES[qos],
    globalDefault: false,
    preemptionPolicy: QOS_PREEMPTION_POLICY,
    description:
      `Tensor Fusion QoS ${qos}: orders the GPU scheduling queue, so critical and high pods are placed before ` +
      'medium and low ones. Never preempts: no pod is evicted to make room for another.',
  }));
}

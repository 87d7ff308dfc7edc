/**
 * One PriorityClass per QoS level, which the webhook gives GPU pods: kube-scheduler's queue pops the
 * highest priority first, so critical and high pods are placed before low ones when they wait for the
 * same room. `preemptionPolicy: Never`: a pod's QoS never evicts another pod.
 */
import { KubeObject } from '../../k8s/object';
import { qosPriorityClassName } from '../../contract/object-names';
import { QOS_LEVELS, QOS_PREEMPTION_POLICY, QOS_PRIORITY_VALUES } from '../../model/rules';

export function renderPriorityClasses(labels: Record<string, string>): KubeObject[] {
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

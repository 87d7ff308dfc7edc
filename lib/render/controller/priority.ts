/**
 * One PriorityClass per QoS level, which the webhook gives GPU pods: kube-scheduler's queue pops the
 * highest priority first, so critical and high pods are placed before low ones when they wait for the
 * same room. `preemptionPolicy: Never`: a pod's QoS never evicts another pod.
 */
import { KubeObject } from '../../k8s-object';
import { qosPriorityClassName } from '../../labels';
import { QOS_LEVELS, QosLevel } from '../../rules';

/**
 * The value of each QoS level. Small, so GPU pods stay near ordinary pods (priority 0) in the
 * kubelet's eviction order and below the classes clusters define for their own services; spaced, so
 * a cluster can put its own classes between them. A PriorityClass's value cannot be changed later.
 */
export const QOS_PRIORITY_VALUES: Readonly<Record<QosLevel, number>> = { low: 100, medium: 200, high: 300, critical: 400 };

export function renderPriorityClasses(labels: Record<string, string>): KubeObject[] {
  return QOS_LEVELS.map((qos) => ({
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: qosPriorityClassName(qos), labels },
    value: QOS_PRIORITY_VALUES[qos],
    globalDefault: false,
    preemptionPolicy: 'Never',
    description:
      `Tensor Fusion QoS ${qos}: orders the GPU scheduling queue, so critical and high pods are placed before ` +
      'medium and low ones. Never preempts: no pod is evicted to make room for another.',
  }));
}

/**
 * TensorFusionWorkload status from the worker pods labelled with the workload's name.
 */
import type { TensorFusionWorkloadStatus } from '../../api';
import { PodLike, setCondition } from '../shared/capacity';

function isPodReady(pod: PodLike): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/**
 * Counts workers (pods not being deleted) and ready workers. Phase: Failed when any worker failed,
 * Running when every expected worker is ready, Pending otherwise. Autoscaling status and conditions
 * written by the recommender are kept.
 */
export function workloadStatus(
  pods: PodLike[],
  desiredReplicas: number | undefined,
  previous: TensorFusionWorkloadStatus | undefined,
  now: string,
): TensorFusionWorkloadStatus {
  const workers = pods.filter((p) => !p.metadata.deletionTimestamp);
  const ready = workers.filter(isPodReady).length;
  const failed = workers.filter((p) => p.status?.phase === 'Failed').length;
  const expected = desiredReplicas ?? workers.length;
  const phase = failed > 0 ? 'Failed' : expected > 0 && ready >= expected ? 'Running' : 'Pending';
  return {
    phase,
    workerCount: workers.length,
    readyWorkers: ready,
    // Written by the recommender (lib/runtime/autoscale/); carried over, never recomputed here.
    ...(previous?.autoscaling ? { autoscaling: previous.autoscaling } : {}),
    conditions: setCondition(
      previous?.conditions,
      {
        type: 'Ready',
        status: phase === 'Running' ? 'True' : 'False',
        reason: phase === 'Running' ? 'WorkersReady' : failed > 0 ? 'WorkerFailed' : 'WorkersNotReady',
        message: `${ready}/${expected} workers ready${failed ? `, ${failed} failed` : ''}`,
      },
      now,
    ),
  };
}

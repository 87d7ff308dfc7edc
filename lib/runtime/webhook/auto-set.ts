/**
 * autoSetRequests and autoSetLimits at admission: a new pod whose resolved settings turn either on
 * gets its workload's recommendation (TensorFusionWorkload `status.autoscaling.recommendation`, written
 * by the recommender loop) as its share, and a warning naming each value that changed. The workload is
 * read from the informer cache only: no API call on the admission path (a workload not cached yet has
 * no recommendation worth a round trip).
 */
import type { TensorFusionWorkload } from '../../api';
import { applyRecommendation, appliesToShares, changedAmounts, recommendationOf, sameResources } from '../../autoscale';
import { decodeAutoScalingConfig } from '../../api/autoscaling-settings';
import type { ShareSettings } from '../shared/pod-share/container-env';
import type { ResolvedPod } from '../shared/resolve-pod';

/**
 * The pod's share with the recommendation applied, and the warning that says so; the share unchanged
 * and no warning when autoscaling of requests and limits is off, there is no recommendation, or it
 * changes nothing.
 * @example
 * // 'tensor-fusion.ai/tflops-request: 10 became 4.5 and tensor-fusion.ai/vram-request: 8Gi became 2Gi,
 * //  the recommendation in the status of TensorFusionWorkload apps/web (autoSetRequests, autoSetLimits)'
 */
export function autoscaledShare(
  r: ResolvedPod,
  namespace: string,
  workloadName: string | undefined,
  workload: TensorFusionWorkload | undefined,
): { share: ShareSettings; warning?: string } {
  const config = r.settings.autoScalingConfig;
  const recommended = recommendationOf(workload);
  if (!config || !recommended || workloadName === undefined) return { share: r.share };
  const { settings } = decodeAutoScalingConfig(config);
  if (!appliesToShares(settings)) return { share: r.share };
  const next = applyRecommendation(settings, recommended, r.share);
  if (sameResources(next, r.share)) return { share: r.share };
  const changes = changedAmounts(r.share, next).map((c) => `${c.key}: ${c.from} became ${c.to}`);
  const blocks = [settings.requests.enable ? 'autoSetRequests' : '', settings.limits.enable ? 'autoSetLimits' : '']
    .filter(Boolean)
    .join(', ');
  const list = changes.length > 1 ? `${changes.slice(0, -1).join(', ')} and ${changes[changes.length - 1]}` : changes[0];
  return {
    share: { ...r.share, ...next },
    warning: `${list}, the recommendation in the status of TensorFusionWorkload ${namespace}/${workloadName} (${blocks})`,
  };
}

/**
 * What each pod uses, read from Prometheus: the node agent's per-container, per-GPU series summed per
 * pod. The web view and `kubectl tf top` draw it beside the pods' requests and limits.
 */
import { AGENT_METRICS } from '../../contract/agent';
import type { PrometheusClient } from './prometheus';
import { podKey, PodUsage } from './pool-view';

/** `sum by (namespace, pod) (metric)`: the agent labels every per-pod series with both. */
const perPod = (metric: string) => `sum by (namespace, pod) (${metric})`;

/**
 * Used TFLOPS and VRAM bytes per pod (`namespace/name`) at `timeS`. A pod the agent measures no
 * compute for (an MPS client: pmon credits the server) has only `vram`.
 */
export async function readPodUsage(prometheus: Pick<PrometheusClient, 'query'>, timeS: number): Promise<Map<string, PodUsage>> {
  const [tflops, vram] = await Promise.all([
    prometheus.query(perPod(AGENT_METRICS.computeUsed), timeS),
    prometheus.query(perPod(AGENT_METRICS.vramUsed), timeS),
  ]);
  const out = new Map<string, { tflops?: number; vram?: number }>();
  const add = (samples: typeof tflops, field: 'tflops' | 'vram') => {
    for (const s of samples) {
      const { namespace, pod } = s.metric;
      if (!namespace || !pod || !Number.isFinite(s.value)) continue;
      const key = podKey(namespace, pod);
      out.set(key, { ...out.get(key), [field]: s.value });
    }
  };
  add(tflops, 'tflops');
  add(vram, 'vram');
  return out;
}

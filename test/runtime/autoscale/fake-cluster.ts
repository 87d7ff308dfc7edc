/** An in-memory stand-in for the few Cluster calls the recommender loop makes: status, events, HPAs. */
import type { Cluster, EventRecord, K8sObject } from '../../../lib/runtime/kube/cluster';
import type { ScaleClient, ScaleTarget } from '../../../lib/runtime/autoscale/scale';
import type { Workload } from '../../../lib/runtime/autoscale/loop';

export function fakeCluster(workloads: Workload[], hpas: K8sObject[] = []) {
  const byName = new Map(workloads.map((w) => [w.metadata.name!, structuredClone(w)]));
  const events: Array<{ name: string } & EventRecord> = [];
  let rv = 1;
  const cluster = {
    async get(_rt: unknown, ref: { name: string }) {
      return structuredClone(byName.get(ref.name));
    },
    async list(rt: { plural: string }) {
      return { items: rt.plural === 'horizontalpodautoscalers' ? hpas : [], resourceVersion: '1' };
    },
    async replaceStatus(_rt: unknown, obj: Workload) {
      const stored = { ...byName.get(obj.metadata.name!)!, status: obj.status };
      stored.metadata = { ...stored.metadata, resourceVersion: String(++rv) };
      byName.set(obj.metadata.name!, stored);
      return structuredClone(stored);
    },
    async recordEvent(involved: K8sObject, e: EventRecord) {
      events.push({ name: involved.metadata.name!, ...e });
    },
  } as unknown as Cluster;
  const scaled: Array<{ name: string; replicas: number }> = [];
  const replicas = new Map<string, number>();
  const scale: ScaleClient = {
    async getReplicas(t: ScaleTarget) {
      return replicas.get(t.name) ?? 1;
    },
    async setReplicas(t: ScaleTarget, n: number) {
      scaled.push({ name: t.name, replicas: n });
      replicas.set(t.name, n);
    },
  };
  return { cluster, scale, events, scaled, workload: (name: string) => byName.get(name)! };
}

/** An extender over informers of the API-server double, started and synced. */
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { Informer } from '../../../lib/runtime/kube/informer';
import { RESOURCES } from '../../../lib/runtime/kube/resources';
import { Extender } from '../../../lib/runtime/extender/extender';
import { PlacementState } from '../../../lib/runtime/extender/placement-state';
import { ApiServerDouble, clusterFor } from '../../support/api-server';

export interface ExtenderUnderTest {
  informers: Informer<K8sObject>[];
  state: PlacementState;
  extender: Extender;
}

/** Starts the informers the extender reads (stop them with `informers`) and builds it. */
export async function startExtender(api: ApiServerDouble): Promise<ExtenderUnderTest> {
  const cluster = clusterFor(api, 'extender');
  const inf = (rt: (typeof RESOURCES)[keyof typeof RESOURCES]) =>
    new Informer<K8sObject>(cluster, rt, { minWatchTimeoutSeconds: 5, idleTimeoutMs: 1500 });
  const [pools, gpuNodes, gpus, pods, nodes, quotas] = [
    inf(RESOURCES.gpupools),
    inf(RESOURCES.gpunodes),
    inf(RESOURCES.gpus),
    inf(RESOURCES.pods),
    inf(RESOURCES.nodes),
    inf(RESOURCES.gpuresourcequotas),
  ];
  const informers = [pools, gpuNodes, gpus, pods, nodes, quotas];
  for (const i of informers) i.start();
  await Promise.all(informers.map((i) => i.waitForSync()));
  const state = new PlacementState({ sources: { nodes, pools, gpuNodes, gpus, pods, quotas } as never });
  return { informers, state, extender: new Extender({ state, cluster, pods }) };
}

/** An extender over informers of the API-server double, started and synced; the shares and pods it places. */
import { ENABLED_LABEL, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { Informer } from '../../../lib/runtime/kube/informer';
import { RESOURCES } from '../../../lib/runtime/kube/resources';
import { Extender } from '../../../lib/runtime/extender/extender';
import { PlacementState } from '../../../lib/runtime/extender/placement-state';
import { encodeShare, ShareRequest } from '../../../lib/runtime/shared/share';
import { ResourceClaim, slimClaim } from '../../../lib/runtime/shared/dra/claim-results';
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
  // As the controller caches them (caches.ts).
  const claims = new Informer<ResourceClaim>(cluster, RESOURCES.resourceclaims, {
    minWatchTimeoutSeconds: 5,
    idleTimeoutMs: 1500,
    transform: slimClaim,
  });
  const informers = [pools, gpuNodes, gpus, pods, nodes, quotas, claims as Informer<K8sObject>];
  for (const i of informers) i.start();
  await Promise.all(informers.map((i) => i.waitForSync()));
  const state = new PlacementState({ sources: { nodes, pools, gpuNodes, gpus, pods, quotas, claims } as never });
  return { informers, state, extender: new Extender({ state, cluster, pods }) };
}

/** A share of one GPU of pool `p`: 10 TFLOPS (20 at most) and `vram` bytes, requested and the limit. */
export function shareOf(vram: number): ShareRequest {
  return { pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, tflopsLimit: 20, vramRequest: vram, vramLimit: vram };
}

/** A pod of `default` the webhook has admitted with `share` (null: a plain pod of the GPU label), with `labels` added. */
export function sharePod(name: string, share: ShareRequest | null, labels: Record<string, string> = {}): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      labels: { [ENABLED_LABEL]: 'true', ...labels },
      annotations: share ? { [SHARE_ANNOTATION]: encodeShare(share) } : {},
    },
    spec: { containers: [{ name: 'main', image: 'x' }] },
  };
}

/**
 * The extender's state at scale, without an API server: 50,000 GPUs (6,250 nodes × 8) and 200,000
 * live shares recorded on pods (each pod's record names one node), rebuilt into the placement state
 * as after a failover; then the time to place one more share through filter (every node feasible, as
 * with percentageOfNodesToScore 100) and reserve. Memory is the heap and RSS growth over an empty
 * process. Exported for bench/schedule.ts (`--state`).
 */
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, MANAGED_BY_LABEL, SHARE_ANNOTATION } from '../lib/model/metadata-keys';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import { Extender } from '../lib/runtime/extender/extender';
import { PlacementState } from '../lib/runtime/extender/placement-state';
import { encodeShare, ShareRequest } from '../lib/runtime/shared/share';
import { percentile } from './stats';

const GiB = 2 ** 30;

/** The part of an Informer the placement state reads, over a fixed list. */
function fixed<T extends K8sObject>(items: T[]) {
  const byKey = new Map(items.map((o) => [o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name!, o]));
  return { list: () => items, get: (k: string) => byKey.get(k), on: () => undefined, hasSynced: () => true };
}

export interface StateFigures {
  gpus: number;
  shares: number;
  rebuildMs: number;
  heapMB: number;
  rssMB: number;
  placeP50Ms: number;
  placeP99Ms: number;
}

export async function measureState(nodes = 6_250, gpusPerNode = 8, sharesPerGpu = 4, placements = 200): Promise<StateFigures> {
  global.gc?.();
  const base = process.memoryUsage();
  const pool = {
    apiVersion: 'tensor-fusion.ai/v1',
    kind: 'GPUPool',
    metadata: { name: 'big' },
    spec: { capacityConfig: { oversubscription: { tflopsOversellRatio: 500 } } },
  };
  const gpuNodes: K8sObject[] = [];
  const gpus: K8sObject[] = [];
  const pods: K8sObject[] = [];
  const share: ShareRequest = {
    pool: 'big',
    qos: 'medium',
    gpuCount: 1,
    tflopsRequest: 10,
    tflopsLimit: 20,
    vramRequest: 16 * GiB,
    vramLimit: 16 * GiB,
  };
  for (let n = 0; n < nodes; n++) {
    const node = `node-${n}`;
    gpuNodes.push({ metadata: { name: node, labels: { [MANAGED_BY_LABEL]: 'big' } } });
    for (let g = 0; g < gpusPerNode; g++) {
      const name = `${node}-gpu-${g}`;
      gpus.push({
        metadata: { name, labels: { [MANAGED_BY_LABEL]: node } },
        status: { phase: 'Running', index: g, gpuModel: 'A100', capacity: { tflops: '312', vram: '80Gi' }, uuid: `GPU-${n}-${g}` },
      });
      for (let s = 0; s < sharesPerGpu; s++) {
        const uid = `uid-${n}-${g}-${s}`;
        const allocation = {
          id: uid,
          pool: 'big',
          node,
          gpuIds: [name],
          tflopsRequest: 10,
          tflopsLimit: 20,
          vramRequest: 16 * GiB,
          vramLimit: 16 * GiB,
          cpu: 0,
          memory: 0,
          qos: 'medium',
        };
        pods.push({
          metadata: {
            name: `p-${uid}`,
            namespace: 'ml',
            uid,
            labels: { [ENABLED_LABEL]: 'true' },
            annotations: { [SHARE_ANNOTATION]: encodeShare(share), [ALLOCATION_ANNOTATION]: JSON.stringify(allocation) },
          },
          spec: { nodeName: node },
          status: { phase: 'Running' },
        });
      }
    }
  }
  const podSource = fixed(pods);
  const state = new PlacementState({
    sources: {
      nodes: fixed([]),
      pools: fixed([pool as K8sObject]),
      gpuNodes: fixed(gpuNodes),
      gpus: fixed(gpus),
      pods: podSource,
    } as never,
  });
  let t = performance.now();
  state.resetFromPods(pods);
  state.current();
  const rebuildMs = performance.now() - t;
  global.gc?.();
  const used = process.memoryUsage();
  // Room is left for one more 16 GiB share per GPU: place `placements` more through filter + reserve.
  const extender = new Extender({
    state,
    cluster: { list: async () => ({ items: pods, resourceVersion: '1' }) } as never,
    pods: podSource as never,
    resyncAfterIdleMs: Infinity,
  });
  const names = gpuNodes.map((n) => n.metadata.name!);
  const times: number[] = [];
  for (let i = 0; i < placements; i++) {
    const pod = {
      metadata: {
        name: `new-${i}`,
        namespace: 'ml',
        uid: `new-${i}`,
        labels: { [ENABLED_LABEL]: 'true' },
        annotations: { [SHARE_ANNOTATION]: encodeShare(share) },
      },
    };
    t = performance.now();
    const f = await extender.filter({ Pod: pod, NodeNames: names });
    times.push(performance.now() - t);
    if (f.NodeNames.length !== 1)
      throw new Error(
        `placement ${i}: filter left ${f.NodeNames.length} nodes, expected the 1 it chose; refusals: ${JSON.stringify(f.FailedAndUnresolvableNodes).slice(0, 300)}`,
      );
  }
  times.sort((a, b) => a - b);
  return {
    gpus: gpus.length,
    shares: pods.length,
    rebuildMs: Math.round(rebuildMs),
    heapMB: Math.round((used.heapUsed - base.heapUsed) / 2 ** 20),
    rssMB: Math.round((used.rss - base.rss) / 2 ** 20),
    placeP50Ms: Number(percentile(times, 50).toFixed(2)),
    placeP99Ms: Number(percentile(times, 99).toFixed(2)),
  };
}

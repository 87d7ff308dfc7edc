/**
 * Refusal words for a pool whose only node is NotReady and for a TFLOPS limit above the oversell
 * bound (issue 14.8), through the extender's filter against the API-server double.
 */
import { ENABLED_LABEL, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import type { Informer } from '../../../lib/runtime/kube/informer';
import { encodeShare, ShareRequest } from '../../../lib/runtime/shared/share';
import { ApiServerDouble, startApiServer } from '../../support/api-server';
import { GiB, seedPool } from '../webhook/fixtures';
import { eventually } from '../fixtures';
import { startExtender } from './fixtures';

const SHARE: ShareRequest = { pool: 'p', qos: 'medium', gpuCount: 1, tflopsRequest: 10, tflopsLimit: 20, vramRequest: GiB, vramLimit: GiB };

let api: ApiServerDouble;
let informers: Informer<K8sObject>[];
let lastExtender: Awaited<ReturnType<typeof startExtender>>['extender'];

/** What tf_pending_gpu_pods counts for the pod `filter` turned away: its pool and the kind of reason. */
const waitingOnce = (reason: string) => eventually(() => expect(lastExtender.waiting()).toEqual([{ pool: 'p', reason, pods: 1 }]), 5_000);

async function filter(share: ShareRequest): Promise<Record<string, string>> {
  const started = await startExtender(api);
  informers = started.informers;
  const { extender } = started;
  lastExtender = extender;
  const pod = api.put('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'x',
      namespace: 'default',
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: { [SHARE_ANNOTATION]: encodeShare(share) },
    },
    spec: { containers: [{ name: 'main', image: 'x' }] },
  }) as K8sObject;
  const f = await extender.filter({ Pod: pod, NodeNames: ['p-node-0'], Nodes: null });
  expect(f.NodeNames).toEqual([]);
  return f.FailedAndUnresolvableNodes ?? {};
}

beforeEach(async () => {
  api = await startApiServer({ bookmarkIntervalMs: 60_000 });
  seedPool(api, { name: 'p', nodes: 1, gpusPerNode: 1, vram: 80 * GiB, tflops: 100 });
});

afterEach(async () => {
  await Promise.all(informers.map((i) => i.stop()));
  await api.stop();
});

test('a pool whose only node is NotReady says NotReady, not that the pool has no nodes', async () => {
  const node = api.getObject('nodes', 'p-node-0')!;
  api.put('nodes', { ...node, status: { conditions: [{ type: 'Ready', status: 'False' }] } });
  const gpu = api.getObject('gpus', 'p-node-0-gpu-0') as K8sObject & { status: Record<string, unknown> };
  api.put('gpus', { ...gpu, status: { ...gpu.status, phase: 'Unknown' } });
  expect(await filter(SHARE)).toEqual({ 'p-node-0': 'GPU node NotReady' });
  await waitingOnce('NodeUnavailable');
});

test("a GPU whose node agent reports its isolation not ready takes no hard share, and the reason is the condition's", async () => {
  const gpu = api.getObject('gpus', 'p-node-0-gpu-0') as K8sObject & { status: Record<string, unknown> };
  const notReady = {
    type: 'IsolationReady',
    status: 'False',
    reason: 'MpsDaemonNotAnswering',
    message: 'ml/a: no answer within 5000 ms',
    lastTransitionTime: '2026-11-27T10:00:00Z',
  };
  api.put('gpus', { ...gpu, status: { ...gpu.status, conditions: [notReady] } });
  expect(await filter(SHARE)).toEqual({ 'p-node-0': 'GPU node isolation not ready (MpsDaemonNotAnswering)' });
});

test("a pool of shared isolation places shares whatever the GPU's isolation condition says", async () => {
  const pool = api.getObject('gpupools', 'p') as K8sObject & { spec: Record<string, any> };
  api.put('gpupools', {
    ...pool,
    spec: { ...pool.spec, nodeManagerConfig: { ...pool.spec.nodeManagerConfig, defaultIsolationMode: 'shared' } },
  });
  const gpu = api.getObject('gpus', 'p-node-0-gpu-0') as K8sObject & { status: Record<string, unknown> };
  api.put('gpus', {
    ...gpu,
    status: {
      ...gpu.status,
      conditions: [
        { type: 'IsolationReady', status: 'False', reason: 'MpsControlMissing', message: 'x', lastTransitionTime: '2026-11-27T10:00:00Z' },
      ],
    },
  });
  const started = await startExtender(api);
  informers = started.informers;
  const pod = api.put('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'y',
      namespace: 'default',
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: { [SHARE_ANNOTATION]: encodeShare(SHARE) },
    },
    spec: { containers: [{ name: 'main', image: 'x' }] },
  }) as K8sObject;
  expect((await started.extender.filter({ Pod: pod, NodeNames: ['p-node-0'], Nodes: null })).NodeNames).toEqual(['p-node-0']);
});

test('a TFLOPS limit above the oversell bound names tflops-limit, its value and the bound', async () => {
  expect(await filter({ ...SHARE, tflopsLimit: 2000 })).toEqual({
    'p-node-0': 'tflops-limit 2000 is above 500 TFLOPS, the most one GPU may be oversold to (100 TFLOPS x 500%)',
  });
  await waitingOnce('TflopsLimitAboveOversell');
});

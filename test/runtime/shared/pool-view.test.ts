/**
 * The pool view from the controller's objects: pools' totals, GPUs as bars of their shares, the pods
 * holding shares, the pending GPU pods with the scheduler's words, quotas against their bounds; and
 * the usage read from Prometheus drawn beside them.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, MANAGED_BY_LABEL, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import { slimPod } from '../../../lib/runtime/shared/caches';
import type { PodLike } from '../../../lib/runtime/shared/capacity';
import { poolView, PoolViewSources } from '../../../lib/runtime/shared/pool-view';
import { readPodUsage } from '../../../lib/runtime/shared/pod-usage';
import { PrometheusClient } from '../../../lib/runtime/shared/prometheus';
import { encodeShare } from '../../../lib/runtime/shared/share';

const GiB = 2 ** 30;

const list = <T>(items: T[]) => ({ list: () => items, get: () => undefined, byIndex: () => [] });

const gpuNode = (name: string, pool: string) => ({ metadata: { name, labels: { [MANAGED_BY_LABEL]: pool } } });
const gpu = (name: string, node: string, index: number, phase = 'Running') => ({
  metadata: { name, labels: { [MANAGED_BY_LABEL]: node } },
  status: { phase, index, gpuModel: 'A100', capacity: { tflops: '312', vram: '80Gi' } },
});

function holder(ns: string, name: string, gpus: string[], tflops: number, vramGi: number, extra: Partial<PodLike> = {}): PodLike {
  const allocation = {
    id: `uid-${name}`,
    pool: 'a',
    node: 'n1',
    gpuIds: gpus,
    tflopsRequest: tflops,
    tflopsLimit: 2 * tflops,
    vramRequest: vramGi * GiB,
    vramLimit: vramGi * GiB,
    cpu: 0,
    memory: 0,
    qos: 'medium',
  };
  return {
    metadata: {
      name,
      namespace: ns,
      uid: `uid-${name}`,
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: { [ALLOCATION_ANNOTATION]: JSON.stringify(allocation) },
    },
    spec: { nodeName: 'n1' },
    status: { phase: 'Running' },
    ...extra,
  } as PodLike;
}

function pending(name: string, condition?: { reason: string; message: string }): PodLike {
  const share = { pool: 'a', qos: 'medium' as const, gpuCount: 1, tflopsRequest: 500, tflopsLimit: 500, vramRequest: GiB, vramLimit: GiB };
  return {
    metadata: {
      name,
      namespace: 'ml',
      uid: `uid-${name}`,
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: { [SHARE_ANNOTATION]: encodeShare(share) },
    },
    spec: {},
    status: { phase: 'Pending', conditions: condition ? [{ type: 'PodScheduled', status: 'False', ...condition }] : [] },
  };
}

const REASON = { reason: 'Unschedulable', message: '0/2 nodes are available: 2 no GPU of pool "a" has 500 TFLOPS free.' };

const SOURCES = {
  pools: list([{ metadata: { name: 'a' } }, { metadata: { name: 'empty' } }]),
  gpuNodes: list([gpuNode('n1', 'a'), gpuNode('n2', 'a')]),
  gpus: list([gpu('n1-1', 'n1', 1), gpu('n1-0', 'n1', 0), gpu('n2-0', 'n2', 0), gpu('n2-1', 'n2', 1, 'Pending')]),
  pods: list([
    holder('web', 'serve', ['n1-0', 'n1-1'], 10, 4),
    holder('ml', 'train', ['n1-0'], 100, 20),
    // Finished: holds nothing.
    holder('ml', 'done', ['n1-1'], 50, 1, { status: { phase: 'Succeeded' } }),
    // A record on a pod that did not opt in was never written by us.
    { ...holder('ml', 'copied', ['n1-1'], 50, 1), metadata: { ...holder('ml', 'copied', ['n1-1'], 50, 1).metadata, labels: {} } },
    pending('big', REASON),
    pending('fresh'),
    // Not a GPU pod.
    { metadata: { name: 'plain', namespace: 'ml', uid: 'p' }, spec: {}, status: { phase: 'Pending' } },
  ]),
  quotas: list([{ metadata: { name: 'team', namespace: 'ml' }, spec: { total: { requests: { tflops: '400' }, maxWorkers: 4 } } }]),
} as unknown as PoolViewSources;

describe('poolView', () => {
  const view = poolView(SOURCES);

  test('each usable GPU as a bar of its shares, by pool, node and index; a GPU not Running is left out', () => {
    expect(view.gpus.map((g) => [g.pool, g.node, g.name, g.model, g.tflops, g.vram])).toEqual([
      ['a', 'n1', 'n1-0', 'A100', 312, 80 * GiB],
      ['a', 'n1', 'n1-1', 'A100', 312, 80 * GiB],
      ['a', 'n2', 'n2-0', 'A100', 312, 80 * GiB],
    ]);
    expect(view.gpus[0].shares).toEqual([
      { pod: 'train', namespace: 'ml', tflopsRequest: 100, tflopsLimit: 200, vramRequest: 20 * GiB, vramLimit: 20 * GiB },
      { pod: 'serve', namespace: 'web', tflopsRequest: 10, tflopsLimit: 20, vramRequest: 4 * GiB, vramLimit: 4 * GiB },
    ]);
    expect(view.gpus[1].shares.map((s) => s.pod)).toEqual(['serve']);
    expect(view.gpus[2].shares).toEqual([]);
  });

  test('the pods holding shares, amounts per GPU as recorded', () => {
    expect(view.pods.map((p) => [p.namespace, p.name, p.node, p.pool, p.gpus, p.tflopsRequest, p.vramLimit])).toEqual([
      ['ml', 'train', 'n1', 'a', ['n1-0'], 100, 20 * GiB],
      ['web', 'serve', 'n1', 'a', ['n1-0', 'n1-1'], 10, 4 * GiB],
    ]);
  });

  test("each pool's totals count every GPU a share holds; a pool without GPUs is listed empty", () => {
    expect(view.pools).toEqual([
      {
        name: 'a',
        nodes: 2,
        gpus: 3,
        tflops: 936,
        vram: 240 * GiB,
        tflopsRequested: 120,
        vramRequested: 28 * GiB,
        tflopsLimit: 240,
        vramLimit: 28 * GiB,
      },
      { name: 'empty', nodes: 0, gpus: 0, tflops: 0, vram: 0, tflopsRequested: 0, vramRequested: 0, tflopsLimit: 0, vramLimit: 0 },
    ]);
  });

  test("pending GPU pods with the scheduler's reason when it gave one", () => {
    expect(view.pending).toEqual([
      { namespace: 'ml', name: 'big', pool: 'a', gpuCount: 1, tflopsRequest: 500, vramRequest: GiB, ...REASON },
      { namespace: 'ml', name: 'fresh', pool: 'a', gpuCount: 1, tflopsRequest: 500, vramRequest: GiB },
    ]);
  });

  test("quotas: what the namespace's shares count for against the bounds", () => {
    expect(view.quotas).toEqual([
      {
        namespace: 'ml',
        name: 'team',
        used: { 'requests.tflops': 100_000, 'requests.vram': 20 * GiB, 'limits.tflops': 200_000, 'limits.vram': 20 * GiB, workers: 1 },
        hard: { 'requests.tflops': 400_000, workers: 4 },
      },
    ]);
  });

  test('usage: per GPU on the bars and pods, summed per pool; a pod without figures has none', () => {
    const used = poolView(SOURCES, new Map([['web/serve', { tflops: 8, vram: 2 * GiB }]]));
    expect(used.gpus[0].shares.map((s) => [s.pod, s.tflopsUsed, s.vramUsed])).toEqual([
      ['train', undefined, undefined],
      ['serve', 4, GiB],
    ]);
    expect(used.pods[1]).toMatchObject({ tflopsUsed: 4, vramUsed: GiB });
    expect(used.pools[0]).toMatchObject({ tflopsUsed: 8, vramUsed: 2 * GiB });
    expect(view.pools[0].tflopsUsed).toBeUndefined();
  });
});

describe('slimPod keeps the words of PodScheduled=False only', () => {
  test('reason and message of an unscheduled pod; none on other conditions', () => {
    const pod = {
      metadata: { name: 'p' },
      status: {
        conditions: [
          { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'no room', lastTransitionTime: 't' },
          { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'waiting' },
        ],
      },
    } as PodLike;
    expect(slimPod(pod).status?.conditions).toEqual([
      { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'no room' },
      { type: 'Ready', status: 'False' },
    ]);
    const scheduled = { ...pod, status: { conditions: [{ type: 'PodScheduled', status: 'True', reason: 'x', message: 'y' }] } };
    expect(slimPod(scheduled).status?.conditions).toEqual([{ type: 'PodScheduled', status: 'True' }]);
  });
});

describe('readPodUsage', () => {
  let server: http.Server;
  const queries: string[] = [];
  beforeAll(async () => {
    // Prometheus' documented instant-query answer, one series per pod as `sum by (namespace, pod)` gives.
    server = http.createServer((req, res) => {
      const query = new URL(req.url!, 'http://x').searchParams.get('query') ?? '';
      queries.push(query);
      const result = query.includes('compute_tflops')
        ? [{ metric: { namespace: 'ml', pod: 'train' }, value: [1, '12.5'] }]
        : [
            { metric: { namespace: 'ml', pod: 'train' }, value: [1, String(3 * GiB)] },
            { metric: { namespace: 'web', pod: 'serve' }, value: [1, String(GiB)] },
            { metric: {}, value: [1, '7'] },
          ];
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  test("sums the agent's series per pod; a pod without compute figures has VRAM only", async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const usage = await readPodUsage(new PrometheusClient(url), 1000);
    expect(queries.sort()).toEqual([
      'sum by (namespace, pod) (tf_agent_pod_gpu_compute_tflops)',
      'sum by (namespace, pod) (tf_agent_pod_gpu_vram_used_bytes)',
    ]);
    expect([...usage.entries()]).toEqual([
      ['ml/train', { tflops: 12.5, vram: 3 * GiB }],
      ['web/serve', { vram: GiB }],
    ]);
  });
});

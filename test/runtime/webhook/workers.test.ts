/**
 * Remote mode: the leader keeps `replicas` worker pods per remote workload, built from the pool's
 * worker template; each worker is admitted like any local pod and marked for the scheduler, which
 * gives it its own share.
 */
import type * as https from 'node:https';
import { clusterFor, type ApiServerDouble } from '../../support/api-server';
import { MANAGED_BY_LABEL, WORKLOAD_LABEL } from '../../../lib/model/metadata-keys';
import { SCHEDULER_NAME } from '../../../lib/contract/object-names';
import { API_VERSION } from '../../../lib/model/group';
import { shareOf } from '../../../lib/runtime/shared/share';
import { planWorkers } from '../../../lib/runtime/webhook/workers';
import type { TensorFusionWorkload, GPUPool } from '../../../lib/api';
import { testController } from '../fixtures';
import { client, patched, pod, post, review, seedPool, startDouble, startTestWebhook } from './fixtures';
import { eventually } from '../fixtures';

const poolWith = (worker?: Record<string, unknown>): GPUPool => ({
  apiVersion: API_VERSION,
  kind: 'GPUPool',
  metadata: { name: 'remote' },
  spec: { nodeManagerConfig: {}, ...(worker ? { componentConfig: { worker } } : {}) },
});
const workload = (replicas: number, isLocalGPU = false): TensorFusionWorkload => ({
  apiVersion: API_VERSION,
  kind: 'TensorFusionWorkload',
  metadata: { name: 'infer', namespace: 'ml', uid: 'wl-uid' },
  spec: {
    poolName: 'remote',
    isLocalGPU,
    replicas,
    qos: 'high',
    gpuCount: 1,
    resources: { requests: { tflops: '10', vram: '2Gi' }, limits: { tflops: '20', vram: '4Gi' } },
  },
});

describe('worker plan', () => {
  it('builds each worker from the pool template with the workload share as annotations', () => {
    const pool = poolWith({
      image: 'registry.example/worker:1',
      podTemplate: {
        metadata: { labels: { team: 'ml' } },
        spec: { containers: [{ name: 'worker', ports: [{ containerPort: 8000 }] }], priorityClassName: 'high' },
      },
    });
    const plan = planWorkers(workload(2), pool, []);
    expect(plan.delete).toEqual([]);
    expect(plan.create.map((p) => p.metadata.name)).toEqual(['infer-worker-0', 'infer-worker-1']);
    expect(plan.create[0]).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'infer-worker-0',
        namespace: 'ml',
        labels: { team: 'ml', 'tensor-fusion.ai/enabled': 'true', [WORKLOAD_LABEL]: 'infer', [MANAGED_BY_LABEL]: 'infer' },
        annotations: {
          'tensor-fusion.ai/gpupool': 'remote',
          'tensor-fusion.ai/is-local-gpu': 'true',
          'tensor-fusion.ai/generate-workload': 'false',
          'tensor-fusion.ai/workload': 'infer',
          'tensor-fusion.ai/inject-container': 'worker',
          'tensor-fusion.ai/tflops-request': '10',
          'tensor-fusion.ai/tflops-limit': '20',
          'tensor-fusion.ai/vram-request': '2Gi',
          'tensor-fusion.ai/vram-limit': '4Gi',
          'tensor-fusion.ai/qos': 'high',
          'tensor-fusion.ai/gpu-count': '1',
        },
        ownerReferences: [
          {
            apiVersion: API_VERSION,
            kind: 'TensorFusionWorkload',
            name: 'infer',
            uid: 'wl-uid',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        containers: [{ name: 'worker', ports: [{ containerPort: 8000 }], image: 'registry.example/worker:1' }],
        priorityClassName: 'high',
      },
    });
  });

  it('scales down from the highest ordinal and replaces finished workers', () => {
    const pool = poolWith({ image: 'w:1' });
    const existing = [0, 1, 2].map((i) => ({
      metadata: { name: `infer-worker-${i}`, namespace: 'ml', labels: { [WORKLOAD_LABEL]: 'infer' } },
      status: { phase: i === 0 ? 'Failed' : 'Running' },
    }));
    const plan = planWorkers(workload(2), pool, existing);
    expect(plan.delete).toEqual(['infer-worker-2', 'infer-worker-0']);
    expect(plan.create).toEqual([]);
    expect(planWorkers(workload(2), pool, existing.slice(1, 2)).create.map((p) => p.metadata.name)).toEqual(['infer-worker-0']);
  });

  it('says why it cannot create workers without an image, and makes none for local workloads', () => {
    expect(planWorkers(workload(1), poolWith(), [])).toEqual({
      create: [],
      delete: [],
      problem: 'GPUPool "remote" names no worker image (spec.componentConfig.worker)',
    });
    expect(planWorkers(workload(1), undefined, [])).toEqual({ create: [], delete: [], problem: 'GPUPool "remote" not found' });
    expect(planWorkers(workload(3, true), poolWith({ image: 'w:1' }), [])).toEqual({ create: [], delete: [] });
  });
});

describe('worker pods end to end', () => {
  let double: ApiServerDouble;
  let agent: https.Agent;

  beforeAll(async () => {
    double = await startDouble();
    seedPool(double, {
      name: 'remote',
      nodes: 1,
      gpusPerNode: 2,
      spec: { defaultUsingLocalGPU: false, componentConfig: { worker: { image: 'registry.example/worker:1' } } },
    });
    agent = client();
  });

  afterAll(async () => {
    agent.destroy();
    await double.stop();
  });

  it('creates the replicas of the workload the controller generated from the client pod, each worker marked for its own share', async () => {
    const webhook = await startTestWebhook(double);
    const ctl = testController(double);
    try {
      ctl.startInformers();
      await ctl.startReconciling(clusterFor(double, 'leader'));
      const client0 = pod({
        name: 'client',
        namespace: 'ml',
        annotations: {
          'tensor-fusion.ai/gpupool': 'remote',
          'tensor-fusion.ai/workload': 'infer',
          'tensor-fusion.ai/replicas': '2',
          'tensor-fusion.ai/tflops-request': '10',
          'tensor-fusion.ai/vram-request': '2Gi',
        },
      });
      const answer = await post(webhook.port(), agent, review(client0));
      expect(answer.body.response.allowed).toBe(true);
      // The API server stores the admitted client; the leader generates its workload from it.
      double.put('pods', patched(client0, answer.body));
      await eventually(() => expect(double.getObject('tensorfusionworkloads', 'infer', 'ml')?.spec?.replicas).toBe(2));
      await eventually(async () => {
        if ((await webhook.syncWorkers()).created !== 2) expect(double.listObjects('pods')).toHaveLength(3);
      });
      const workers = double.listObjects('pods').filter((p) => p.metadata.name !== 'client');
      expect(workers.map((p) => p.metadata.name).sort()).toEqual(['infer-worker-0', 'infer-worker-1']);
      // The API server sends each worker through the webhook: local mode, marked for our scheduler.
      for (const w of workers) {
        const a = await post(webhook.port(), agent, review({ apiVersion: 'v1', kind: 'Pod', metadata: w.metadata, spec: w.spec }));
        expect(a.body.response.allowed).toBe(true);
        const admitted = patched(w as never, a.body);
        expect((admitted.spec as { schedulerName: string }).schedulerName).toBe(SCHEDULER_NAME);
        expect(shareOf(admitted)).toEqual({
          pool: 'remote',
          qos: 'medium',
          gpuCount: 1,
          tflopsRequest: 10,
          tflopsLimit: 10,
          vramRequest: 2 * 2 ** 30,
          vramLimit: 2 * 2 ** 30,
        });
      }
      expect(await webhook.syncWorkers()).toEqual({ created: 0, deleted: 0 });
    } finally {
      await ctl.stop();
      await webhook.close();
    }
  });
});

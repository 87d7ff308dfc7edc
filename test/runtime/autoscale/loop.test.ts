/** The recommender loop without Prometheus: what the status says when autoscaling cannot run. */
import { AutoscaleLoop, Workload } from '../../../lib/runtime/autoscale/loop';
import { fakeCluster } from './fake-cluster';
import { workloadStatus } from '../../../lib/runtime/reconcile/workload-status';
import { AGENT_METRICS } from '../../../lib/contract/agent';
import { parseQuantity } from '../../../lib/k8s/quantity';
import type { PrometheusClient } from '../../../lib/runtime/shared/prometheus';

const workload = (name: string, autoScalingConfig: unknown): Workload => ({
  apiVersion: 'tensor-fusion.ai/v1',
  kind: 'TensorFusionWorkload',
  metadata: { name, namespace: 'ml', resourceVersion: '1' },
  spec: {
    resources: { requests: { tflops: '10', vram: '4Gi' }, limits: { tflops: '20', vram: '4Gi' } },
    autoScalingConfig,
  } as Workload['spec'],
  status: { workerCount: 1, phase: 'Running' },
});

describe('AutoscaleLoop', () => {
  it('says autoscaling is off when no Prometheus URL is set, and leaves other workloads alone', async () => {
    const on = workload('on', { autoSetRequests: { enable: true } });
    const off = workload('off', { autoSetRequests: { enable: false } });
    const f = fakeCluster([on, off]);
    const loop = new AutoscaleLoop({
      cluster: f.cluster,
      scale: f.scale,
      workloads: () => [on, off],
      podNames: () => ['p'],
      maxReplicas: () => 5,
      nowS: () => 1_800_000_000,
    });
    await loop.tick();
    expect(f.workload('on').status!.conditions).toEqual([
      {
        type: 'AutoscalingActive',
        status: 'False',
        reason: 'PrometheusNotConfigured',
        lastTransitionTime: '2027-01-15T08:00:00.000Z',
        message: 'autoscaling is off: set the prometheusUrl prop of TensorFusionController to the Prometheus that scrapes the node agent',
      },
    ]);
    expect(f.workload('on').status!.phase).toBe('Running');
    expect(f.workload('off').status!.conditions).toBeUndefined();
  });

  it('reports an invalid autoScalingConfig in the condition with the exact messages', async () => {
    const bad = workload('bad', { autoSetReplicas: { enable: true, scaleUpStep: '0' } });
    const f = fakeCluster([bad]);
    await new AutoscaleLoop({
      cluster: f.cluster,
      scale: f.scale,
      workloads: () => [bad],
      podNames: () => [],
      maxReplicas: () => 5,
      nowS: () => 1_800_000_000,
    }).tick();
    expect(f.workload('bad').status!.conditions![0]).toMatchObject({
      reason: 'InvalidConfig',
      message: 'spec.autoScalingConfig.autoSetReplicas.scaleUpStep: got "0", expected a ratio above 0 such as 0.5 or 50%',
    });
  });

  it('on hard pods with no compute figure (their daemon or pmon gave none): tunes VRAM, holds TFLOPS and replicas, and says why', async () => {
    const now = 1_800_000_000;
    const wl = workload('mps', { autoSetRequests: { enable: true }, autoSetLimits: { enable: true }, autoSetReplicas: { enable: true } });
    wl.metadata.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'mps', uid: 'u' }];
    const f = fakeCluster([wl]);
    const queries: string[] = [];
    // What Prometheus answers while the agent cannot measure a share's compute: VRAM and no compute.
    const prometheus = {
      async queryRange(q: string, from: number, to: number, step: number) {
        queries.push(q);
        if (!q.startsWith(AGENT_METRICS.vramUsed)) return [];
        const values: [number, number][] = [];
        for (let t = from; t <= to; t += step) values.push([t, 2 * 2 ** 30]);
        return [{ metric: { pod: 'mps-0', container: 'main', gpu_uuid: 'GPU-1' }, values }];
      },
      async query(q: string) {
        queries.push(q);
        return [];
      },
    } as unknown as PrometheusClient;
    const loop = new AutoscaleLoop({
      cluster: f.cluster,
      scale: f.scale,
      prometheus,
      workloads: () => [wl],
      podNames: () => ['mps-0'],
      maxReplicas: () => 5,
      nowS: () => now,
    });
    await loop.tick();
    const status = f.workload('mps').status!;
    expect(status.autoscaling!.recommendation!.requests.tflops).toBe('10');
    expect(status.autoscaling!.recommendation!.limits.tflops).toBe('20');
    // VRAM from the 2 GiB the clients use, with the default margin: the VRAM samples were read without compute ones.
    const vram = parseQuantity(status.autoscaling!.recommendation!.requests.vram)!;
    expect(vram).toBeGreaterThan(2 * 2 ** 30);
    expect(vram).toBeLessThan(2.5 * 2 ** 30);
    expect(status.conditions!.find((c) => c.type === 'ReplicaScaling')!.message).toMatch(/\(no-compute-data\)$/);
    expect(queries.some((q) => q.startsWith(AGENT_METRICS.computeUsed))).toBe(true);
  });

  it('on hard pods measured on their own MPS server: tunes TFLOPS from it and decides replicas', async () => {
    const now = 1_800_000_000;
    const wl = workload('hard', { autoSetRequests: { enable: true }, autoSetLimits: { enable: true }, autoSetReplicas: { enable: true } });
    wl.metadata.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'hard', uid: 'u' }];
    const f = fakeCluster([wl]);
    // What the agent exports for a share's container now: compute from its own server (4 TFLOPS), and VRAM.
    const series = (value: number) => (from: number, to: number, step: number) => {
      const values: [number, number][] = [];
      for (let t = from; t <= to; t += step) values.push([t, value]);
      return [{ metric: { pod: 'hard-0', container: 'main', gpu_uuid: 'GPU-1' }, values }];
    };
    const prometheus = {
      async queryRange(q: string, from: number, to: number, step: number) {
        return q.startsWith(AGENT_METRICS.computeUsed) ? series(4)(from, to, step) : series(2 * 2 ** 30)(from, to, step);
      },
      async query(q: string) {
        return q.includes(AGENT_METRICS.computeUsed) ? [{ metric: {}, value: 4 }] : [];
      },
    } as unknown as PrometheusClient;
    await new AutoscaleLoop({
      cluster: f.cluster,
      scale: f.scale,
      prometheus,
      workloads: () => [wl],
      podNames: () => ['hard-0'],
      maxReplicas: () => 5,
      nowS: () => now,
    }).tick();
    const status = f.workload('hard').status!;
    // The request follows the 4 TFLOPS used (with its margin), down from the 10 declared.
    const tflops = Number(status.autoscaling!.recommendation!.requests.tflops);
    expect(tflops).toBeGreaterThan(4);
    expect(tflops).toBeLessThan(5);
    expect(status.conditions!.find((c) => c.type === 'ReplicaScaling')!.message).not.toMatch(/no-compute-data/);
  });

  it('survives the workload status reconciler, which carries status.autoscaling over', () => {
    const autoscaling = {
      recommendation: { requests: { tflops: '5', vram: '1Gi' }, limits: { tflops: '10', vram: '2Gi' } },
      confidence: 1,
    };
    expect(workloadStatus([], 0, { workerCount: 0, autoscaling }, '2027-01-01T00:00:00Z').autoscaling).toEqual(autoscaling);
  });
});

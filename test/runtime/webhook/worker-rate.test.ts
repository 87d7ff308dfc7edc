/**
 * Worker creation is rate-limited (issue 14.3): a plan for 200,000 workers no longer creates them all
 * at once. Each pass creates at most twice the active workers (at least 16, at most 500), and never
 * plans beyond the replicas bound (10000) whatever a stored workload says.
 */
import { WORKLOAD_LABEL } from '../../../lib/model/metadata-keys';
import { API_VERSION } from '../../../lib/model/group';
import type { GPUPool, TensorFusionWorkload } from '../../../lib/api';
import { planWorkers, WORKER_CREATE_BURST, WORKER_CREATE_INITIAL } from '../../../lib/runtime/webhook/workers';

const pool: GPUPool = {
  apiVersion: API_VERSION,
  kind: 'GPUPool',
  metadata: { name: 'remote' },
  spec: { nodeManagerConfig: {}, componentConfig: { worker: { image: 'w:1' } } },
};
const workload = (replicas: number): TensorFusionWorkload => ({
  apiVersion: API_VERSION,
  kind: 'TensorFusionWorkload',
  metadata: { name: 'infer', namespace: 'ml', uid: 'u' },
  spec: { poolName: 'remote', isLocalGPU: false, replicas },
});
const running = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    metadata: { name: `infer-worker-${i}`, namespace: 'ml', labels: { [WORKLOAD_LABEL]: 'infer' } },
    status: { phase: 'Running' },
  }));

describe('worker creation per pass', () => {
  it('starts with 16 and grows with the active workers, up to 500', () => {
    expect([WORKER_CREATE_INITIAL, WORKER_CREATE_BURST]).toEqual([16, 500]);
    expect(planWorkers(workload(200_000), pool, []).create).toHaveLength(16);
    expect(planWorkers(workload(200_000), pool, running(100)).create).toHaveLength(200);
    expect(planWorkers(workload(200_000), pool, running(1000)).create).toHaveLength(500);
  });

  it('creates small workloads at once, lowest ordinals first', () => {
    expect(planWorkers(workload(3), pool, []).create.map((p) => p.metadata.name)).toEqual([
      'infer-worker-0',
      'infer-worker-1',
      'infer-worker-2',
    ]);
    expect(planWorkers(workload(40), pool, running(10)).create.map((p) => p.metadata.name)[0]).toBe('infer-worker-10');
  });

  it('never plans beyond the replicas bound', () => {
    expect(planWorkers(workload(200_000), pool, running(10_000)).create).toEqual([]);
  });
});

/**
 * Creates or updates generated TensorFusionWorkloads by server-side apply. Many pods of one Deployment
 * arrive together, so a write is skipped when the cache already shows the same spec or the same spec
 * was applied (or is being applied) moments ago.
 */
import type { TensorFusionWorkload, TensorFusionWorkloadSpec } from '../../api';
import { API_VERSION, WORKLOAD_LABEL } from '../../labels';
import type { Cluster, K8sObject } from '../cluster';
import { RESOURCES } from '../resources';

export interface WorkloadWriterOptions {
  cluster: Cluster;
  /** Cached workloads by `namespace/name`. */
  cached: (key: string) => TensorFusionWorkload | undefined;
  /** How long an applied spec is trusted without seeing it in the cache. @default 10000 */
  memoMs?: number;
  now?: () => number;
}

function covers(have: unknown, want: unknown): boolean {
  if (want === null || typeof want !== 'object') return have === want;
  if (have === null || typeof have !== 'object') return false;
  return Object.entries(want as Record<string, unknown>).every(([k, v]) => covers((have as Record<string, unknown>)[k], v));
}

export class WorkloadWriter {
  private readonly recent = new Map<string, { spec: string; at: number; pending: Promise<void> }>();
  private readonly now: () => number;

  constructor(private readonly opts: WorkloadWriterOptions) {
    this.now = opts.now ?? Date.now;
  }

  async ensure(namespace: string, name: string, pool: string, spec: TensorFusionWorkloadSpec): Promise<void> {
    const key = `${namespace}/${name}`;
    if (covers(this.opts.cached(key)?.spec, spec)) return;
    const text = JSON.stringify(spec);
    const memo = this.recent.get(key);
    if (memo && memo.spec === text && this.now() - memo.at < (this.opts.memoMs ?? 10_000)) return memo.pending;
    const body: K8sObject = {
      apiVersion: API_VERSION, kind: 'TensorFusionWorkload',
      metadata: { name, namespace, labels: { [WORKLOAD_LABEL]: name } },
      spec: { ...spec, poolName: pool },
    };
    const pending = this.opts.cluster.apply(RESOURCES.tensorfusionworkloads, body, { force: true }).then(() => undefined);
    this.recent.set(key, { spec: text, at: this.now(), pending });
    try {
      await pending;
    } catch (err) {
      this.recent.delete(key);
      throw err;
    }
    if (this.recent.size > 10_000) this.recent.clear();
  }
}

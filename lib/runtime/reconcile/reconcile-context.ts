/**
 * What every reconciler gets: the caches to read, the client to write through (fenced by leader
 * election in the process), and the clock and collaborators the status computations need.
 */
import type { Logger } from 'pino';
import type { Cluster } from '../kube/cluster';
import type { ReconcileResult } from '../kube/workqueue';
import type { ReadCaches } from '../shared/caches';
import type { RuntimeMetrics } from '../shared/metrics';
import type { GpuUsage, PodLike } from '../shared/capacity';
import type { ControllerKey } from './queue-keys';
import type { OwnerOf } from './generated-workload';
import type { Watches } from './watches';

export interface ReconcileContext {
  readonly caches: ReadCaches;
  /** Writes; throws when the controller is not reconciling (not leader). */
  readonly writer: Cluster;
  /** Now, as status timestamps carry it (RFC 3339, whole seconds). */
  now(): string;
  /** Allocated amounts per GPU of a node's pods. */
  usage(pods: PodLike[]): GpuUsage;
  /** The top owner of a pod (owner of its generated workload). */
  readonly topOwnerOf: OwnerOf;
  readonly logger?: Logger;
  /** The process's metrics, when it keeps them. */
  readonly metrics?: RuntimeMetrics;
}

/** One reconciler: level-based, idempotent, over the caches and the client; with what it watches. */
export interface Reconciler<K extends ControllerKey> {
  readonly kind: K['kind'];
  readonly watches: Watches<K>;
  reconcile(ctx: ReconcileContext, key: K): Promise<ReconcileResult | void>;
}

/**
 * Pools and profiles as the informer caches hold them, read the same way by the webhook (admission)
 * and by the reconcilers (which resolve pods with the webhook's rules to generate their workloads).
 */
import type { GPUPool, WorkloadProfile } from '../../api';
import { DEFAULT_POOL_ANNOTATION } from '../../model/metadata-keys';
import type { K8sObject } from '../kube/cluster';
import type { Informer } from '../kube/informer';
import type { SettingsView } from './resolve-pod';

type Cache<T> = Pick<Informer<T & K8sObject>, 'get' | 'list'>;

/** The default pool among `pools`: the first by name annotated as default. */
export function defaultPoolOf(pools: readonly GPUPool[]): string | undefined {
  return pools
    .filter((p) => p.metadata?.annotations?.[DEFAULT_POOL_ANNOTATION] === 'true')
    .map((p) => p.metadata?.name as string)
    .sort()[0];
}

/**
 * Pools and profiles as cached, read the same way by the webhook and by the controller (which
 * resolves pods with the webhook's rules to generate their workloads): pool names sorted, the default
 * pool by {@link defaultPoolOf}, profiles by `namespace/name`.
 */
export function cachedSettingsView(caches: { pools: Cache<GPUPool>; profiles: Pick<Cache<WorkloadProfile>, 'get'> }): SettingsView {
  return {
    pool: (name) => caches.pools.get(name),
    poolNames: () =>
      caches.pools
        .list()
        .map((p) => p.metadata.name as string)
        .sort(),
    defaultPool: () => defaultPoolOf(caches.pools.list()),
    profile: (namespace, name) => caches.profiles.get(`${namespace}/${name}`),
  };
}

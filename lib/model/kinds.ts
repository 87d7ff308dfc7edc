/**
 * Where each of our tensor-fusion.ai/v1 kinds lives. Kept apart from the kind registry
 * (lib/api/kinds.ts, which adds the schemas) so that the controller bundle can know a kind's scope
 * without carrying every schema; test/model/kinds.test.ts checks that the two agree.
 */
import type { Scope } from '../k8s/scope';

export const KIND_SCOPES = {
  GPUPool: 'Cluster',
  GPUNode: 'Cluster',
  GPU: 'Cluster',
  TensorFusionWorkload: 'Namespaced',
  WorkloadProfile: 'Namespaced',
} as const satisfies Record<string, Scope>;

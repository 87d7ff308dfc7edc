/**
 * The slice of a pod template (core/v1 `PodTemplateSpec`) that pure functions read and write.
 * Structural and without index signatures, so plain objects, kubernetes-models and cdk8s/Pulumi
 * template types all fit.
 */
import type { Toleration } from './toleration';

/** A container as far as resources go: its name and requests/limits. */
export interface ContainerLike {
  name: string;
  resources?: {
    limits?: Record<string, unknown>;
    requests?: Record<string, unknown>;
  };
}

/** A PodTemplateSpec-like object: a Pod's `metadata` and `spec`, or a workload's `spec.template`. */
export interface PodTemplateLike {
  metadata?: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: {
    containers: readonly ContainerLike[];
    schedulerName?: string;
    nodeSelector?: Record<string, string>;
    tolerations?: readonly Toleration[];
  };
}

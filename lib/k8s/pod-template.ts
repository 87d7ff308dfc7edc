/**
 * The slice of a pod template (core/v1 `PodTemplateSpec`) that pure functions read and write.
 * Structural and without index signatures, so plain objects, kubernetes-models and cdk8s/Pulumi
 * template types all fit.
 */
import type { Toleration } from './toleration';

/** A container as far as resources go: its name and requests/limits. */
export interface ContainerLike {
  /** Container name. */
  name: string;
  /** Resource requests and limits. */
  resources?: {
    /** Limits by resource name, e.g. `tensorstack.dev/nvidia-gpu-percent: 30`. */
    limits?: Record<string, unknown>;
    /** Requests by resource name. */
    requests?: Record<string, unknown>;
  };
}

/** A PodTemplateSpec-like object: a Pod's `metadata` and `spec`, or a workload's `spec.template`. */
export interface PodTemplateLike {
  /** The pod's labels and annotations. */
  metadata?: {
    /** Pod labels. */
    labels?: Record<string, string>;
    /** Pod annotations. */
    annotations?: Record<string, string>;
  };
  /** The parts of the pod spec that placement reads and writes. */
  spec?: {
    /** The containers. */
    containers: readonly ContainerLike[];
    /** Scheduler of the pod. @default the cluster's default scheduler */
    schedulerName?: string;
    /** Node labels the pod requires. */
    nodeSelector?: Record<string, string>;
    /** Taints the pod tolerates. */
    tolerations?: readonly Toleration[];
  };
}

/**
 * The slice of a pod template the T9k functions read and write. Structural and without index
 * signatures, so plain objects, kubernetes-models and cdk8s/Pulumi template types all fit.
 */

/** A container as far as T9k cares: its name and resources. */
export interface T9kContainerLike {
  name: string;
  resources?: {
    limits?: Record<string, unknown>;
    requests?: Record<string, unknown>;
  };
}

/** A pod toleration (`Pod.spec.tolerations[]`). */
export interface T9kToleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

/** A PodTemplateSpec-like object: a Pod's `metadata` and `spec`, or a workload's `spec.template`. */
export interface T9kPodTemplateLike {
  metadata?: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: {
    containers: readonly T9kContainerLike[];
    schedulerName?: string;
    nodeSelector?: Record<string, string>;
    tolerations?: readonly T9kToleration[];
  };
}

/** `metadata.labels["key"]`-style path of a map entry, as error messages name it. */
export function entryPath(map: string, key: string): string {
  return `${map}[${JSON.stringify(key)}]`;
}

/** Path of a resource limit of the container at `index`. */
export function limitPath(index: number, resource: string): string {
  return entryPath(`spec.containers[${index}].resources.limits`, resource);
}

/**
 * Field paths of a pod template as T9k messages name them. The template types themselves are
 * Kubernetes vocabulary (lib/k8s/pod-template.ts).
 */
import { entryPath } from '../model/errors';
import type { PodTemplateLike } from '../k8s/pod-template';

/** The pod template the T9k functions take. Kept under this name for lib/index.ts and the components. */
export type T9kPodTemplateLike = PodTemplateLike;

/** Path of a resource limit of the container at `index`. */
export function limitPath(index: number, resource: string): string {
  return entryPath(`spec.containers[${index}].resources.limits`, resource);
}

/** Moved to lib/k8s/object.ts; kept for the files that still import it from here. */
export type { KubeObject } from './k8s/object';

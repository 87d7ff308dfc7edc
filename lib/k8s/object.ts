/**
 * A Kubernetes object, in two shapes: `K8sObject` as it travels over the wire (what the runtime reads:
 * typed metadata, apiVersion and kind optional), and `KubeObject` as the render functions return it
 * and both frameworks register it (apiVersion, kind and name set). Two types, not one: a rendered
 * object must be assignable to cdk8s's ApiObjectProps and Pulumi's ObjectMeta inputs, whose
 * `ownerReferences` and `managedFields` types differ from the runtime's wire metadata.
 */

/** The `metadata` fields the runtime reads. Unknown fields pass through untouched. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<Record<string, unknown>>;
  managedFields?: unknown[];
  [key: string]: unknown;
}

/** Any Kubernetes object as it travels over the wire. */
export interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** A complete object as the render functions return it and both frameworks register it. */
export interface KubeObject {
  /** Group and version, e.g. `tensor-fusion.ai/v1` or `apps/v1`. */
  apiVersion: string;
  /** Kind, e.g. `GPUPool`. */
  kind: string;
  /** Name, namespace, labels and annotations; other metadata fields pass through. */
  metadata: {
    /** Name of the object (unique per kind, and per namespace for namespaced kinds). */
    name: string;
    /** Namespace of a namespaced object; unset for cluster-scoped kinds and for the chart's or provider's default. */
    namespace?: string;
    /** Labels. */
    labels?: Record<string, string>;
    /** Annotations. */
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

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
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

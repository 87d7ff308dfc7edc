/**
 * Where the pod template sits in each workload kind, so one transform of a pod template serves
 * Deployments, StatefulSets, Jobs, CronJobs and bare Pods in both frameworks.
 */
import { fieldIssue, ValidationError } from '../model/errors';

/** A PodTemplateSpec-like object: the parts of a pod our transforms read and write. */
export interface PodTemplate {
  /** The pod's metadata; other fields pass through. */
  metadata?: {
    /** Pod labels. */
    labels?: Record<string, string>;
    /** Pod annotations. */
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  /** The pod spec; other fields pass through. */
  spec?: {
    /** The containers, of which only the names are read. */
    containers?: {
      /** Container name. */
      name: string;
      [key: string]: unknown;
    }[];
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

const TEMPLATE_PATHS: Readonly<Record<string, readonly string[]>> = {
  Pod: [],
  PodTemplate: ['template'],
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  ReplicationController: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

/** The path of the pod template inside an object of `kind`; throws for kinds without one. */
export function podTemplatePath(kind: string): readonly string[] {
  const path = TEMPLATE_PATHS[kind];
  if (!path) throw new ValidationError([fieldIssue('kind', kind, `a kind with a pod template: ${Object.keys(TEMPLATE_PATHS).join(', ')}`)]);
  return path;
}

/** A workload object or its constructor arguments (kind optional, as in @pulumi/kubernetes args). */
export interface WorkloadLike {
  /** Kind (`Deployment`, `CronJob`, ...); constructor args of @pulumi/kubernetes classes usually omit it. */
  kind?: unknown;
  /** The spec holding the pod template (or, for a Pod, the pod spec). */
  spec?: unknown;
  [key: string]: unknown;
}

/**
 * The pod template path of a workload: from its kind when present, otherwise from its shape
 * (constructor args of @pulumi/kubernetes classes usually omit the kind).
 */
export function podTemplatePathOf(object: WorkloadLike): readonly string[] {
  if (typeof object.kind === 'string') return podTemplatePath(object.kind);
  const spec = object.spec as Record<string, unknown> | undefined;
  if (spec && typeof spec === 'object') {
    if ('jobTemplate' in spec) return TEMPLATE_PATHS.CronJob;
    if ('template' in spec) return TEMPLATE_PATHS.Deployment;
    if ('containers' in spec) return TEMPLATE_PATHS.Pod;
  }
  throw new ValidationError([
    fieldIssue('spec', object.spec, 'a pod spec (spec.containers) or a pod template (spec.template or spec.jobTemplate)'),
  ]);
}

/** Reads the pod template of a workload object (the object itself for a Pod). */
export function getPodTemplate(object: WorkloadLike): PodTemplate {
  let node: unknown = object;
  for (const key of podTemplatePathOf(object)) node = (node as Record<string, unknown> | undefined)?.[key];
  return (node ?? {}) as PodTemplate;
}

/** Applies `transform` to the pod template of `object`, returning a new object. */
export function transformPodTemplate<T extends WorkloadLike>(object: T, transform: (template: PodTemplate) => PodTemplate): T {
  return withPodTemplate(object, transform(getPodTemplate(object)));
}

/** Returns a copy of `object` with its pod template replaced (metadata and spec only, for a Pod). */
export function withPodTemplate<T extends WorkloadLike>(object: T, template: PodTemplate): T {
  const path = podTemplatePathOf(object);
  if (path.length === 0) return { ...object, metadata: template.metadata, spec: template.spec };
  const copy = { ...object } as Record<string, unknown>;
  let parent = copy;
  path.forEach((key, i) => {
    if (i === path.length - 1) {
      parent[key] = template;
    } else {
      parent[key] = { ...(parent[key] as Record<string, unknown> | undefined) };
      parent = parent[key] as Record<string, unknown>;
    }
  });
  return copy as T;
}

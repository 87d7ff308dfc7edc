/**
 * The pods a set of manifests would create, for `kubectl tf plan`: a Pod as it is, each controller
 * kind's template once per replica (Deployment, StatefulSet, ReplicaSet, ReplicationController), a
 * Job's and CronJob's once per parallel pod. Only GPU pods (labelled `tensor-fusion.ai/enabled`) take
 * a share. Other pods of the tensor-fusion scheduler take CPU and memory on the pool's nodes, as the
 * extender places them; the rest are counted and left out.
 */
import { SCHEDULER_NAME } from '../../contract/object-names';
import { ENABLED_LABEL } from '../../model/metadata-keys';
import type { K8sObject } from '../kube/cluster';
import { CliError, EXIT } from './cli-error';
import { MAX_PLAN_PODS } from './manifest-shape';

/** One pod to place, with where it came from. */
export interface WorkloadPod {
  readonly namespace: string;
  readonly name: string;
  /** The pod (metadata and spec), as its controller would create it. */
  readonly pod: K8sObject;
  /** `Kind namespace/name` of the manifest, for messages. */
  readonly source: string;
  /** True for a pod of our scheduler without a GPU share: it takes only CPU and memory. */
  readonly cpuOnly?: true;
}

export interface WorkloadPods {
  readonly pods: WorkloadPod[];
  /** Pods neither labelled enabled nor of our scheduler: they take nothing from a pool. */
  readonly notGpu: number;
  /** Kinds in the manifests that create no pods (Services, ConfigMaps...), by kind. */
  readonly ignored: Record<string, number>;
}

interface Template {
  metadata?: K8sObject['metadata'];
  spec?: unknown;
}

type Spec = { replicas?: number; parallelism?: number; template?: Template; jobTemplate?: { spec?: Spec } };

/** How many pods of which template the object creates, or undefined for a kind that creates none. */
function templateOf(o: K8sObject): { template?: Template; count: number; field: string } | undefined {
  const spec = ((o as { spec?: Spec }).spec ?? {}) as Spec;
  switch (o.kind) {
    case 'Deployment':
    case 'StatefulSet':
    case 'ReplicaSet':
    case 'ReplicationController':
      return { template: spec.template, count: spec.replicas ?? 1, field: 'spec.replicas' };
    case 'Job':
      return { template: spec.template, count: spec.parallelism ?? 1, field: 'spec.parallelism' };
    case 'CronJob':
      return {
        template: spec.jobTemplate?.spec?.template,
        count: spec.jobTemplate?.spec?.parallelism ?? 1,
        field: 'spec.jobTemplate.spec.parallelism',
      };
    default:
      return undefined;
  }
}

/** The pods of `objects`, in order; objects without a namespace go to `namespace`. */
export function workloadPods(objects: readonly K8sObject[], namespace = 'default'): WorkloadPods {
  const pods: WorkloadPod[] = [];
  const ignored: Record<string, number> = {};
  let notGpu = 0;
  const add = (ns: string, name: string, pod: K8sObject, source: string) => {
    const share = pod.metadata?.labels?.[ENABLED_LABEL] === 'true';
    const ours = (pod as { spec?: { schedulerName?: string } }).spec?.schedulerName === SCHEDULER_NAME;
    if (!share && !ours) return void notGpu++;
    const named = { ...pod, metadata: { ...pod.metadata, name, namespace: ns } };
    pods.push({ namespace: ns, name, pod: named, source, ...(share ? {} : { cpuOnly: true as const }) });
  };
  for (const o of objects) {
    const ns = o.metadata?.namespace ?? namespace;
    const name = o.metadata?.name ?? '';
    const source = `${o.kind} ${ns}/${name}`;
    if (o.kind === 'Pod') {
      add(ns, name, o, source);
      continue;
    }
    const t = templateOf(o);
    if (!t) {
      ignored[o.kind ?? '?'] = (ignored[o.kind ?? '?'] ?? 0) + 1;
      continue;
    }
    if (!Number.isInteger(t.count) || t.count < 0) {
      throw new CliError(`${source}: ${t.field} is ${JSON.stringify(t.count)}, expected a whole number of pods (0 or more)`, EXIT.usage);
    }
    if (!t.template) throw new CliError(`${source}: has no pod template`, EXIT.usage);
    if (pods.length + t.count > MAX_PLAN_PODS) {
      throw new CliError(`${source}: the manifests create more than ${MAX_PLAN_PODS} pods, the most one plan places`, EXIT.usage);
    }
    // StatefulSets name pods <name>-<ordinal>; the other controllers' random suffixes are numbered here.
    for (let i = 0; i < t.count; i++) {
      add(
        ns,
        `${name}-${i}`,
        { apiVersion: 'v1', kind: 'Pod', metadata: t.template.metadata ?? {}, spec: t.template.spec } as K8sObject,
        source,
      );
    }
  }
  return { pods, notGpu, ignored };
}

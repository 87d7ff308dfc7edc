/**
 * Remote mode: a TensorFusionWorkload with `isLocalGPU: false` keeps `spec.replicas` worker pods.
 * Each worker is an ordinary opted-in pod in local mode: the webhook marks it for our scheduler, and
 * the scheduler extender places its GPU share like any other pod's. The pod comes from the pool's
 * worker template (`spec.componentConfig.worker`: `podTemplate` merged under, `image` set on the
 * `worker` container).
 * This package ships no worker image: without one the workload gets no workers (see the README).
 */
import type { GPUPool, TensorFusionWorkload } from '../../api';
import { ANNOTATION } from '../../annotations';
import { ENABLED_LABEL, MANAGED_BY_LABEL, WORKLOAD_LABEL } from '../../model/metadata-keys';
import type { K8sObject } from '../kube/cluster';
import { isActivePod } from '../shared/pod-lifecycle';
import { controllerRefTo } from '../shared/top-owner';
import { REPLICAS_MAX } from '../../model/rules';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the pool's worker template is user-written JSON, read as it comes
type JsonObject = Record<string, any>;
/** Name of the container that runs the worker image. */
export const WORKER_CONTAINER = 'worker';

export interface WorkerPlan {
  /** Pods to create, complete objects. */
  readonly create: K8sObject[];
  /** Names of pods to delete (highest ordinals first). */
  readonly delete: string[];
  /** Why nothing can be created, when that is the case. */
  readonly problem?: string;
}

const ORDINAL = /-worker-(\d+)$/;

/**
 * Worker pods created per workload in one pass, at first and at most. Like the ReplicaSet controller's
 * slow start, a pass creates at most twice the workers already active (never fewer than
 * WORKER_CREATE_INITIAL, never more than WORKER_CREATE_BURST), so a large or mistaken plan ramps up
 * over passes instead of sending thousands of creates at once, and creations that fail (a quota) do
 * not grow.
 */
export const WORKER_CREATE_INITIAL = 16;
export const WORKER_CREATE_BURST = 500;

const str = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : String(v));

/** The image remote-mode workers of `pool` run, or undefined when it names none (then no worker is made). */
export function workerImage(pool: GPUPool): string | undefined {
  const worker = pool.spec.componentConfig?.worker;
  if (worker?.image) return worker.image;
  const containers = (worker?.podTemplate as { spec?: { containers?: JsonObject[] } } | undefined)?.spec?.containers;
  const main = Array.isArray(containers) ? (containers.find((c) => c?.name === WORKER_CONTAINER) ?? containers[0]) : undefined;
  return typeof main?.image === 'string' && main.image !== '' ? main.image : undefined;
}

/** The worker pod of ordinal `i`, or undefined when the pool names no worker image or template. */
export function workerPod(workload: TensorFusionWorkload, pool: GPUPool, i: number): K8sObject | undefined {
  const name = workload.metadata.name as string;
  const namespace = workload.metadata.namespace as string;
  const worker = pool.spec.componentConfig?.worker;
  const template = (worker?.podTemplate ?? {}) as { metadata?: JsonObject; spec?: JsonObject };
  const spec = { ...(template.spec ?? {}) } as JsonObject;
  const containers: JsonObject[] = Array.isArray(spec.containers) ? spec.containers.map((c: JsonObject) => ({ ...c })) : [];
  let main = containers.find((c) => c.name === WORKER_CONTAINER) ?? containers[0];
  if (!main) {
    if (!worker?.image) return undefined;
    main = { name: WORKER_CONTAINER };
    containers.push(main);
  }
  if (worker?.image) main.image = worker.image;
  if (!main.image) return undefined;
  const s = workload.spec ?? {};
  const res = s.resources;
  const annotations: Record<string, string> = {
    ...(template.metadata?.annotations ?? {}),
    [ANNOTATION.pool]: pool.metadata.name as string,
    [ANNOTATION.isLocalGpu]: 'true',
    [ANNOTATION.generateWorkload]: 'false',
    [ANNOTATION.workload]: name,
    [ANNOTATION.injectContainers]: main.name,
  };
  const put = (key: string, v: unknown) => {
    const text = str(v);
    if (text !== undefined) annotations[key] = text;
  };
  put(ANNOTATION.tflopsRequest, res?.requests?.tflops);
  put(ANNOTATION.tflopsLimit, res?.limits?.tflops);
  put(ANNOTATION.vramRequest, res?.requests?.vram);
  put(ANNOTATION.vramLimit, res?.limits?.vram);
  put(ANNOTATION.qos, s.qos);
  put(ANNOTATION.gpuCount, s.gpuCount);
  put(ANNOTATION.gpuModel, s.gpuModel);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${name}-worker-${i}`,
      namespace,
      labels: { ...(template.metadata?.labels ?? {}), [ENABLED_LABEL]: 'true', [WORKLOAD_LABEL]: name, [MANAGED_BY_LABEL]: name },
      annotations,
      ownerReferences: workload.metadata.uid ? [controllerRefTo(workload, 'TensorFusionWorkload')] : undefined,
    },
    spec: { ...spec, containers },
  };
}

/**
 * What to create and delete so that a remote workload has `spec.replicas` active workers. Finished
 * workers are replaced (deleted and re-created under their ordinal).
 */
export function planWorkers(workload: TensorFusionWorkload, pool: GPUPool | undefined, pods: readonly K8sObject[]): WorkerPlan {
  const name = workload.metadata.name as string;
  // Bounded again here: a workload stored before the CRD bound may ask for more.
  const wanted = workload.spec?.isLocalGPU === false ? Math.min(REPLICAS_MAX, Math.max(0, Number(workload.spec?.replicas ?? 0))) : 0;
  const mine = pods.filter(
    (p) =>
      p.metadata.labels?.[WORKLOAD_LABEL] === name && ORDINAL.test(p.metadata.name ?? '') && p.metadata.name?.startsWith(`${name}-worker-`),
  );
  const ordinal = (p: K8sObject) => Number(ORDINAL.exec(p.metadata.name as string)![1]);
  const del: string[] = [];
  const taken = new Set<number>();
  for (const p of [...mine].sort((a, b) => ordinal(b) - ordinal(a))) {
    const i = ordinal(p);
    if (i >= wanted || !isActivePod(p)) {
      if (!p.metadata.deletionTimestamp) del.push(p.metadata.name as string);
    } else taken.add(i);
  }
  const create: K8sObject[] = [];
  const terminating = new Set(mine.filter((p) => !isActivePod(p)).map(ordinal));
  const budget = Math.min(WORKER_CREATE_BURST, Math.max(WORKER_CREATE_INITIAL, 2 * taken.size));
  for (let i = 0; i < wanted && create.length < budget; i++) {
    if (taken.has(i) || terminating.has(i)) continue;
    if (!pool) return { create: [], delete: del, problem: `GPUPool ${JSON.stringify(workload.spec?.poolName)} not found` };
    const pod = workerPod(workload, pool, i);
    if (!pod)
      return {
        create: [],
        delete: del,
        problem: `GPUPool ${JSON.stringify(pool.metadata.name)} names no worker image (spec.componentConfig.worker)`,
      };
    create.push(pod);
  }
  return { create, delete: del };
}

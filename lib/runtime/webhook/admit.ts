/**
 * The admission decision for one pod CREATE: decode and validate the annotations, resolve them over
 * the WorkloadProfile and the GPUPool, and say how to patch the pod. No HTTP and no API write here:
 * cluster reads go through {@link AdmissionView} (informer caches), so tests drive it directly.
 *
 * The webhook only validates, resolves and marks. GPU placement happens later, in the scheduler
 * extender at bind time, and generated TensorFusionWorkloads are made by the controller from pods that
 * exist: nothing in an AdmissionReview, which anyone reaching the port can forge, is ever written.
 */
import { ANNOTATION } from '../../annotations';
import { ignoredKeyWarnings } from '../../annotations/upstream';
import type { TensorFusionWorkload } from '../../api';
import { FieldIssue, fieldIssue } from '../../model/errors';
import { RECORD_ANNOTATIONS, SHARE_ANNOTATION, WORKLOAD_LABEL } from '../../model/metadata-keys';
import { poolIsolation } from '../../model/rules';
import { DRA_POD_CLAIM, poolShareDelivery } from '../../model/dra';
import { claimTemplate } from '../shared/dra/claim-template';
import { SCHEDULER_NAME } from '../../contract/object-names';
import type { K8sObject } from '../kube/cluster';
import { isGenerated } from '../shared/workload-origin';
import { controllerOf } from '../shared/top-owner';
import { encodeShare, isOptedIn } from '../shared/share';
import { EnvVar, isNodeGivenEnv, localGpuEnv, remoteClientEnv, ShareSettings, TF_ENV } from '../shared/pod-share/container-env';
import { nodeGivenEnvWarnings, shareResource } from './owned-fields';
import { topOwnerName } from './owner';
import { podPatch } from './patch';
import { resolvePodSettings, ResolvedPod, SettingsView, shareRequest } from '../shared/resolve-pod';
import { reuseIssues } from './reuse';
import { AdmissionRequest, allow, Decision, deny } from './review';
import { isT9kPod, priorityFor, schedulerIssue } from './scheduling';
import { workerImage } from './workers';
import { autoscaledShare } from './auto-set';
import { limitsVolumeIssues, limitsVolumeOps } from '../shared/pod-share/limits-volume';
import { quotaBounds, QuotaObject, showSingle, SingleBounds, singleExcesses } from '../shared/quota';

/** Cluster reads the handler needs, answered from informer caches (profiles with a live read on a miss). */
export interface AdmissionView extends SettingsView {
  workload(namespace: string, name: string): Promise<TensorFusionWorkload | undefined>;
  /** The workload if cached (no API call): its autoscaling recommendation applies to new pods. */
  cachedWorkload?(namespace: string, name: string): TensorFusionWorkload | undefined;
  /** False when the install runs no node agent, which hard isolation needs. @default true */
  readonly nodeAgent?: boolean;
  /** The namespace's GPUResourceQuotas, as cached. @default none */
  quotas?(namespace: string): readonly QuotaObject[];
}

/** The annotation that sets each per-pod amount a quota bounds. */
const SINGLE_ANNOTATIONS: Record<keyof SingleBounds, string> = {
  tflopsRequest: ANNOTATION.tflopsRequest,
  tflopsLimit: ANNOTATION.tflopsLimit,
  vramRequest: ANNOTATION.vramRequest,
  vramLimit: ANNOTATION.vramLimit,
  gpuCount: ANNOTATION.gpuCount,
};

/**
 * A pod whose share passes a per-pod (`single`) bound of its namespace's quotas could never be
 * placed there: refused now, naming the value, the bound and the quota, rather than left Pending.
 */
function singleQuotaIssues(share: ShareSettings, namespace: string, view: AdmissionView): FieldIssue[] {
  const quotas = view.quotas?.(namespace) ?? [];
  return singleExcesses(share, quotas.map(quotaBounds)).map((e) =>
    fieldIssue(
      SINGLE_ANNOTATIONS[e.amount],
      showSingle(e.amount, e.value),
      `at most ${showSingle(e.amount, e.max)}, the ${e.field} of GPUResourceQuota ${JSON.stringify(e.quota)} in namespace ${JSON.stringify(namespace)}`,
    ),
  );
}

/** Name of the init container added in no-standalone-worker mode. */
export const WORKER_INIT_CONTAINER = 'tensor-fusion-worker';

/**
 * The worker init container's securityContext: what Pod Security "restricted" asks of every container,
 * so that a namespace enforcing it admits the pod (the worker image must then run as a non-root user).
 * Set only when the container has none: a later webhook's own stays.
 */
export const WORKER_SECURITY_CONTEXT = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  runAsNonRoot: true,
  seccompProfile: { type: 'RuntimeDefault' },
};

/**
 * Placement records an incoming pod may carry when it was copied from a bound one. They describe the
 * other pod's share, so they go: this pod gets its own at bind.
 */
export const COPIED_RECORD_KEYS: readonly string[] = RECORD_ANNOTATIONS.filter((k) => k !== SHARE_ANNOTATION);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function containerNames(pod: K8sObject): string[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const list = Array.isArray(spec.containers) ? spec.containers : [];
  return list.map((c) => (isObject(c) && typeof c.name === 'string' ? c.name : '')).filter((n) => n !== '');
}

const isInjected = (c: unknown): boolean => isObject(c) && Array.isArray(c.env) && c.env.some((e) => isObject(e) && e.name === TF_ENV.mode);

/** Containers an earlier invocation of this webhook injected into: they carry TENSOR_FUSION_MODE. */
function injectedBefore(pod: K8sObject): string[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const list = Array.isArray(spec.containers) ? spec.containers : [];
  return list.filter(isInjected).map((c) => (c as Record<string, unknown>).name as string);
}

/**
 * Containers already named like the worker init container: an app container always collides (init
 * and app containers share one name space); an init container collides unless it is ours from an
 * earlier invocation (it carries our env).
 */
function nameCollisions(pod: K8sObject): FieldIssue[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const expected = `a name other than "${WORKER_INIT_CONTAINER}", which ${ANNOTATION.noStandaloneWorkerMode} "true" gives the worker init container it adds`;
  const issues: FieldIssue[] = [];
  for (const list of ['containers', 'initContainers'] as const) {
    const items = Array.isArray(spec[list]) ? (spec[list] as unknown[]) : [];
    items.forEach((c, i) => {
      if (isObject(c) && c.name === WORKER_INIT_CONTAINER && (list === 'containers' || !isInjected(c))) {
        issues.push(fieldIssue(`spec.${list}[${i}].name`, c.name, expected));
      }
    });
  }
  return issues;
}

/**
 * A remote workload's worker pod (controlled by it, made from its spec by the controller): the local
 * half of a remote share, so `is-local-gpu: true` is no contradiction of the workload's `false`.
 */
function isWorkerOf(pod: K8sObject, workload: TensorFusionWorkload): boolean {
  const owner = controllerOf(pod);
  return owner?.kind === 'TensorFusionWorkload' && owner.uid === workload.metadata.uid;
}

/** The workload the pod belongs to and the warnings it gives, or the issues that deny the pod. */
async function workloadFor(
  namespace: string,
  pod: K8sObject,
  r: ResolvedPod,
  view: AdmissionView,
): Promise<{ name?: string; warnings: string[] } | FieldIssue[]> {
  const s = r.settings;
  // Generated by the controller once the pod exists (see lib/runtime/reconcile/generated-workload.ts).
  if (s.workload === undefined) return { name: topOwnerName(pod), warnings: [] };
  // A named workload that exists is reused.
  const existing = await view.workload(namespace, s.workload);
  if (!existing) {
    if (!s.generateWorkload) {
      return [
        fieldIssue(
          ANNOTATION.workload,
          s.workload,
          `the name of an existing TensorFusionWorkload in namespace ${JSON.stringify(namespace)}, since ${ANNOTATION.generateWorkload} is "false"`,
        ),
      ];
    }
    return { name: s.workload, warnings: [] };
  }
  if (isGenerated(existing) || isWorkerOf(pod, existing)) return { name: s.workload, warnings: [] };
  const issues = reuseIssues(s, r.pool, existing);
  if (issues.length > 0) return issues;
  const warnings = s.generateWorkload
    ? [
        `${ANNOTATION.workload}: TensorFusionWorkload ${namespace}/${s.workload} exists and was not generated, so it is reused as it is and never changed`,
      ]
    : [];
  return { name: s.workload, warnings };
}

function envFor(containers: readonly string[], vars: EnvVar[]): Map<string, EnvVar[]> {
  return new Map(containers.map((c) => [c, vars]));
}

/**
 * Decides one AdmissionReview request. Pods that are not opted in, pods of the T9k Scheduler, and
 * anything but a pod CREATE are allowed unchanged.
 */
export async function admitPod(req: AdmissionRequest, view: AdmissionView): Promise<Decision> {
  const pod = podToAdmit(req);
  if (!pod) return allow();
  const namespace = req.namespace ?? pod.metadata.namespace ?? '';

  const containers = containerNames(pod);
  if (containers.length === 0)
    return deny([
      fieldIssue('spec.containers', pod.spec && (pod.spec as Record<string, unknown>).containers, 'at least one named container'),
    ]);
  const annotations = isObject(pod.metadata.annotations) ? pod.metadata.annotations : {};
  const userContainers = userContainersOf(pod, containers, annotations);
  const r = await resolvePodSettings(annotations, namespace, view, userContainers);
  if (Array.isArray(r)) return deny(r);
  const local = r.settings.isLocalGpu;
  const podIssues = local ? localPodIssues(pod, r) : [];
  if (podIssues.length > 0) return deny(podIssues);
  const wl = await workloadFor(namespace, pod, r, view);
  if (Array.isArray(wl)) return deny(wl);
  const workload = wl.name;
  const scaled = autoscaledShare(r, namespace, workload, workload !== undefined ? view.cachedWorkload?.(namespace, workload) : undefined);
  const resolved: ResolvedPod = { ...r, share: scaled.share };
  const overQuota = singleQuotaIssues(resolved.share, namespace, view);
  if (overQuota.length > 0) return deny(overQuota);
  const injectInto = r.settings.injectContainers ? [...r.settings.injectContainers] : [userContainers[0]];
  // Every choice made for the pod that it did not ask for is said: kubectl prints warnings.
  const warnings = [...ignoredKeyWarnings(annotations), ...resolvedWarnings(r, namespace, workload, local), ...wl.warnings];
  if (scaled.warning) warnings.push(scaled.warning);
  const admission: Admission = { pod, namespace, workload, resolved, injectInto, warnings, nodeAgent: view.nodeAgent ?? true };
  return local ? admitLocal(admission) : admitRemote(admission);
}

/** The pod a request creates when this webhook decides it; undefined when it is allowed unchanged. */
function podToAdmit(req: AdmissionRequest): K8sObject | undefined {
  const pod = req.object;
  if (req.operation !== 'CREATE' || req.kind?.kind !== 'Pod' || req.subResource) return undefined;
  if (!isObject(pod) || !isObject(pod.metadata)) return undefined;
  if (!isOptedIn(pod)) return undefined;
  if (isT9kPod(pod)) return undefined;
  return pod;
}

/** The containers the pod's settings are resolved for. */
function userContainersOf(pod: K8sObject, containers: string[], annotations: Record<string, string>): string[] {
  // Reinvoked after another webhook added a container (istio-proxy, vault-agent): without an
  // inject-container annotation the pod would now need one, so the containers injected into before
  // stand for the pod as the user wrote it.
  const before = containers.length > 1 && !(ANNOTATION.injectContainers in annotations) ? injectedBefore(pod) : [];
  return before.length > 0 ? before : containers;
}

/** What denies a local-GPU pod before its workload is read: another scheduler, or names ours would take. */
function localPodIssues(pod: K8sObject, r: ResolvedPod): FieldIssue[] {
  const scheduler = schedulerIssue(pod);
  if (scheduler) return [scheduler];
  return [...(r.settings.noStandaloneWorkerMode ? nameCollisions(pod) : []), ...limitsVolumeIssues(pod)];
}

/** A pod allowed so far: what its patch is made from. */
interface Admission {
  readonly pod: K8sObject;
  readonly namespace: string;
  readonly workload: string | undefined;
  readonly resolved: ResolvedPod;
  /** The containers that get the env (and the limits volume). */
  readonly injectInto: string[];
  readonly warnings: string[];
  /** Whether the install runs the node agent. */
  readonly nodeAgent: boolean;
}

const workloadLabels = (workload: string | undefined) => (workload !== undefined ? { [WORKLOAD_LABEL]: workload } : undefined);

/** A remote-GPU pod: labelled with its workload and given the client env that reaches its worker. */
function admitRemote({ pod, namespace, workload, resolved, injectInto, warnings }: Admission): Decision {
  if (workload === undefined) {
    return deny([
      fieldIssue(
        ANNOTATION.workload,
        undefined,
        'a TensorFusionWorkload name, since the pod has neither a name nor an owner to name one after',
      ),
    ]);
  }
  const vars = remoteClientEnv(resolved.share, workload, namespace, `${WORKLOAD_LABEL}=${workload}`);
  const resource = shareResource(pod, []);
  warnings.push(...resource.warnings);
  // Its worker pods hold the share: a request or record it came with would reach our scheduler unchecked.
  const records = presentKeys(pod, RECORD_ANNOTATIONS);
  if (records.length > 0) {
    warnings.push(
      `metadata.annotations: removed ${records.join(', ')}: a remote-GPU pod holds no share of its own, the worker pods of TensorFusionWorkload ${namespace}/${workload} do`,
    );
  }
  const patch = podPatch(pod, {
    removeAnnotations: records,
    labels: workloadLabels(workload),
    env: envFor(injectInto, vars),
    ownedResource: resource.mutation,
  });
  return allow(patch, warnings);
}

/** Those of `keys` the pod's annotations have. */
function presentKeys(pod: K8sObject, keys: readonly string[]): string[] {
  const annotations = pod.metadata.annotations;
  return isObject(annotations) ? keys.filter((k) => k in annotations) : [];
}

/** A local-GPU pod: sent to our scheduler with its share request, priority, env and MPS limits. */
function admitLocal({ pod, namespace, workload, resolved, injectInto, warnings, nodeAgent }: Admission): Decision {
  const settings = resolved.settings;
  const isolation = poolIsolation(resolved.poolObject);
  const vars = localGpuEnv(resolved.share, workload, isolation);
  const priority = priorityFor(pod, settings.qos);
  if (priority.warning) warnings.push(priority.warning);
  warnings.push(...localPatchWarnings(pod, injectInto));
  const hard = isolation === 'hard';
  const dra = poolShareDelivery(resolved.poolObject) === 'DRA';
  if (dra && !hard) return deny(draIsolationIssue(resolved.pool));
  // Hard isolation: the kubelet gets each container's GPU, MPS daemon and limits from the agent, and
  // only through the share resource or (DRA) the pod's claim; the node's variables are the only ones
  // the container reads.
  const resource = shareResource(pod, hard && !dra ? injectInto : []);
  const share = shareRequest(resolved, injectInto.length);
  const template = dra ? claimTemplate(namespace, share) : undefined;
  warnings.push(...resource.warnings, ...(hard ? nodeGivenEnvWarnings(pod, injectInto) : []));
  if (isolation === 'hard' && !nodeAgent) {
    warnings.push(
      `GPUPool ${JSON.stringify(resolved.pool)} has hard isolation, but TensorFusionController runs no node agent (nodeAgent: false): no kubelet can give this pod its GPU devices, MPS daemon and limits, and a kubelet starts it without them; set nodeAgent: true, or the pool's isolation to shared`,
    );
  }
  if (isolation === 'shared') {
    warnings.push(
      `GPUPool ${JSON.stringify(resolved.pool)} has spec.nodeManagerConfig.defaultIsolationMode "shared": the share's VRAM and compute limits reach the containers as variables only and nothing on the node enforces them`,
    );
  }
  const patch = podPatch(pod, {
    removeAnnotations: COPIED_RECORD_KEYS,
    annotations: { [SHARE_ANNOTATION]: encodeShare(share) },
    labels: workloadLabels(workload),
    schedulerName: SCHEDULER_NAME,
    priority: priority.priority,
    nodeNameToAffinity: true,
    env: envFor(injectInto, vars),
    dropEnv: hard ? isNodeGivenEnv : undefined,
    ownedResource: resource.mutation,
    claim: template ? { name: DRA_POD_CLAIM, template: template.metadata.name, holders: injectInto } : undefined,
    initContainers: settings.noStandaloneWorkerMode
      ? [
          {
            name: WORKER_INIT_CONTAINER,
            image: resolved.poolObject.spec.componentConfig?.worker?.image,
            env: vars,
            securityContext: WORKER_SECURITY_CONTEXT,
          },
        ]
      : undefined,
  });
  // Shared isolation: the MPS limits as files the kubelet refreshes (an in-place resize changes them;
  // the env does not). Under hard isolation the share's daemon holds them.
  return allow([...patch, ...(isolation === 'shared' ? limitsVolumeOps(pod, injectInto) : [])], warnings, template);
}

/** A DRA pool's isolation is hard: its kubelet plugin delivers each share with its MPS daemon (the GpuPool props refuse anything else; the CRD cannot). */
function draIsolationIssue(pool: string): FieldIssue[] {
  return [
    fieldIssue(
      `GPUPool ${JSON.stringify(pool)} spec.nodeManagerConfig.defaultIsolationMode`,
      'shared',
      '"hard" while spec.nodeManagerConfig.shareDelivery is "DRA" (DRA delivers a share with its MPS daemon): fix the pool',
    ),
  ];
}

/** Warnings about what the local patch changes that the pod did not ask for. */
function localPatchWarnings(pod: K8sObject, injectInto: readonly string[]): string[] {
  const warnings: string[] = [];
  const copied = presentKeys(pod, COPIED_RECORD_KEYS);
  if (copied.length > 0)
    warnings.push(`metadata.annotations: removed ${copied.join(', ')}, copied from another pod's placement; this pod gets its own at bind`);
  const nodeName = isObject(pod.spec) ? pod.spec.nodeName : undefined;
  if (typeof nodeName === 'string' && nodeName !== '') {
    warnings.push(
      `spec.nodeName: ${JSON.stringify(nodeName)} became a required node affinity, so that ${SCHEDULER_NAME} places the GPU share on that node`,
    );
  }
  if (injectInto.length > 1) {
    warnings.push(
      `${ANNOTATION.injectContainers}: the ${injectInto.length} containers ${injectInto.join(', ')} share the pod's GPU share; each gets 1/${injectInto.length} of its MPS limits`,
    );
  }
  return warnings;
}

/** Warnings about what resolution chose for the pod: upstream values with no effect, remote mode with no worker. */
function resolvedWarnings(r: ResolvedPod, namespace: string, workload: string | undefined, local: boolean): string[] {
  const warnings: string[] = [];
  const protection = r.settings.evictionProtection;
  if (protection !== undefined) {
    warnings.push(
      `${ANNOTATION.evictionProtection}: ${JSON.stringify(protection)} has no effect: upstream TensorFusion prices the protection window, and this package has no pricing`,
    );
  }
  if (!local && workload !== undefined && !workerImage(r.poolObject)) {
    warnings.push(
      `${ANNOTATION.isLocalGpu}: remote mode, but GPUPool ${JSON.stringify(r.pool)} names no worker image (spec.componentConfig.worker), ` +
        `so TensorFusionWorkload ${namespace}/${workload} gets no worker pods and this pod no GPU until one is set`,
    );
  }
  return warnings;
}

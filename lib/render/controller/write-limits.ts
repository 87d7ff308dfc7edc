/**
 * What RBAC cannot say about the controller's own writes, said by ValidatingAdmissionPolicies bound to
 * its ServiceAccount (matchConditions on the user name), so that a compromised controller process,
 * which parses untrusted pod specs, still cannot:
 * - create any pod but a remote-mode worker: our labels, owned by its TensorFusionWorkload, the
 *   namespace's default ServiceAccount, nothing privileged, and only images of the worker template of
 *   the GPUPool it names (the pools are the policy's params); or a growth placeholder (docs/growth.md):
 *   the pause image at the placeholders' priority, owned by pods only, nothing privileged either;
 * - delete any pod but a worker it owns, a growth placeholder, or a victim kube-scheduler marked for
 *   preemption (the scheduler container shares the ServiceAccount);
 * - change anything on a node but the xgn taint and the share-released annotation;
 * - change anything on a pod but the allocation record and MPS annotations of a share it holds
 *   (autoscaling's in-place resize).
 */
import { ANNOTATION } from '../../annotations';
import { KINDS } from '../../api/kinds';
import { KubeObject } from '../../k8s/object';
import {
  ALLOCATION_ANNOTATION,
  ENABLED_LABEL,
  GROWTH_POOL_LABEL,
  MANAGED_BY_LABEL,
  PLACEMENT_ANNOTATIONS,
  SHARE_RELEASED_ANNOTATION,
  WORKLOAD_LABEL,
} from '../../model/metadata-keys';
import { API_VERSION } from '../../model/group';
import { XGN_TAINT } from '../../t9k/keys';
import { ADMISSION_API_VERSION, controllerUser, literal, PolicyValidation, present, Side } from './integrity';
import { CONTROLLER_NAMES, GROWTH_PLACEHOLDER_IMAGE, GROWTH_PRIORITY_CLASS } from '../../contract/object-names';
import { ResolvedControllerProps } from './props';

/** Name suffix of a worker pod: `<workload>-worker-<ordinal>` (lib/runtime/webhook/workers.ts). */
export const WORKER_NAME_INFIX = '-worker-';

/** The reason kube-scheduler sets on the DisruptionTarget condition of a pod it preempts. */
export const PREEMPTION_REASON = 'PreemptionByScheduler';

const forbidden = (expression: string, message: string): PolicyValidation => ({ expression, message, reason: 'Forbidden' });

/** Every container list of a pod spec (all: containers, initContainers, ephemeralContainers). */
function everyContainer(side: string, predicate: (c: string) => string): string {
  return ['containers', 'initContainers', 'ephemeralContainers']
    .map((list) => `(!has(${side}.spec.${list}) || ${side}.spec.${list}.all(c, ${predicate('c')}))`)
    .join(' && ');
}

const NOT_PRIVILEGED =
  `!(has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged) && ` +
  `!(has(c.securityContext) && has(c.securityContext.capabilities) && has(c.securityContext.capabilities.add) && size(c.securityContext.capabilities.add) > 0) && ` +
  `(!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))`;

const ONLY_WORKERS = 'the tensor-fusion controller may create only remote-mode worker pods';

/** A pod labelled as a growth placeholder, on `side` (object or oldObject). */
const placeholder = (side: Side) =>
  `${present(side, 'labels', GROWTH_POOL_LABEL)} && has(${side}.spec.priorityClassName) && ${side}.spec.priorityClassName == ${literal(GROWTH_PRIORITY_CLASS.name)}`;

/** The check on a growth placeholder the controller creates: it only holds room. */
function placeholderShapeValidation(): PolicyValidation {
  return forbidden(
    `!${present('object', 'labels', GROWTH_POOL_LABEL)} || (${placeholder('object')} && ` +
      `object.spec.containers.all(c, has(c.image) && c.image == ${literal(GROWTH_PLACEHOLDER_IMAGE)}) && ` +
      `!has(object.spec.initContainers) && !has(object.spec.ephemeralContainers) && !has(object.spec.volumes) && ` +
      `has(object.metadata.ownerReferences) && object.metadata.ownerReferences.all(r, r.apiVersion == 'v1' && r.kind == 'Pod' && !(has(r.controller) && r.controller)))`,
    `the tensor-fusion controller's growth placeholders run only ${GROWTH_PLACEHOLDER_IMAGE} at priority class ${GROWTH_PRIORITY_CLASS.name}, with no volumes, owned by the pods they stand for`,
  );
}

/** The checks on a pod the controller creates that need no GPUPool: its labels, name, owner, identity and privileges. */
export function workerShapeValidations(): PolicyValidation[] {
  const wl = `object.metadata.labels[${literal(WORKLOAD_LABEL)}]`;
  const onCreate = (expression: string) => `request.resource.resource != 'pods' || request.operation != 'CREATE' || (${expression})`;
  return [
    forbidden(
      `(${placeholder('object')}) || ${present('object', 'labels', ENABLED_LABEL)} && object.metadata.labels[${literal(ENABLED_LABEL)}] == 'true' && ${present('object', 'labels', WORKLOAD_LABEL)} && ` +
        `${present('object', 'labels', MANAGED_BY_LABEL)} && object.metadata.labels[${literal(MANAGED_BY_LABEL)}] == ${wl} && ${present('object', 'annotations', ANNOTATION.pool)}`,
      `${ONLY_WORKERS}: labelled ${ENABLED_LABEL}: "true", ${WORKLOAD_LABEL} and ${MANAGED_BY_LABEL} with the workload's name, annotated ${ANNOTATION.pool}`,
    ),
    forbidden(
      `(${placeholder('object')}) || has(object.metadata.name) && object.metadata.name.startsWith(${wl} + '${WORKER_NAME_INFIX}') && object.metadata.name.substring(size(${wl}) + ${WORKER_NAME_INFIX.length}).matches('^[0-9]+$') && ` +
        `has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) == 1 && object.metadata.ownerReferences.all(r, ` +
        `r.apiVersion == '${API_VERSION}' && r.kind == '${KINDS.TensorFusionWorkload.kind}' && r.name == ${wl} && has(r.controller) && r.controller)`,
      `${ONLY_WORKERS}: named <workload>${WORKER_NAME_INFIX}<ordinal> and owned (controller: true) by that TensorFusionWorkload only`,
    ),
    forbidden(
      `(!has(object.spec.serviceAccountName) || object.spec.serviceAccountName == 'default') && (!has(object.spec.serviceAccount) || object.spec.serviceAccount == 'default')`,
      `${ONLY_WORKERS}: they run as the namespace's default ServiceAccount`,
    ),
    forbidden(
      `!(has(object.spec.hostNetwork) && object.spec.hostNetwork) && !(has(object.spec.hostPID) && object.spec.hostPID) && !(has(object.spec.hostIPC) && object.spec.hostIPC) && ` +
        `(!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))) && ${everyContainer('object', () => NOT_PRIVILEGED)}`,
      `${ONLY_WORKERS}: no host namespaces, hostPath volumes, host ports, privileged containers or added capabilities`,
    ),
    placeholderShapeValidation(),
  ].map((v) => ({ ...v, expression: onCreate(v.expression) }));
}

/**
 * The check on a worker pod the controller creates against each GPUPool (the policy's params): its
 * images are the worker images of the pool it names.
 */
export function workerImageValidations(): PolicyValidation[] {
  const worker = 'params.spec.componentConfig.worker';
  const hasWorker = `has(params.spec.componentConfig) && has(${worker})`;
  const template = `${worker}.podTemplate.spec`;
  const inTemplate = (list: string) =>
    `(has(${worker}.podTemplate) && has(${template}) && has(${template}.${list}) && ${template}.${list}.exists(t, has(t.image) && t.image == c.image))`;
  const allowedImage = `(${hasWorker} && ((has(${worker}.image) && ${worker}.image == c.image) || ${inTemplate('containers')} || ${inTemplate('initContainers')}))`;
  const namesThisPool = `${present('object', 'annotations', ANNOTATION.pool)} && object.metadata.annotations[${literal(ANNOTATION.pool)}] == params.metadata.name`;
  return [
    forbidden(
      `!(${namesThisPool}) || (${everyContainer('object', () => `has(c.image) && ${allowedImage}`)})`,
      `${ONLY_WORKERS}: every image must be the worker image of the GPUPool the pod names (spec.componentConfig.worker.image or its podTemplate)`,
    ),
  ];
}

/** The keys of a metadata map other than `except` are the same on both sides. */
function sameMapExcept(field: string, except?: string | readonly string[]): string {
  const keys = typeof except === 'string' ? [except] : (except ?? []);
  const skip = (k: string) =>
    keys.length === 1 ? `${k} == ${literal(keys[0])} || ` : keys.length > 1 ? `${k} in [${keys.map(literal).join(', ')}] || ` : '';
  const covered = (from: string, to: string) =>
    `(!has(${from}.metadata.${field}) || ${from}.metadata.${field}.all(k, ${skip('k')}(has(${to}.metadata.${field}) && k in ${to}.metadata.${field} && ${to}.metadata.${field}[k] == ${from}.metadata.${field}[k])))`;
  return `${covered('object', 'oldObject')} && ${covered('oldObject', 'object')}`;
}

function sameField(path: string): string {
  return `(has(object.${path}) == has(oldObject.${path}) && (!has(object.${path}) || object.${path} == oldObject.${path}))`;
}

/** Node fields besides labels, annotations and taints that a patch could change. */
const NODE_FIELDS = [
  'spec.unschedulable',
  'spec.providerID',
  'spec.podCIDR',
  'spec.podCIDRs',
  'spec.configSource',
  'spec.externalID',
  'metadata.ownerReferences',
  'metadata.finalizers',
];

/** Pod annotations an in-place resize rewrites (lib/runtime/autoscale/resize.ts): the record and what the containers read. */
export const RESIZE_ANNOTATIONS: readonly string[] = [ALLOCATION_ANNOTATION, ...Object.values(PLACEMENT_ANNOTATIONS)];

/** Pod fields besides labels and annotations that an update could change. */
const POD_FIELDS = [
  'metadata.ownerReferences',
  'metadata.finalizers',
  'spec.activeDeadlineSeconds',
  'spec.tolerations',
  'spec.schedulingGates',
];

/** The checks on pod deletes and updates and node patches by the controller's ServiceAccount. */
export function writeLimitValidations(): PolicyValidation[] {
  const node = "request.resource.resource != 'nodes'";
  const others = (side: string) => `${side}.spec.taints.filter(t, t.key != ${literal(XGN_TAINT.key)})`;
  const ownedWorker =
    `${present('oldObject', 'labels', WORKLOAD_LABEL)} && has(oldObject.metadata.ownerReferences) && oldObject.metadata.ownerReferences.exists(r, ` +
    `r.apiVersion == '${API_VERSION}' && r.kind == '${KINDS.TensorFusionWorkload.kind}' && r.name == oldObject.metadata.labels[${literal(WORKLOAD_LABEL)}] && has(r.controller) && r.controller)`;
  const preempted = `has(oldObject.status) && has(oldObject.status.conditions) && oldObject.status.conditions.exists(c, c.type == 'DisruptionTarget' && c.status == 'True' && has(c.reason) && c.reason == '${PREEMPTION_REASON}')`;
  return [
    forbidden(
      `request.resource.resource != 'pods' || request.operation != 'DELETE' || (${ownedWorker}) || (${placeholder('oldObject')}) || (${preempted})`,
      'the tensor-fusion controller may delete only the worker pods of its TensorFusionWorkloads, its growth placeholders, or pods kube-scheduler marked for preemption',
    ),
    forbidden(
      `request.resource.resource != 'pods' || request.operation != 'UPDATE' || (${present('oldObject', 'annotations', ALLOCATION_ANNOTATION)} && ` +
        `${sameMapExcept('annotations', RESIZE_ANNOTATIONS)} && ${sameMapExcept('labels')} && ${POD_FIELDS.map(sameField).join(' && ')} && ` +
        ['containers', 'initContainers']
          .map(
            (l) =>
              `(has(object.spec.${l}) ? object.spec.${l}.map(c, c.image) : []) == (has(oldObject.spec.${l}) ? oldObject.spec.${l}.map(c, c.image) : [])`,
          )
          .join(' && ') +
        ')',
      `the tensor-fusion controller may change only the annotations ${RESIZE_ANNOTATIONS.join(', ')} of a pod, and only of one that holds a GPU allocation (an in-place resize)`,
    ),
    forbidden(`${node} || (${sameMapExcept('labels')})`, 'the tensor-fusion controller may not change node labels'),
    forbidden(
      `${node} || (${sameMapExcept('annotations', SHARE_RELEASED_ANNOTATION)})`,
      `the tensor-fusion controller may change only the node annotation ${SHARE_RELEASED_ANNOTATION}`,
    ),
    forbidden(
      `${node} || ((has(object.spec.taints) ? size(${others('object')}) : 0) == (has(oldObject.spec.taints) ? size(${others('oldObject')}) : 0) && ` +
        `(!has(object.spec.taints) || !has(oldObject.spec.taints) || ${others('object')} == ${others('oldObject')}))`,
      `the tensor-fusion controller may add, change or remove only the node taint ${XGN_TAINT.key}`,
    ),
    forbidden(
      `${node} || (${NODE_FIELDS.map(sameField).join(' && ')})`,
      `the tensor-fusion controller may not change node fields other than its taint and annotation`,
    ),
  ];
}

function policy(name: string, labels: Record<string, string>, props: ResolvedControllerProps, spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: ADMISSION_API_VERSION,
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels },
    spec: {
      failurePolicy: 'Fail',
      matchConditions: [{ name: 'the-controller', expression: `request.userInfo.username == ${literal(controllerUser(props.namespace))}` }],
      ...spec,
    },
  };
}

/**
 * Two policies. The images of the pods it creates take every GPUPool as a param (a pod is checked
 * against the pool it names; every pool's check must pass, so the others pass it through), and with
 * no pool at all no worker may be created. The API server collects the params before it reads the
 * matchConditions, so that policy must match only workload-labelled pods: matching every pod, it
 * refused everyone's pods ("no params found") while no GPUPool existed. A pod naming a pool that does
 * not exist is checked against no pool's images (CEL cannot ask whether some param matched). The
 * rest (the shape of the pods it creates, deletes, pod and node updates) needs no params.
 */
export function renderWriteLimits(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const workers = CONTROLLER_NAMES.workerPodPolicy;
  const writes = CONTROLLER_NAMES.writeLimitPolicy;
  const rule = (resources: string[], operations: string[]) => ({ apiGroups: [''], apiVersions: ['v1'], operations, resources });
  return [
    policy(workers, labels, props, {
      paramKind: { apiVersion: API_VERSION, kind: KINDS.GPUPool.kind },
      // Only worker pods (managed-by): a GPUPool param per pool means one evaluation, and one
      // conversion of the pod, per pool, and no pool at all means a refusal, so no other pod may reach
      // this policy. Not the workload label: the webhook puts that on every GPU pod of a workload. The
      // shape checks of the writes policy refuse the controller's pods without the label.
      matchConstraints: {
        resourceRules: [rule(['pods'], ['CREATE'])],
        objectSelector: { matchExpressions: [{ key: MANAGED_BY_LABEL, operator: 'Exists' }] },
      },
      validations: workerImageValidations(),
    }),
    {
      apiVersion: ADMISSION_API_VERSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: workers, labels },
      spec: { policyName: workers, validationActions: ['Deny'], paramRef: { selector: {}, parameterNotFoundAction: 'Deny' } },
    },
    policy(writes, labels, props, {
      matchConstraints: { resourceRules: [rule(['pods'], ['CREATE', 'DELETE', 'UPDATE']), rule(['nodes'], ['UPDATE'])] },
      validations: [...workerShapeValidations(), ...writeLimitValidations()],
    }),
    {
      apiVersion: ADMISSION_API_VERSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: writes, labels },
      spec: { policyName: writes, validationActions: ['Deny'] },
    },
  ];
}

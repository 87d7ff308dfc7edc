/**
 * Integrity of the placement record on pods: ValidatingAdmissionPolicies let no one but the
 * controller's ServiceAccount add, change or remove the annotations the webhook and the extender
 * write, take the opt-in label off a pod that holds or awaits an allocation, or opt in a pod that
 * already carries records. Any of these would release or forge a GPU share while the pod runs,
 * letting another pod onto a GPU that is already full.
 *
 * The same holds for the Bindings of anyone else, which could write records as they bind a pod.
 *
 * The pod policies see only pods that carry the opt-in label: the runtime reads records only on pods
 * labelled "true" (lib/runtime/shared/share.ts), and a pod holding an allocation cannot lose the label, so
 * records on any other pod count for nothing. Every other pod in the cluster is spared the CEL
 * evaluation (and its conversions of the pod) on each create and each status update.
 */
import { NAMESPACE_NAME_LABEL } from '../../k8s/labels';
import { KubeObject } from '../../k8s/object';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, RECORD_ANNOTATIONS, SHARE_ANNOTATION, SHARE_RESOURCE } from '../../model/metadata-keys';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import { ResolvedControllerProps } from './props';
import { WEBHOOK_EXCLUDED_NAMESPACES } from './webhook';

/** The apiVersion of the admission policies, bindings and webhook configuration. */
export const ADMISSION_API_VERSION = 'admissionregistration.k8s.io/v1';

/** Pod annotations that only the controller may write after the pod is created. */
export const PROTECTED_ANNOTATIONS = RECORD_ANNOTATIONS;

/** A `validations` entry of a ValidatingAdmissionPolicy. */
export interface PolicyValidation {
  /** CEL expression that must hold for the request to be admitted. */
  expression: string;
  /** Message of the refusal. */
  message: string;
  /** Reason of the refusal. */
  reason: 'Forbidden';
}

/** The user name the API server gives the controller's ServiceAccount. */
export function controllerUser(namespace: string): string {
  return `system:serviceaccount:${namespace}:${CONTROLLER_NAMES.controller}`;
}

export type Side = 'object' | 'oldObject';
type Field = 'annotations' | 'labels';

/** A CEL string literal of one of our own keys or names: a quote inside one would break it. */
export function literal(key: string): string {
  if (!/^[a-z0-9.:/-]+$/.test(key)) throw new Error(`not a plain key or name: ${key}`);
  return `'${key}'`;
}

/** `key` is present in the map (has() first: a pod without any annotations has no such field). */
export function present(side: Side, field: Field, key: string): string {
  return `(has(${side}.metadata.${field}) && ${literal(key)} in ${side}.metadata.${field})`;
}

/** Any of `keys` is present in the map. */
function anyPresent(side: Side, field: Field, keys: readonly string[]): string {
  return `(${keys.map((key) => present(side, field, key)).join(' || ')})`;
}

function value(side: Side, field: Field, key: string): string {
  return `${side}.metadata.${field}[${literal(key)}]`;
}

/** Present on both sides with one value, or absent on both. */
function unchanged(field: Field, key: string): string {
  return `(${present('object', field, key)} == ${present('oldObject', field, key)} && (!${present('object', field, key)} || ${value('object', field, key)} == ${value('oldObject', field, key)}))`;
}

/**
 * The policy variable that exempts the controller, read first by every check: a matchCondition would
 * cost the API server one more conversion of the pod per request.
 */
const EXEMPT = 'byController';

const forbidden = (expression: string, message: string): PolicyValidation => ({
  expression: `variables.${EXEMPT} || ${expression}`,
  message,
  reason: 'Forbidden',
});

/** The integrity policy's checks, on updates (pods and pods/status) of pods that have the label before or after. */
export function integrityValidations(namespace: string): PolicyValidation[] {
  const who = `only the tensor-fusion controller (${controllerUser(namespace)}) may`;
  const optedIn = (side: Side) => `(${present(side, 'labels', ENABLED_LABEL)} && ${value(side, 'labels', ENABLED_LABEL)} == 'true')`;
  return [
    ...PROTECTED_ANNOTATIONS.map((key) =>
      forbidden(unchanged('annotations', key), `the pod annotation ${key} may not be added, changed or removed: ${who}`),
    ),
    // Not only once bound: taken off between the extender's filter and its bind, the label would let
    // the pod be bound with records that nothing counts.
    forbidden(
      `!${anyPresent('oldObject', 'annotations', [ALLOCATION_ANNOTATION, SHARE_ANNOTATION])} || !${present('oldObject', 'labels', ENABLED_LABEL)} || ` +
        `(${present('object', 'labels', ENABLED_LABEL)} && ${value('object', 'labels', ENABLED_LABEL)} == ${value('oldObject', 'labels', ENABLED_LABEL)})`,
      `the label ${ENABLED_LABEL} may not be removed or changed on a pod that holds a GPU allocation (${ALLOCATION_ANNOTATION}) or waits for one (${SHARE_ANNOTATION}): ${who}; delete the pod to release its share`,
    ),
    // The webhook resolves a share only when the pod is created: opting in later would make records
    // no webhook checked count.
    forbidden(
      `${optedIn('oldObject')} || !${optedIn('object')} || !${anyPresent('object', 'annotations', PROTECTED_ANNOTATIONS)}`,
      `the label ${ENABLED_LABEL}: "true" may not be added to a pod that carries any of the annotations ${PROTECTED_ANNOTATIONS.join(', ')}: the webhook resolves a share only when a pod is created; create the pod with the label`,
    ),
  ];
}

/**
 * The records policy's check, on creates of opted-in pods in the namespaces the webhook skips: there
 * the share would reach the scheduler extender without the webhook's validation.
 */
export function recordValidations(namespace: string): PolicyValidation[] {
  const skipped = skippedNamespaces(namespace);
  const who = `only the tensor-fusion controller (${controllerUser(namespace)}) may set them`;
  return [
    forbidden(
      `!${anyPresent('object', 'annotations', [SHARE_ANNOTATION, ALLOCATION_ANNOTATION])}`,
      `pods in ${skipped.join(' and ')} are not seen by the tensor-fusion webhook and may not carry ${SHARE_ANNOTATION} or ${ALLOCATION_ANNOTATION}: ${who}`,
    ),
  ];
}

/**
 * The bindings policy's checks, on creates of Bindings (`pods/binding` and the older `bindings`): the
 * API server copies a Binding's annotations onto the pod, and its labels too (PodTopologyLabelsAdmission,
 * on by default since 1.35), in a write that no pod policy sees. Only our extender binds with records.
 */
export function bindingValidations(namespace: string): PolicyValidation[] {
  const who = `only the tensor-fusion controller (${controllerUser(namespace)}) may`;
  return [
    forbidden(
      `!${anyPresent('object', 'annotations', PROTECTED_ANNOTATIONS)}`,
      `a Binding may not carry the annotations ${PROTECTED_ANNOTATIONS.join(', ')}, which it would copy onto the pod: ${who} bind with them, when its scheduler extender places a GPU share`,
    ),
    forbidden(
      `!${present('object', 'labels', ENABLED_LABEL)}`,
      `a Binding may not carry the label ${ENABLED_LABEL}, which it would copy onto the pod: set it on the pod, where the integrity policy checks it`,
    ),
  ];
}

/** The share policy's variable: some container or init container requests or limits {@link SHARE_RESOURCE}. */
export const ASKS_SHARE_EXPRESSION = (() => {
  const asks = `has(c.resources) && ((has(c.resources.requests) && ${literal(SHARE_RESOURCE)} in c.resources.requests) || (has(c.resources.limits) && ${literal(SHARE_RESOURCE)} in c.resources.limits))`;
  return `object.spec.containers.exists(c, ${asks}) || (has(object.spec.initContainers) && object.spec.initContainers.exists(c, ${asks}))`;
})();

/**
 * The share policy's check, on every pod create: the node agent serves {@link SHARE_RESOURCE} to any
 * container that asks, so a pod the webhook never saw (not opted in, or in a namespace it skips)
 * would get a GPU share no one placed. Only the webhook gives it, to the pods it records a share on.
 * No exemption: the controller creates no pod that holds it.
 */
export function shareResourceValidations(): PolicyValidation[] {
  return [
    {
      expression: `!variables.asksShare || (${present('object', 'labels', ENABLED_LABEL)} && ${value('object', 'labels', ENABLED_LABEL)} == 'true' && ${present('object', 'annotations', SHARE_ANNOTATION)})`,
      message: `a container may request ${SHARE_RESOURCE} only in a pod the tensor-fusion webhook admitted with a GPU share (label ${ENABLED_LABEL}: "true", in a namespace the webhook serves): the webhook gives it to the containers that hold the pod's share`,
      reason: 'Forbidden',
    },
  ];
}

/**
 * A ValidatingAdmissionPolicy named `name` that fails closed, with `spec` (its match and checks), and
 * its binding of the same name, which denies what the policy refuses.
 */
export function deniedByPolicy(name: string, labels: Record<string, string>, spec: Record<string, unknown>): KubeObject[] {
  return [
    {
      apiVersion: ADMISSION_API_VERSION,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels },
      // Ignore would let through, on any evaluation error, exactly what the policy refuses.
      spec: { failurePolicy: 'Fail', ...spec },
    },
    {
      apiVersion: ADMISSION_API_VERSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name, labels },
      spec: { policyName: name, validationActions: ['Deny'] },
    },
  ];
}

/** The namespaces the webhook does not see. */
const skippedNamespaces = (namespace: string): string[] => [...WEBHOOK_EXCLUDED_NAMESPACES, namespace];

/** A policy on pods with the exemption variable, and its binding (Deny). */
function podPolicy(
  name: string,
  labels: Record<string, string>,
  namespace: string,
  matchConstraints: Record<string, unknown>,
  validations: PolicyValidation[],
): KubeObject[] {
  return deniedByPolicy(name, labels, {
    matchConstraints,
    validations,
    variables: [{ name: EXEMPT, expression: `request.userInfo.username == ${literal(controllerUser(namespace))}` }],
  });
}

/**
 * The four policies and their bindings. Of the record policies, none sees the create of an opted-in
 * pod in a namespace the webhook serves, the bulk of the pods: the webhook has just resolved its
 * records, and each policy a pod matches costs the API server conversions of the pod. The bindings
 * policy sees every Binding (a Binding has no labels to select on), a small object; the share
 * policy sees every pod create, since the pods it guards against are exactly those no selector names.
 */
export function renderIntegrityPolicy(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const rule = (operations: string[], resources: string[]) => ({
    resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations, resources }],
  });
  return [
    ...podPolicy(
      CONTROLLER_NAMES.integrityPolicy,
      labels,
      props.namespace,
      {
        // Labels and annotations can be changed through pods/status as well.
        ...rule(['UPDATE'], ['pods', 'pods/status']),
        // Matched when the old or the new pod has the label (any value), as the API server reads it.
        objectSelector: { matchExpressions: [{ key: ENABLED_LABEL, operator: 'Exists' }] },
      },
      integrityValidations(props.namespace),
    ),
    ...podPolicy(
      CONTROLLER_NAMES.recordsPolicy,
      labels,
      props.namespace,
      {
        ...rule(['CREATE'], ['pods']),
        namespaceSelector: {
          matchExpressions: [{ key: NAMESPACE_NAME_LABEL, operator: 'In', values: skippedNamespaces(props.namespace) }],
        },
        objectSelector: { matchExpressions: [{ key: ENABLED_LABEL, operator: 'In', values: ['true'] }] },
      },
      recordValidations(props.namespace),
    ),
    // Every pod create in the cluster, with no selector: what the policy refuses is pods nothing of ours looked at.
    ...deniedByPolicy(CONTROLLER_NAMES.shareResourcePolicy, labels, {
      matchConstraints: rule(['CREATE'], ['pods']),
      variables: [{ name: 'asksShare', expression: ASKS_SHARE_EXPRESSION }],
      validations: shareResourceValidations(),
    }),
    ...podPolicy(
      CONTROLLER_NAMES.bindingsPolicy,
      labels,
      props.namespace,
      rule(['CREATE'], ['pods/binding', 'bindings']),
      bindingValidations(props.namespace),
    ),
  ];
}

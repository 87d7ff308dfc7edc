/**
 * Integrity of the placement record on pods: a ValidatingAdmissionPolicy lets no one but the
 * controller's ServiceAccount add, change or remove the annotations the webhook and the extender
 * write, or take the opt-in label off a pod that holds an allocation. Any of these would release or
 * forge a GPU share while the pod runs, letting another pod onto a GPU that is already full.
 *
 * The policy sees only pods that carry the opt-in label, with any value, before or after the change:
 * the runtime reads records only on pods labelled "true" (lib/runtime/share.ts), and a pod holding an
 * allocation cannot lose the label, so records on any other pod count for nothing. Every other pod in
 * the cluster is spared the CEL evaluation (and its conversion of the pod) on each create and each
 * status update.
 */
import { KubeObject } from '../../k8s/object';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, GPU_IDS_ANNOTATION, PLACEMENT_ANNOTATIONS, SHARE_ANNOTATION } from '../../model/keys';
import { CONTROLLER_NAMES } from '../../contract/names';
import { ResolvedControllerProps } from './props';
import { WEBHOOK_EXCLUDED_NAMESPACES } from './webhook';

const API_VERSION = 'admissionregistration.k8s.io/v1';

/** Pod annotations that only the controller may write after the pod is created. */
export const PROTECTED_ANNOTATIONS: readonly string[] = [ALLOCATION_ANNOTATION, GPU_IDS_ANNOTATION, SHARE_ANNOTATION, ...Object.values(PLACEMENT_ANNOTATIONS)];

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

type Side = 'object' | 'oldObject';
type Field = 'annotations' | 'labels';

/** A CEL string literal of one of our own keys or names: a quote inside one would break it. */
export function literal(key: string): string {
  if (!/^[a-z0-9.:/-]+$/.test(key)) throw new Error(`not a plain key or name: ${key}`);
  return `'${key}'`;
}

/** `key` is present in the map (has() first: a pod without any annotations has no such field). */
function present(side: Side, field: Field, key: string): string {
  return `(has(${side}.metadata.${field}) && ${literal(key)} in ${side}.metadata.${field})`;
}

function value(side: Side, field: Field, key: string): string {
  return `${side}.metadata.${field}[${literal(key)}]`;
}

/** Present on both sides with one value, or absent on both. */
function unchanged(field: Field, key: string): string {
  return `(${present('object', field, key)} == ${present('oldObject', field, key)} && (!${present('object', field, key)} || ${value('object', field, key)} == ${value('oldObject', field, key)}))`;
}

/**
 * The policy's checks. Each starts with the operation it applies to: oldObject is null on CREATE,
 * and CEL's `||` is true as soon as one side is, so nothing is read from a null object.
 */
export function integrityValidations(namespace: string): PolicyValidation[] {
  const who = `only the tensor-fusion controller (${controllerUser(namespace)}) may`;
  const skipped = [...WEBHOOK_EXCLUDED_NAMESPACES, namespace];
  const carriesShare = `(${present('object', 'annotations', SHARE_ANNOTATION)} || ${present('object', 'annotations', ALLOCATION_ANNOTATION)})`;
  const forbidden = (expression: string, message: string): PolicyValidation => ({ expression, message, reason: 'Forbidden' });
  return [
    ...PROTECTED_ANNOTATIONS.map((key) => forbidden(
      `request.operation != 'UPDATE' || ${unchanged('annotations', key)}`,
      `the pod annotation ${key} may not be added, changed or removed: ${who}`,
    )),
    forbidden(
      `request.operation != 'UPDATE' || !${present('oldObject', 'annotations', ALLOCATION_ANNOTATION)} || !${present('oldObject', 'labels', ENABLED_LABEL)} || ` +
        `(${present('object', 'labels', ENABLED_LABEL)} && ${value('object', 'labels', ENABLED_LABEL)} == ${value('oldObject', 'labels', ENABLED_LABEL)})`,
      `the label ${ENABLED_LABEL} may not be removed or changed on a pod that holds a GPU allocation (${ALLOCATION_ANNOTATION}): ${who}; delete the pod to release its share`,
    ),
    // The webhook sees only pods labelled "true", outside the namespaces it skips; anywhere else these
    // annotations would reach the scheduler extender without the webhook's validation. (A pod without
    // the label is not matched: the runtime ignores its records.)
    forbidden(
      `request.operation != 'CREATE' || !${carriesShare} || (${present('object', 'labels', ENABLED_LABEL)} && ${value('object', 'labels', ENABLED_LABEL)} == 'true')`,
      `a pod with ${SHARE_ANNOTATION} or ${ALLOCATION_ANNOTATION} must be labelled ${ENABLED_LABEL}: "true" so that the tensor-fusion webhook resolves its share; otherwise ${who} set them`,
    ),
    forbidden(
      `request.operation != 'CREATE' || !${carriesShare} || !(request.namespace in [${skipped.map(literal).join(', ')}])`,
      `pods in ${skipped.join(' and ')} are not seen by the tensor-fusion webhook and may not carry ${SHARE_ANNOTATION} or ${ALLOCATION_ANNOTATION}: ${who} set them`,
    ),
  ];
}

/** The ValidatingAdmissionPolicy and its binding (Deny). */
export function renderIntegrityPolicy(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const name = CONTROLLER_NAMES.integrityPolicy;
  const policy: KubeObject = {
    apiVersion: API_VERSION,
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels },
    spec: {
      // Ignore would let through, on any evaluation error, exactly the changes this policy refuses.
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{
          apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'],
          // Labels and annotations can be changed through pods/status as well.
          resources: ['pods', 'pods/status'],
        }],
        // Matched when the old or the new pod has the label (any value), as the API server reads it.
        objectSelector: { matchExpressions: [{ key: ENABLED_LABEL, operator: 'Exists' }] },
      },
      matchConditions: [{ name: 'not-the-controller', expression: `request.userInfo.username != ${literal(controllerUser(props.namespace))}` }],
      validations: integrityValidations(props.namespace),
    },
  };
  const binding: KubeObject = {
    apiVersion: API_VERSION,
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, labels },
    spec: { policyName: name, validationActions: ['Deny'] },
  };
  return [policy, binding];
}

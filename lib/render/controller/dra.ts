/**
 * What GpuPools with `shareDelivery: DRA` need from the install (the `dra` prop): the DeviceClass
 * that names the node agent's devices, the RBAC of the agent (its ResourceSlices, the claims it
 * prepares) and of the webhook (the templates it ensures), and the policies that keep every claim of
 * the class coming from a template the webhook made. A claim or template made by hand would take a
 * share that no quota counted and no QoS ordered, so the API server refuses both; a pod may name one of
 * our templates only when the webhook admitted it with a share.
 */
import { KubeObject } from '../../k8s/object';
import { DRA_API_VERSION, DRA_DEVICE_CLASS, DRA_DRIVER, DRA_TEMPLATE_HASH_DIGITS, DRA_TEMPLATE_PREFIX } from '../../model/dra';
import { ENABLED_LABEL, SHARE_ANNOTATION } from '../../model/metadata-keys';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import { controllerUser, deniedByPolicy, literal, PolicyValidation, present } from './integrity';
import { agentNamespace, AGENT_NAMES } from './agent';
import type { PolicyRule } from './rbac';
import type { ResolvedControllerProps } from './props';

const RESOURCE_GROUP = 'resource.k8s.io';
const RBAC = 'rbac.authorization.k8s.io/v1';
const RBAC_GROUP = 'rbac.authorization.k8s.io';

/** Names of the DRA objects of the install. */
export const DRA_NAMES = {
  /** ClusterRole(Binding) of the node agent's DRA side. */
  agentRole: `${AGENT_NAMES.agent}-dra`,
  /** ClusterRole(Binding) of the controller's DRA side (the webhook's templates). */
  controllerRole: `${CONTROLLER_NAMES.controller}-dra`,
  /** ValidatingAdmissionPolicy (and binding): templates of our class only from the webhook. */
  templatePolicy: 'tensor-fusion-dra-claim-templates',
  /** ValidatingAdmissionPolicy (and binding): claims of our class only from the resourceclaim controller. */
  claimPolicy: 'tensor-fusion-dra-claims',
  /** ValidatingAdmissionPolicy (and binding): pods name our templates only when the webhook gave them a share. */
  podPolicy: 'tensor-fusion-dra-pods',
} as const;

/**
 * The users kube-controller-manager's resourceclaim controller writes claims as: its own
 * ServiceAccount (`--use-service-account-credentials`, as kubeadm and most distributions run it) or
 * kube-controller-manager's own identity.
 */
export const CLAIM_CONTROLLER_USERS = [
  'system:serviceaccount:kube-system:resource-claim-controller',
  'system:kube-controller-manager',
] as const;

/** The agent's rules: it publishes its node's ResourceSlice and reads the claims and pods it prepares. */
export const AGENT_DRA_RULES: readonly PolicyRule[] = [
  { apiGroups: [RESOURCE_GROUP], resources: ['resourceslices'], verbs: ['create', 'update', 'patch', 'delete', 'get', 'list', 'watch'] },
  { apiGroups: [RESOURCE_GROUP], resources: ['resourceclaims'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
];

/**
 * The controller's rules: the webhook ensures a pod's template before it admits the pod; the GPU
 * status (its claims cache), the extender and the pool view read claims (what kube-scheduler
 * allocated) and slices (what a node offers).
 */
export const CONTROLLER_DRA_RULES: readonly PolicyRule[] = [
  { apiGroups: [RESOURCE_GROUP], resources: ['resourceclaimtemplates'], verbs: ['get', 'create'] },
  { apiGroups: [RESOURCE_GROUP], resources: ['resourceclaims', 'resourceslices'], verbs: ['get', 'list', 'watch'] },
];

/** CEL: the claim spec at `spec` asks our DeviceClass in any request or subrequest. */
function asksOurClass(spec: string): string {
  const cls = literal(DRA_DEVICE_CLASS);
  return (
    `has(${spec}.devices) && has(${spec}.devices.requests) && ${spec}.devices.requests.exists(r, ` +
    `(has(r.exactly) && r.exactly.deviceClassName == ${cls}) || ` +
    `(has(r.firstAvailable) && r.firstAvailable.exists(s, s.deviceClassName == ${cls})))`
  );
}

/** The template policy's check: a template of our class is the webhook's. */
export function claimTemplateValidations(namespace: string): PolicyValidation[] {
  const webhook = controllerUser(namespace);
  return [
    {
      expression: `request.userInfo.username == ${literal(webhook)} || !(${asksOurClass('object.spec.spec')})`,
      message:
        `a ResourceClaimTemplate for the DeviceClass ${DRA_DEVICE_CLASS} may be written only by the tensor-fusion webhook (${webhook}), ` +
        `which makes one from a pod's GPU annotations: label the pod ${ENABLED_LABEL}: "true" and give it those annotations instead (a hand-made template would bypass GPU quotas and QoS)`,
      reason: 'Forbidden',
    },
  ];
}

/** The claim policy's check: a claim of our class is made by the resourceclaim controller (from one of the webhook's templates). */
export function claimValidations(): PolicyValidation[] {
  const users = `[${CLAIM_CONTROLLER_USERS.map(literal).join(', ')}]`;
  return [
    {
      expression: `request.userInfo.username in ${users} || !(${asksOurClass('object.spec')})`,
      message:
        `a ResourceClaim for the DeviceClass ${DRA_DEVICE_CLASS} may be created only by kube-controller-manager's resourceclaim controller, ` +
        `for a pod the tensor-fusion webhook gave a template: label the pod ${ENABLED_LABEL}: "true" and give it GPU annotations instead (a hand-made claim would bypass GPU quotas and QoS)`,
      reason: 'Forbidden',
    },
  ];
}

/** CEL: the pod names one of our templates (`tf-<12 hex>`). */
const NAMES_OUR_TEMPLATE =
  `has(object.spec.resourceClaims) && object.spec.resourceClaims.exists(c, has(c.resourceClaimTemplateName) && ` +
  `c.resourceClaimTemplateName.matches('^${DRA_TEMPLATE_PREFIX}[0-9a-f]{${DRA_TEMPLATE_HASH_DIGITS}}$'))`;

/** The pod policy's check, on creates: a template the webhook made serves only the pods it admitted with a share. */
export function draPodValidations(): PolicyValidation[] {
  return [
    {
      expression: `!(${NAMES_OUR_TEMPLATE}) || (${present('object', 'labels', ENABLED_LABEL)} && object.metadata.labels[${literal(ENABLED_LABEL)}] == 'true' && ${present('object', 'annotations', SHARE_ANNOTATION)})`,
      message: `a pod may name a ResourceClaimTemplate ${DRA_TEMPLATE_PREFIX}<hash> of the DeviceClass ${DRA_DEVICE_CLASS} only when the tensor-fusion webhook admitted it with a GPU share (label ${ENABLED_LABEL}: "true", in a namespace the webhook serves): the webhook names the template itself`,
      reason: 'Forbidden',
    },
  ];
}

function clusterRole(
  name: string,
  labels: Record<string, string>,
  rules: readonly PolicyRule[],
  subject: Record<string, string>,
): KubeObject[] {
  return [
    { apiVersion: RBAC, kind: 'ClusterRole', metadata: { name, labels }, rules: [...rules] },
    {
      apiVersion: RBAC,
      kind: 'ClusterRoleBinding',
      metadata: { name, labels },
      roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name },
      subjects: [subject],
    },
  ];
}

/** The DeviceClass of our driver's devices. */
export function renderDeviceClass(labels: Record<string, string>): KubeObject {
  return {
    apiVersion: DRA_API_VERSION,
    kind: 'DeviceClass',
    metadata: { name: DRA_DEVICE_CLASS, labels },
    spec: { selectors: [{ cel: { expression: `device.driver == ${JSON.stringify(DRA_DRIVER)}` } }] },
  };
}

/** The RBAC objects (the agent's only when it runs). */
export function renderDraRbac(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const { namespace } = props;
  return [
    ...clusterRole(DRA_NAMES.controllerRole, labels, CONTROLLER_DRA_RULES, {
      kind: 'ServiceAccount',
      name: CONTROLLER_NAMES.controller,
      namespace,
    }),
    ...(props.nodeAgent
      ? clusterRole(DRA_NAMES.agentRole, labels, AGENT_DRA_RULES, {
          kind: 'ServiceAccount',
          name: AGENT_NAMES.agent,
          namespace: agentNamespace(props),
        })
      : []),
  ];
}

/** The three policies and their bindings (Deny). */
export function renderDraPolicies(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  const rule = (resources: string[], operations: string[], group = RESOURCE_GROUP, version = 'v1') => ({
    resourceRules: [{ apiGroups: [group], apiVersions: [version], operations, resources }],
  });
  return [
    ...deniedByPolicy(DRA_NAMES.templatePolicy, labels, {
      matchConstraints: rule(['resourceclaimtemplates'], ['CREATE', 'UPDATE']),
      validations: claimTemplateValidations(props.namespace),
    }),
    // A claim's spec is immutable: its create is the only write that matters.
    ...deniedByPolicy(DRA_NAMES.claimPolicy, labels, {
      matchConstraints: rule(['resourceclaims'], ['CREATE']),
      validations: claimValidations(),
    }),
    ...deniedByPolicy(DRA_NAMES.podPolicy, labels, {
      matchConstraints: rule(['pods'], ['CREATE'], '', 'v1'),
      validations: draPodValidations(),
    }),
  ];
}

import {
  ALLOCATION_ANNOTATION,
  ENABLED_LABEL,
  GPU_IDS_ANNOTATION,
  PLACEMENT_ANNOTATIONS,
  SHARE_ANNOTATION,
} from '../../../lib/model/metadata-keys';
import {
  bindingValidations,
  controllerUser,
  integrityValidations,
  PROTECTED_ANNOTATIONS,
  recordValidations,
  renderController,
  shareResourceValidations,
} from '../../../lib/render/controller';
import { validateAll } from '../../support/validate-k8s';
import { FAKE_BUNDLE, find, Json } from './fixtures';

const render = (namespace?: string) => renderController(namespace ? { namespace } : {}, FAKE_BUNDLE);
const USER = 'system:serviceaccount:tensor-fusion-system:tensor-fusion-controller';
const has = (side: string, field: string, key: string) => `(has(${side}.metadata.${field}) && '${key}' in ${side}.metadata.${field})`;

const BY = 'variables.byController || ';
const POLICIES = ['tensor-fusion-pod-integrity', 'tensor-fusion-pod-records', 'tensor-fusion-pod-bindings'];

describe('pod integrity policies', () => {
  it('are valid ValidatingAdmissionPolicies bound with Deny: updates of pods with the label; creates of opted-in pods only where the webhook does not look; every Binding', () => {
    const objects = render();
    const integrity = find(objects, 'ValidatingAdmissionPolicy', 'tensor-fusion-pod-integrity') as Json;
    const records = find(objects, 'ValidatingAdmissionPolicy', 'tensor-fusion-pod-records') as Json;
    const binds = find(objects, 'ValidatingAdmissionPolicy', 'tensor-fusion-pod-bindings') as Json;
    const bindings = POLICIES.map((n) => find(objects, 'ValidatingAdmissionPolicyBinding', n) as Json);
    expect(() => validateAll([integrity, records, binds, ...bindings])).not.toThrow();
    for (const policy of [integrity, records, binds]) {
      expect(policy.apiVersion).toBe('admissionregistration.k8s.io/v1');
      expect(policy.spec.failurePolicy).toBe('Fail');
      expect(policy.spec.matchConditions).toBeUndefined();
    }
    expect(integrity.spec.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods', 'pods/status'] }],
      objectSelector: { matchExpressions: [{ key: ENABLED_LABEL, operator: 'Exists' }] },
    });
    expect(records.spec.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
      namespaceSelector: {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['kube-system', 'tensor-fusion-system'] }],
      },
      objectSelector: { matchExpressions: [{ key: ENABLED_LABEL, operator: 'In', values: ['true'] }] },
    });
    // Both ways to create a Binding: the pod's subresource and the older namespaced collection.
    expect(binds.spec.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods/binding', 'bindings'] }],
    });
    expect(bindings.map((b) => b.spec)).toEqual(POLICIES.map((policyName) => ({ policyName, validationActions: ['Deny'] })));
    for (const o of [integrity, records, binds, ...bindings]) expect(o.metadata.namespace).toBeUndefined();
  });

  it.each(['tensor-fusion-system', 'gpu-system'])(
    "exempt the controller's ServiceAccount in %s, and no one else, in every check (a variable, not a matchCondition)",
    (namespace) => {
      const objects = render(namespace);
      expect(controllerUser(namespace)).toBe(`system:serviceaccount:${namespace}:tensor-fusion-controller`);
      for (const name of POLICIES) {
        const policy = find(objects, 'ValidatingAdmissionPolicy', name) as Json;
        expect(policy.spec.variables).toEqual([
          { name: 'byController', expression: `request.userInfo.username == '${controllerUser(namespace)}'` },
        ]);
        for (const v of policy.spec.validations) expect(v.expression.startsWith(BY)).toBe(true);
      }
      const serviceAccount = find(objects, 'ServiceAccount', 'tensor-fusion-controller');
      expect(`system:serviceaccount:${serviceAccount.metadata.namespace}:${serviceAccount.metadata.name}`).toBe(controllerUser(namespace));
    },
  );

  it('protect the allocation, GPU ids, share and every placement annotation', () => {
    expect([...PROTECTED_ANNOTATIONS].sort()).toEqual(
      [ALLOCATION_ANNOTATION, GPU_IDS_ANNOTATION, SHARE_ANNOTATION, ...Object.values(PLACEMENT_ANNOTATIONS)].sort(),
    );
    expect(PROTECTED_ANNOTATIONS).toHaveLength(7);
  });

  it('refuse on update any add, change or removal of a protected annotation, naming the key and who may change it', () => {
    const validations = integrityValidations('tensor-fusion-system');
    for (const key of PROTECTED_ANNOTATIONS) {
      const [v] = validations.filter((x) => x.message.includes(`annotation ${key} `));
      expect(v).toEqual({
        expression:
          `${BY}(${has('object', 'annotations', key)} == ${has('oldObject', 'annotations', key)} && ` +
          `(!${has('object', 'annotations', key)} || object.metadata.annotations['${key}'] == oldObject.metadata.annotations['${key}']))`,
        message: `the pod annotation ${key} may not be added, changed or removed: only the tensor-fusion controller (${USER}) may`,
        reason: 'Forbidden',
      });
    }
  });

  it('refuse removing or changing the opt-in label of a pod that holds an allocation or waits for one', () => {
    const [v] = integrityValidations('tensor-fusion-system').filter((x) =>
      x.message.startsWith(`the label ${ENABLED_LABEL} may not be removed`),
    );
    expect(v.expression).toBe(
      `${BY}!(${has('oldObject', 'annotations', ALLOCATION_ANNOTATION)} || ${has('oldObject', 'annotations', SHARE_ANNOTATION)}) || !${has('oldObject', 'labels', ENABLED_LABEL)} || ` +
        `(${has('object', 'labels', ENABLED_LABEL)} && object.metadata.labels['${ENABLED_LABEL}'] == oldObject.metadata.labels['${ENABLED_LABEL}'])`,
    );
    expect(v.message).toBe(
      `the label ${ENABLED_LABEL} may not be removed or changed on a pod that holds a GPU allocation (${ALLOCATION_ANNOTATION}) or waits for one (${SHARE_ANNOTATION}): only the tensor-fusion controller (${USER}) may; delete the pod to release its share`,
    );
  });

  it('refuse opting in, after creation, a pod that carries any placement annotation (no webhook resolved it)', () => {
    const [v] = integrityValidations('tensor-fusion-system').filter((x) =>
      x.message.startsWith(`the label ${ENABLED_LABEL}: "true" may not be added`),
    );
    const optedIn = (side: string) => `(${has(side, 'labels', ENABLED_LABEL)} && ${side}.metadata.labels['${ENABLED_LABEL}'] == 'true')`;
    expect(v.expression).toBe(
      `${BY}${optedIn('oldObject')} || !${optedIn('object')} || !(${PROTECTED_ANNOTATIONS.map((k) => has('object', 'annotations', k)).join(' || ')})`,
    );
    expect(v.message).toBe(
      `the label ${ENABLED_LABEL}: "true" may not be added to a pod that carries any of the annotations ${PROTECTED_ANNOTATIONS.join(', ')}: the webhook resolves a share only when a pod is created; create the pod with the label`,
    );
  });

  it('refuse on create a share or allocation in a namespace the webhook skips', () => {
    expect(recordValidations('gpu-system')).toEqual([
      {
        expression: `${BY}!(${has('object', 'annotations', SHARE_ANNOTATION)} || ${has('object', 'annotations', ALLOCATION_ANNOTATION)})`,
        message: `pods in kube-system and gpu-system are not seen by the tensor-fusion webhook and may not carry ${SHARE_ANNOTATION} or ${ALLOCATION_ANNOTATION}: only the tensor-fusion controller (system:serviceaccount:gpu-system:tensor-fusion-controller) may set them`,
        reason: 'Forbidden',
      },
    ]);
  });

  it('refuse a Binding that would copy a protected annotation or the opt-in label onto the pod', () => {
    expect(bindingValidations('gpu-system')).toEqual([
      {
        expression: `${BY}!(${PROTECTED_ANNOTATIONS.map((k) => has('object', 'annotations', k)).join(' || ')})`,
        message:
          `a Binding may not carry the annotations ${PROTECTED_ANNOTATIONS.join(', ')}, which it would copy onto the pod: ` +
          'only the tensor-fusion controller (system:serviceaccount:gpu-system:tensor-fusion-controller) may bind with them, when its scheduler extender places a GPU share',
        reason: 'Forbidden',
      },
      {
        expression: `${BY}!${has('object', 'labels', ENABLED_LABEL)}`,
        message: `a Binding may not carry the label ${ENABLED_LABEL}, which it would copy onto the pod: set it on the pod, where the integrity policy checks it`,
        reason: 'Forbidden',
      },
    ]);
  });

  it('read a map only after has() on it (a pod or Binding without labels or annotations is no error)', () => {
    const validations = [
      ...integrityValidations('tensor-fusion-system'),
      ...recordValidations('tensor-fusion-system'),
      ...bindingValidations('tensor-fusion-system'),
    ];
    expect(validations).toHaveLength(PROTECTED_ANNOTATIONS.length + 5);
    for (const v of validations) {
      for (const m of v.expression.matchAll(/(object|oldObject)\.metadata\.(labels|annotations)\[/g)) {
        expect(v.expression).toContain(`has(${m[1]}.metadata.${m[2]})`);
      }
    }
  });

  it('refuse on every pod create, with no exemption, a container or init container asking for the share resource unless the webhook recorded a share', () => {
    const policy = find(render('gpu-system'), 'ValidatingAdmissionPolicy', 'tensor-fusion-share-resource') as Json;
    const binding = find(render('gpu-system'), 'ValidatingAdmissionPolicyBinding', 'tensor-fusion-share-resource') as Json;
    expect(() => validateAll([policy, binding])).not.toThrow();
    expect(binding.spec).toEqual({ policyName: 'tensor-fusion-share-resource', validationActions: ['Deny'] });
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
    });
    const asks =
      "has(c.resources) && ((has(c.resources.requests) && 'tensor-fusion.ai/share' in c.resources.requests) || (has(c.resources.limits) && 'tensor-fusion.ai/share' in c.resources.limits))";
    expect(policy.spec.variables).toEqual([
      {
        name: 'asksShare',
        expression: `object.spec.containers.exists(c, ${asks}) || (has(object.spec.initContainers) && object.spec.initContainers.exists(c, ${asks}))`,
      },
    ]);
    expect(policy.spec.validations).toEqual(shareResourceValidations());
    expect(shareResourceValidations()).toEqual([
      {
        expression: `!variables.asksShare || (${has('object', 'labels', ENABLED_LABEL)} && object.metadata.labels['${ENABLED_LABEL}'] == 'true' && ${has('object', 'annotations', SHARE_ANNOTATION)})`,
        message:
          'a container may request tensor-fusion.ai/share only in a pod the tensor-fusion webhook admitted with a GPU share (label tensor-fusion.ai/enabled: "true", in a namespace the webhook serves): the webhook gives it to the containers that hold the pod\'s share',
        reason: 'Forbidden',
      },
    ]);
  });
});

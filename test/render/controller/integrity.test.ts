import { ALLOCATION_ANNOTATION, ENABLED_LABEL, GPU_IDS_ANNOTATION, PLACEMENT_ANNOTATIONS, SHARE_ANNOTATION } from '../../../lib/model/keys';
import { controllerUser, integrityValidations, PROTECTED_ANNOTATIONS, renderController } from '../../../lib/render/controller';
import { validateAll } from '../../support/validate-k8s';
import { FAKE_BUNDLE, find, Json } from './fixtures';

const render = (namespace?: string) => renderController(namespace ? { namespace } : {}, FAKE_BUNDLE);
const USER = 'system:serviceaccount:tensor-fusion-system:tensor-fusion-controller';
const has = (side: string, field: string, key: string) => `(has(${side}.metadata.${field}) && '${key}' in ${side}.metadata.${field})`;

describe('pod integrity policy', () => {
  it('is a valid ValidatingAdmissionPolicy on create and update (pods and pods/status) of pods with the opt-in label, bound with Deny', () => {
    const objects = render();
    const policy = find(objects, 'ValidatingAdmissionPolicy', 'tensor-fusion-pod-integrity') as Json;
    const binding = find(objects, 'ValidatingAdmissionPolicyBinding', 'tensor-fusion-pod-integrity') as Json;
    expect(() => validateAll([policy, binding])).not.toThrow();
    expect(policy.apiVersion).toBe('admissionregistration.k8s.io/v1');
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods', 'pods/status'] }],
      objectSelector: { matchExpressions: [{ key: ENABLED_LABEL, operator: 'Exists' }] },
    });
    expect(binding.spec).toEqual({ policyName: 'tensor-fusion-pod-integrity', validationActions: ['Deny'] });
    for (const o of [policy, binding]) expect(o.metadata.namespace).toBeUndefined();
  });

  it.each(['tensor-fusion-system', 'gpu-system'])('exempts the controller\'s ServiceAccount in %s, and no one else', (namespace) => {
    const policy = find(render(namespace), 'ValidatingAdmissionPolicy', 'tensor-fusion-pod-integrity') as Json;
    expect(controllerUser(namespace)).toBe(`system:serviceaccount:${namespace}:tensor-fusion-controller`);
    expect(policy.spec.matchConditions).toEqual([{ name: 'not-the-controller', expression: `request.userInfo.username != '${controllerUser(namespace)}'` }]);
    const serviceAccount = find(render(namespace), 'ServiceAccount');
    expect(`system:serviceaccount:${serviceAccount.metadata.namespace}:${serviceAccount.metadata.name}`).toBe(controllerUser(namespace));
  });

  it('protects the allocation, GPU ids, share and every placement annotation', () => {
    expect([...PROTECTED_ANNOTATIONS].sort()).toEqual([ALLOCATION_ANNOTATION, GPU_IDS_ANNOTATION, SHARE_ANNOTATION, ...Object.values(PLACEMENT_ANNOTATIONS)].sort());
    expect(PROTECTED_ANNOTATIONS).toHaveLength(7);
  });

  it('refuses on update any add, change or removal of a protected annotation, naming the key and who may change it', () => {
    const validations = integrityValidations('tensor-fusion-system');
    for (const key of PROTECTED_ANNOTATIONS) {
      const [v] = validations.filter((x) => x.message.includes(`annotation ${key} `));
      expect(v).toEqual({
        expression: `request.operation != 'UPDATE' || (${has('object', 'annotations', key)} == ${has('oldObject', 'annotations', key)} && ` +
          `(!${has('object', 'annotations', key)} || object.metadata.annotations['${key}'] == oldObject.metadata.annotations['${key}']))`,
        message: `the pod annotation ${key} may not be added, changed or removed: only the tensor-fusion controller (${USER}) may`,
        reason: 'Forbidden',
      });
    }
  });

  it('refuses removing or changing the opt-in label of a pod that holds an allocation', () => {
    const [v] = integrityValidations('tensor-fusion-system').filter((x) => x.message.startsWith(`the label ${ENABLED_LABEL}`));
    expect(v.expression).toBe(
      `request.operation != 'UPDATE' || !${has('oldObject', 'annotations', ALLOCATION_ANNOTATION)} || !${has('oldObject', 'labels', ENABLED_LABEL)} || ` +
        `(${has('object', 'labels', ENABLED_LABEL)} && object.metadata.labels['${ENABLED_LABEL}'] == oldObject.metadata.labels['${ENABLED_LABEL}'])`,
    );
    expect(v.message).toBe(`the label ${ENABLED_LABEL} may not be removed or changed on a pod that holds a GPU allocation (${ALLOCATION_ANNOTATION}): only the tensor-fusion controller (${USER}) may; delete the pod to release its share`);
  });

  it('refuses on create a share or allocation the webhook would not see: without the label "true", or in a namespace it skips', () => {
    const validations = integrityValidations('gpu-system');
    const creates = validations.filter((x) => x.expression.startsWith("request.operation != 'CREATE'"));
    const carries = `(${has('object', 'annotations', SHARE_ANNOTATION)} || ${has('object', 'annotations', ALLOCATION_ANNOTATION)})`;
    expect(creates.map((x) => x.expression)).toEqual([
      `request.operation != 'CREATE' || !${carries} || (${has('object', 'labels', ENABLED_LABEL)} && object.metadata.labels['${ENABLED_LABEL}'] == 'true')`,
      `request.operation != 'CREATE' || !${carries} || !(request.namespace in ['kube-system', 'gpu-system'])`,
    ]);
    for (const c of creates) {
      expect(c.message).toContain(SHARE_ANNOTATION);
      expect(c.message).toContain(ALLOCATION_ANNOTATION);
      expect(c.message).toContain('system:serviceaccount:gpu-system:tensor-fusion-controller');
    }
  });

  it('reads oldObject only behind the UPDATE guard (it is null on CREATE)', () => {
    const validations = integrityValidations('tensor-fusion-system');
    expect(validations).toHaveLength(PROTECTED_ANNOTATIONS.length + 3);
    for (const v of validations) {
      if (v.expression.includes('oldObject')) expect(v.expression.startsWith("request.operation != 'UPDATE' || ")).toBe(true);
      // Every map read is preceded by has() on the same map, so a pod without labels or annotations is no error.
      for (const m of v.expression.matchAll(/(object|oldObject)\.metadata\.(labels|annotations)\[/g)) {
        expect(v.expression).toContain(`has(${m[1]}.metadata.${m[2]})`);
      }
    }
  });
});

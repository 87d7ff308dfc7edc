/** The quota status policy: only the controller's ServiceAccount writes the status of GPUResourceQuotas. */
import { CONTROLLER_NAMES, controllerUser, quotaStatusValidations, renderController } from '../../../lib/render/controller';
import { validateAll } from '../../support/validate-k8s';
import { FAKE_BUNDLE, find, Json } from './fixtures';

const NAME = 'tensor-fusion-quota-status';

describe('quota status policy', () => {
  it('is a valid ValidatingAdmissionPolicy bound with Deny, on updates of gpuresourcequotas/status only', () => {
    const objects = renderController({}, FAKE_BUNDLE);
    expect(CONTROLLER_NAMES.quotaStatusPolicy).toBe(NAME);
    const policy = find(objects, 'ValidatingAdmissionPolicy', NAME) as Json;
    const binding = find(objects, 'ValidatingAdmissionPolicyBinding', NAME) as Json;
    expect(() => validateAll([policy, binding])).not.toThrow();
    expect(policy.apiVersion).toBe('admissionregistration.k8s.io/v1');
    expect(policy.spec.failurePolicy).toBe('Fail');
    // PATCH and apply reach admission as UPDATE; creates and updates of the object itself drop the status.
    expect(policy.spec.matchConstraints).toEqual({
      resourceRules: [
        { apiGroups: ['tensor-fusion.ai'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['gpuresourcequotas/status'] },
      ],
    });
    expect(binding.spec).toEqual({ policyName: NAME, validationActions: ['Deny'] });
    for (const o of [policy, binding]) expect(o.metadata.namespace).toBeUndefined();
  });

  it.each(['tensor-fusion-system', 'gpu-system'])(
    "admits the controller's ServiceAccount in %s and no one else, saying who may write and what to change instead",
    (namespace) => {
      const policy = find(renderController({ namespace }, FAKE_BUNDLE), 'ValidatingAdmissionPolicy', NAME) as Json;
      expect(policy.spec.validations).toEqual(quotaStatusValidations(namespace));
      expect(quotaStatusValidations(namespace)).toEqual([
        {
          expression: `request.userInfo.username == '${controllerUser(namespace)}'`,
          message:
            `the status of a GPUResourceQuota may be written only by the tensor-fusion controller (system:serviceaccount:${namespace}:tensor-fusion-controller), ` +
            'which counts what the GPU pods of its namespace use: change spec.total or spec.single instead',
          reason: 'Forbidden',
        },
      ]);
    },
  );
});

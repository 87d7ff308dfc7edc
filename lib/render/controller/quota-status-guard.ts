/**
 * The quota status guard: a GPUResourceQuota's status is what its namespace uses, counted by the
 * controller; a namespace's users edit pods and often may edit the quotas of their namespace too, and
 * a status they wrote would read as room that is not there (or an alert that is not true). This
 * ValidatingAdmissionPolicy refuses every write to `gpuresourcequotas/status` but the controller's.
 * The status subresource is the only way to the status: the API server ignores it in creates and in
 * updates of the object itself.
 */
import { KubeObject } from '../../k8s/object';
import { GROUP, VERSION } from '../../model/group';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import { KINDS } from '../../api/kinds';
import { controllerUser, deniedByPolicy, literal, PolicyValidation } from './integrity';
import { ResolvedControllerProps } from './props';

/** The status subresource the policy guards. */
const QUOTA_STATUS = `${KINDS.GPUResourceQuota.plural}/status`;

/** The policy's one check: the writer is the controller's ServiceAccount. */
export function quotaStatusValidations(namespace: string): PolicyValidation[] {
  return [
    {
      expression: `request.userInfo.username == ${literal(controllerUser(namespace))}`,
      message:
        `the status of a GPUResourceQuota may be written only by the tensor-fusion controller (${controllerUser(namespace)}), ` +
        'which counts what the GPU pods of its namespace use: change spec.total or spec.single instead',
      reason: 'Forbidden',
    },
  ];
}

/** The policy and its binding (Deny). */
export function renderQuotaStatusPolicy(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject[] {
  return deniedByPolicy(CONTROLLER_NAMES.quotaStatusPolicy, labels, {
    // PATCH and server-side apply reach admission as UPDATE.
    matchConstraints: {
      resourceRules: [{ apiGroups: [GROUP], apiVersions: [VERSION], operations: ['UPDATE'], resources: [QUOTA_STATUS] }],
    },
    validations: quotaStatusValidations(props.namespace),
  });
}

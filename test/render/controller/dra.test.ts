/** The install's DRA objects (`dra`): the DeviceClass, the RBAC of the agent and the webhook, the policies on claims, templates and pods. */
import {
  AGENT_DRA_RULES,
  claimTemplateValidations,
  claimValidations,
  CONTROLLER_DRA_RULES,
  controllerUser,
  draPodValidations,
  DRA_NAMES,
  renderController,
} from '../../../lib/render/controller';
import type { KubeObject } from '../../../lib/k8s/object';
import { validateAll } from '../../support/validate-k8s';
import { FAKE_BUNDLE, find, Json } from './fixtures';

const draObjects = (objects: readonly KubeObject[]) =>
  objects.filter((o) => o.apiVersion.startsWith('resource.k8s.io') || Object.values(DRA_NAMES).includes(o.metadata.name as never));

describe('DRA install', () => {
  it('renders nothing of DRA unless asked (older clusters serve no DeviceClass)', () => {
    expect(draObjects(renderController({}, FAKE_BUNDLE))).toEqual([]);
    expect(() => renderController({ dra: 'yes' as never }, FAKE_BUNDLE)).toThrow(
      new Error('TensorFusionController: dra: got "yes", expected true or false'),
    );
  });

  it('tells the controller process, which watches ResourceClaims only then (DRA), whether the install has DRA', () => {
    const env = (objects: readonly KubeObject[]) =>
      (find(objects, 'Deployment', 'tensor-fusion-controller') as Json).spec.template.spec.containers.find(
        (c: Json) => c.name === 'controller',
      ).env;
    expect(env(renderController({}, FAKE_BUNDLE))).toContainEqual({ name: 'DRA', value: 'false' });
    expect(env(renderController({ dra: true }, FAKE_BUNDLE))).toContainEqual({ name: 'DRA', value: 'true' });
  });

  it('installs the DeviceClass of our driver, as the probe ran it', () => {
    const objects = renderController({ dra: true }, FAKE_BUNDLE);
    const cls = find(objects, 'DeviceClass', 'gpu.tensor-fusion.ai') as Json;
    expect(cls.apiVersion).toBe('resource.k8s.io/v1');
    expect(cls.spec).toEqual({ selectors: [{ cel: { expression: 'device.driver == "gpu.tensor-fusion.ai"' } }] });
    // Before the pods that need it, and every other DRA object valid and cluster-scoped.
    expect(objects.indexOf(cls)).toBeLessThan(objects.findIndex((o) => o.kind === 'Deployment'));
    const rest = draObjects(objects).filter((o) => o !== cls);
    expect(rest.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [
        'ClusterRole/tensor-fusion-controller-dra',
        'ClusterRoleBinding/tensor-fusion-controller-dra',
        'ClusterRole/tensor-fusion-node-agent-dra',
        'ClusterRoleBinding/tensor-fusion-node-agent-dra',
        ...['tensor-fusion-dra-claim-templates', 'tensor-fusion-dra-claims', 'tensor-fusion-dra-pods'].flatMap((n) => [
          `ValidatingAdmissionPolicy/${n}`,
          `ValidatingAdmissionPolicyBinding/${n}`,
        ]),
      ].sort(),
    );
    expect(() => validateAll(rest)).not.toThrow();
    for (const o of rest) expect(o.metadata.namespace).toBeUndefined();
  });

  it('grants the agent its slices, the claims it prepares and their pods, and the webhook its templates', () => {
    const objects = renderController({ dra: true, namespace: 'gpu' }, FAKE_BUNDLE);
    expect((find(objects, 'ClusterRole', 'tensor-fusion-node-agent-dra') as Json).rules).toEqual(AGENT_DRA_RULES);
    expect(AGENT_DRA_RULES).toEqual([
      {
        apiGroups: ['resource.k8s.io'],
        resources: ['resourceslices'],
        verbs: ['create', 'update', 'patch', 'delete', 'get', 'list', 'watch'],
      },
      { apiGroups: ['resource.k8s.io'], resources: ['resourceclaims'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    ]);
    expect((find(objects, 'ClusterRoleBinding', 'tensor-fusion-node-agent-dra') as Json).subjects).toEqual([
      { kind: 'ServiceAccount', name: 'tensor-fusion-node-agent', namespace: 'gpu-agent' },
    ]);
    expect((find(objects, 'ClusterRole', 'tensor-fusion-controller-dra') as Json).rules).toEqual(CONTROLLER_DRA_RULES);
    expect(CONTROLLER_DRA_RULES[0]).toEqual({
      apiGroups: ['resource.k8s.io'],
      resources: ['resourceclaimtemplates'],
      verbs: ['get', 'create'],
    });
    expect((find(objects, 'ClusterRoleBinding', 'tensor-fusion-controller-dra') as Json).subjects).toEqual([
      { kind: 'ServiceAccount', name: 'tensor-fusion-controller', namespace: 'gpu' },
    ]);
    const noAgent = renderController({ dra: true, nodeAgent: false }, FAKE_BUNDLE);
    expect(noAgent.some((o) => o.metadata.name === 'tensor-fusion-node-agent-dra')).toBe(false);
  });

  it('refuses templates of our class but the webhook’s, claims but the resourceclaim controller’s, and pods naming our templates without a share', () => {
    const objects = renderController({ dra: true, namespace: 'gpu' }, FAKE_BUNDLE);
    const policy = (name: string) => (find(objects, 'ValidatingAdmissionPolicy', name) as Json).spec;
    expect(policy(DRA_NAMES.templatePolicy)).toMatchObject({
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          { apiGroups: ['resource.k8s.io'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['resourceclaimtemplates'] },
        ],
      },
      validations: claimTemplateValidations('gpu'),
    });
    expect(policy(DRA_NAMES.claimPolicy)).toMatchObject({
      matchConstraints: {
        resourceRules: [{ apiGroups: ['resource.k8s.io'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['resourceclaims'] }],
      },
      validations: claimValidations(),
    });
    expect(policy(DRA_NAMES.podPolicy)).toMatchObject({
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }] },
      validations: draPodValidations(),
    });
    expect(claimTemplateValidations('gpu')[0].expression).toContain(`request.userInfo.username == '${controllerUser('gpu')}' ||`);
    expect(claimTemplateValidations('gpu')[0].message).toBe(
      'a ResourceClaimTemplate for the DeviceClass gpu.tensor-fusion.ai may be written only by the tensor-fusion webhook (system:serviceaccount:gpu:tensor-fusion-controller), ' +
        'which makes one from a pod\'s GPU annotations: label the pod tensor-fusion.ai/enabled: "true" and give it those annotations instead (a hand-made template would bypass GPU quotas and QoS)',
    );
    expect(claimValidations()[0].expression).toMatch(
      /^request\.userInfo\.username in \['system:serviceaccount:kube-system:resource-claim-controller', 'system:kube-controller-manager'\] \|\| /,
    );
    expect(claimValidations()[0].message).toBe(
      "a ResourceClaim for the DeviceClass gpu.tensor-fusion.ai may be created only by kube-controller-manager's resourceclaim controller, " +
        'for a pod the tensor-fusion webhook gave a template: label the pod tensor-fusion.ai/enabled: "true" and give it GPU annotations instead (a hand-made claim would bypass GPU quotas and QoS)',
    );
    expect(draPodValidations()[0].message).toBe(
      'a pod may name a ResourceClaimTemplate tf-<hash> of the DeviceClass gpu.tensor-fusion.ai only when the tensor-fusion webhook admitted it with a GPU share ' +
        '(label tensor-fusion.ai/enabled: "true", in a namespace the webhook serves): the webhook names the template itself',
    );
    for (const name of [DRA_NAMES.templatePolicy, DRA_NAMES.claimPolicy, DRA_NAMES.podPolicy]) {
      expect((find(objects, 'ValidatingAdmissionPolicyBinding', name) as Json).spec).toEqual({
        policyName: name,
        validationActions: ['Deny'],
      });
    }
  });
});

import { KubeObject } from '../../../lib/k8s/object';
import { renderController, TensorFusionControllerProps } from '../../../lib/render/controller';
import { controllerObjects, FAKE_BUNDLE, find, Json, MODES, podSpec } from './fixtures';
import { restrictedViolations } from './restricted';

/** The controller's objects: the node agent is privileged by design and checked in agent.test.ts. */
const render = (props: TensorFusionControllerProps) => controllerObjects(renderController(props, FAKE_BUNDLE));
const ALL_MODES = Object.entries(MODES).map(([name, props]) => [name, render(props as TensorFusionControllerProps)] as const);
const RBAC_KINDS = ['ClusterRole', 'Role'];
const rulesOf = (objects: readonly KubeObject[], kind: string): Json[] => (find(objects, kind) as Json).rules;

describe('restricted checker', () => {
  it('flags what "restricted" forbids (so that an empty result means something)', () => {
    expect(
      restrictedViolations({
        hostNetwork: true,
        securityContext: { runAsUser: 0 },
        volumes: [{ name: 'host', hostPath: { path: '/' } }],
        containers: [
          {
            name: 'c',
            ports: [{ containerPort: 80, hostPort: 80 }],
            securityContext: { privileged: true, capabilities: { add: ['SYS_ADMIN'] } },
          },
        ],
      }),
    ).toEqual([
      'hostNetwork is set',
      'volume host has type hostPath',
      'pod runAsUser is 0',
      'container c is privileged',
      'container c allows privilege escalation',
      'container c may run as root',
      'container c has seccomp undefined',
      'container c does not drop ALL capabilities',
      'container c adds SYS_ADMIN',
      'container c uses hostPort 80',
    ]);
  });
});

describe.each(ALL_MODES)('security of the %s install', (_, objects) => {
  it('has no RBAC wildcard in any apiGroup, resource, verb or resourceName', () => {
    const rules = objects.filter((o) => RBAC_KINDS.includes(o.kind)).flatMap((o) => (o as Json).rules as Json[]);
    expect(rules.length).toBeGreaterThan(0);
    for (const rule of rules) {
      for (const list of [rule.apiGroups, rule.resources, rule.verbs, rule.resourceNames ?? []]) {
        for (const entry of list) expect(entry).not.toMatch(/\*/);
      }
      expect(rule.nonResourceURLs).toBeUndefined();
      for (const dangerous of ['escalate', 'bind', 'impersonate']) expect(rule.verbs).not.toContain(dangerous);
    }
  });

  it('reaches Secrets only by name in its own namespace, and Leases only in its namespace', () => {
    const clusterRules = rulesOf(objects, 'ClusterRole');
    for (const r of clusterRules) expect(r.resources).not.toEqual(expect.arrayContaining(['secrets']));
    for (const r of clusterRules) expect(r.resources).not.toEqual(expect.arrayContaining(['leases']));
    const secretRules = rulesOf(objects, 'Role').filter((r) => r.resources.includes('secrets'));
    for (const r of secretRules) {
      expect(r.resourceNames).toEqual(['tensor-fusion-webhook-tls']);
      expect(r.verbs).not.toContain('create');
      expect(r.verbs).not.toContain('list');
      expect(r.verbs).not.toContain('watch');
    }
    const webhookRules = clusterRules.filter((r) => r.resources.includes('mutatingwebhookconfigurations'));
    for (const r of webhookRules) expect(r.resourceNames).toEqual(['tensor-fusion-webhook']);
    // The Role lives in the controller's namespace; every binding binds only its ServiceAccount.
    const namespace = find(objects, 'Namespace').metadata.name;
    expect(find(objects, 'Role').metadata.namespace).toBe(namespace);
    const bindings = objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') as Json[];
    expect(bindings).toHaveLength(5);
    for (const b of bindings) expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: 'tensor-fusion-controller', namespace }]);
  });

  it('runs a pod that meets the "restricted" Pod Security Standard, read-only and bounded', () => {
    const spec = podSpec(objects);
    expect(restrictedViolations(spec)).toEqual([]);
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
      expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
      expect(c.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
      expect(c.resources.limits).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
    }
    expect(spec.securityContext.runAsUser).toBeGreaterThan(0);
    expect(find(objects, 'Namespace').metadata.labels).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted' });
  });
});

describe('least privilege by mode', () => {
  it('self-managed: may patch its own webhook configuration and fill its own Secret', () => {
    const objects = render({});
    expect(rulesOf(objects, 'ClusterRole')).toContainEqual({
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['mutatingwebhookconfigurations'],
      verbs: ['get', 'patch'],
      resourceNames: ['tensor-fusion-webhook'],
    });
    expect(rulesOf(objects, 'Role')).toContainEqual({
      apiGroups: [''],
      resources: ['secrets'],
      verbs: ['get', 'update'],
      resourceNames: ['tensor-fusion-webhook-tls'],
    });
  });

  it('cert-manager: no Secret or webhook configuration access at all (cainjector and the kubelet do that)', () => {
    const objects = render({ certificateMode: 'cert-manager' });
    const all = [...rulesOf(objects, 'ClusterRole'), ...rulesOf(objects, 'Role')].flatMap((r) => r.resources as string[]);
    expect(all).not.toContain('secrets');
    expect(all).not.toContain('mutatingwebhookconfigurations');
  });

  it('grants exactly these permissions', () => {
    expect(rulesOf(render({}), 'Role')).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: ['tensor-fusion-controller'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: ['tensor-fusion-scheduler'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'update'], resourceNames: ['tensor-fusion-webhook-tls'] },
    ]);
    expect(rulesOf(render({}), 'ClusterRole')).toEqual([
      { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch', 'create', 'delete'] },
      { apiGroups: [''], resources: ['pods/binding'], verbs: ['create'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      {
        apiGroups: ['tensor-fusion.ai'],
        // GPUResourceQuotas: read only, never created, patched or deleted (users author them).
        resources: ['gpupools', 'gpunodes', 'gpus', 'workloadprofiles', 'tensorfusionworkloads', 'gpuresourcequotas'],
        verbs: ['get', 'list', 'watch'],
      },
      { apiGroups: ['tensor-fusion.ai'], resources: ['gpunodes', 'gpus'], verbs: ['create', 'patch', 'delete'] },
      // Generated workloads are applied; deleted only when orphaned (no owner, no pod).
      { apiGroups: ['tensor-fusion.ai'], resources: ['tensorfusionworkloads'], verbs: ['create', 'patch', 'delete'] },
      // Top owners of pods (a ReplicaSet's Deployment, a Job's CronJob) for the generated workloads' ownerReferences.
      { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] },
      { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get'] },
      // Status is written by PUT only, and never on WorkloadProfiles.
      {
        apiGroups: ['tensor-fusion.ai'],
        resources: ['gpupools/status', 'gpunodes/status', 'gpus/status', 'tensorfusionworkloads/status', 'gpuresourcequotas/status'],
        verbs: ['update'],
      },
      // blockOwnerDeletion on GPUNodes (owner GPUPool), GPUs (owner GPUNode) and worker pods (owner
      // TensorFusionWorkload): OwnerReferencesPermissionEnforcement requires update on the owner's finalizers.
      {
        apiGroups: ['tensor-fusion.ai'],
        resources: ['gpupools/finalizers', 'gpunodes/finalizers', 'tensorfusionworkloads/finalizers'],
        verbs: ['update'],
      },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations'],
        verbs: ['get', 'patch'],
        resourceNames: ['tensor-fusion-webhook'],
      },
    ]);
  });

  it('has no access to ConfigMaps of its own (the allocation ledgers are gone; pods are the record)', () => {
    for (const props of Object.values(MODES)) {
      const objects = render(props as TensorFusionControllerProps);
      const resources = [...rulesOf(objects, 'ClusterRole'), ...rulesOf(objects, 'Role')].flatMap((r) => r.resources as string[]);
      expect(resources).not.toContain('configmaps');
    }
  });

  it('gives the kube-scheduler container exactly what kube-scheduler documents for a second scheduler', () => {
    const objects = render({ namespace: 'gpu-system' });
    const subjects = [{ kind: 'ServiceAccount', name: 'tensor-fusion-controller', namespace: 'gpu-system' }];
    const bindings = (kind: string) =>
      objects
        .filter((o) => o.kind === kind)
        .map((o) => ({
          ...o,
          apiVersion: undefined,
          kind: undefined,
          metadata: { name: o.metadata.name, namespace: o.metadata.namespace },
        }));
    expect(bindings('ClusterRoleBinding')).toEqual([
      {
        metadata: { name: 'tensor-fusion-controller' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tensor-fusion-controller' },
        subjects,
      },
      {
        metadata: { name: 'tensor-fusion-controller-kube-scheduler' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:kube-scheduler' },
        subjects,
      },
      {
        metadata: { name: 'tensor-fusion-controller-volume-scheduler' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:volume-scheduler' },
        subjects,
      },
    ]);
    expect(bindings('RoleBinding')).toEqual([
      {
        metadata: { name: 'tensor-fusion-controller', namespace: 'gpu-system' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tensor-fusion-controller' },
        subjects,
      },
      {
        metadata: { name: 'tensor-fusion-controller-authentication-reader', namespace: 'kube-system' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'extension-apiserver-authentication-reader' },
        subjects,
      },
    ]);
    // Its lock, by name, in the namespace its configuration names; create comes with the controller's own Lease rule.
    const lock = (find(objects, 'ConfigMap', 'tensor-fusion-scheduler-config') as Json).data['config.yaml'] as string;
    expect(lock).toContain('resourceNamespace: gpu-system');
    expect(lock).toContain('resourceName: tensor-fusion-scheduler');
    expect(rulesOf(objects, 'Role')).toContainEqual({
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'update'],
      resourceNames: ['tensor-fusion-scheduler'],
    });
  });
});

/**
 * The rendered RBAC is exactly what the runtime uses: the example install runs on a real control
 * plane with an audit log, is driven through everything it does (inventory and status, the xgn taint,
 * placement and binding, released shares, generated and remote-mode workloads, worker pods created and
 * deleted, GPUs and GPUNodes removed, events created and counted, self-managed TLS, leader election),
 * and the (API group, resource, verb) triples the controller's ServiceAccount requested are compared
 * with the triples its ClusterRole and Role grant. A grant nothing used fails the test (remove it); a
 * request nothing grants fails it too (add it, or stop making it). OwnerReferencesPermissionEnforcement
 * is on, so blockOwnerDeletion writes need their finalizers grants here as on OpenShift.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { API_VERSION, GROUP } from '../../lib/model/group';
import { GFD } from '../../lib/model/metadata-keys';
import {
  CONTROLLER_NAMES,
  controllerClusterRules,
  controllerNamespaceRules,
  PolicyRule,
  resolveControllerProps,
} from '../../lib/render/controller';
import { AuditEvent, describeControlPlane, waitFor } from '../support/control-plane';
import { controllerSuite, installController, kwokNode, type Obj, RunningController, writeYaml } from '../support/e2e';
import { eventually } from '../runtime/fixtures';

const { synth, namespace, user } = controllerSuite(30_000);
const NS = 'ml';

/** `group|resource[/subresource]|verb` of one request. */
function triple(group: string, resource: string, verb: string): string {
  return `${group}|${resource}|${verb}`;
}

/**
 * What the controller's ServiceAccount asked for, from the audit log. Read whole here, stages
 * ResponseStarted included: a watch still open has no ResponseComplete yet.
 */
function requestedTriples(auditLog: string, username: string): string[] {
  const out = new Set<string>();
  for (const line of auditLog.split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as AuditEvent & { stage: string };
    const ref = e.objectRef;
    if (e.user.username !== username || !ref?.resource || e.stage === 'RequestReceived') continue;
    out.add(triple(ref.apiGroup ?? '', ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource, e.verb));
  }
  return [...out].sort();
}

/**
 * Grants the API server checks inside other requests: never requested themselves, so never in the
 * audit log (the test fails if one is, since the reason would then be wrong).
 */
const AUTHORIZED_INSIDE: Record<string, string> = {
  [triple(GROUP, 'gpunodes', 'create')]: 'server-side apply that creates a GPUNode is authorized as create too',
  [triple(GROUP, 'gpus', 'create')]: 'server-side apply that creates a GPU is authorized as create too',
  [triple(GROUP, 'tensorfusionworkloads', 'create')]: 'server-side apply that creates a generated workload is authorized as create too',
  [triple(GROUP, 'gpupools/finalizers', 'update')]:
    'OwnerReferencesPermissionEnforcement authorizes blockOwnerDeletion on a GPUNode so (write-limits.test.ts)',
  [triple(GROUP, 'gpunodes/finalizers', 'update')]: 'OwnerReferencesPermissionEnforcement authorizes blockOwnerDeletion on a GPU so',
  [triple(GROUP, 'tensorfusionworkloads/finalizers', 'update')]:
    'OwnerReferencesPermissionEnforcement authorizes blockOwnerDeletion on a worker pod so (write-limits.test.ts)',
};

/**
 * Grants for paths the scenario may or may not reach (a 409 depends on timing), each with its path.
 * Any other grant that goes unused fails the test.
 */
const RARE_PATHS: Record<string, string> = {
  [triple(GROUP, 'gpus', 'get')]: 're-read after a 409 on a status write (updateWithRetry)',
  [triple(GROUP, 'gpunodes', 'get')]: 're-read after a 409 on a status write (updateWithRetry)',
  [triple(GROUP, 'gpupools', 'get')]: 're-read after a 409 on a status write (updateWithRetry)',
  [triple(GROUP, 'tensorfusionworkloads', 'get')]: 're-read after a 409 on a status write, and the webhook on a cache miss',
  [triple(GROUP, 'workloadprofiles', 'get')]: 'the webhook on a cache miss',
  [triple(GROUP, 'gpuresourcequotas', 'get')]: 're-read after a 409 on a status write (updateWithRetry)',
  [triple('', 'pods', 'get')]: 'the extender on a cache miss at bind time',
  [triple(GROUP, 'tensorfusionworkloads', 'delete')]: 'a generated workload left with no owner and no pod',
  // Today our own webhook refuses the worker pods (is-local-gpu "true" against the workload's
  // isLocalGPU false, lib/runtime/webhook), so no worker exists to delete; the create is requested.
  [triple('', 'pods', 'delete')]: 'remote-mode worker pods scaled away or finished',
  [triple('batch', 'jobs', 'get')]: "the top owner (CronJob) of a Job's pods",
  [triple('', 'pods', 'patch')]:
    "autoscaling's in-place resize of a share, once a workload has a recommendation (autoscale-resize.test.ts)",
};

/** What the rules grant, one triple per group × resource × verb. */
function grantedTriples(rules: readonly PolicyRule[]): string[] {
  const out = new Set<string>();
  for (const r of rules) for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) out.add(triple(g, res, v));
  return [...out].sort();
}

const gfdNode = (name: string, product: string, count: number, labels: Record<string, string> = {}) =>
  kwokNode({
    name,
    labels: {
      [GFD.present]: 'true',
      [GFD.product]: product,
      [GFD.count]: String(count),
      [GFD.memory]: '23034',
      'tensor-fusion.ai/pool-default-pool': 'true',
      ...labels,
    },
  });

describeControlPlane(
  'the rendered RBAC against what the runtime requests',
  {
    controllerManager: true,
    scheduler: true,
    kwok: true,
    audit: true,
    users: [user],
    apiServerFlags: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
  },
  (cp) => {
    let ctl: RunningController;
    const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
    const apply = (file: string, docs: Obj[]) => cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, file, docs)]);
    const nodeNames = synth.platform.filter((d) => d.kind === 'Node').map((d) => d.metadata.name as string);

    afterAll(async () => {
      await ctl?.stop();
    });

    test('the install runs and the platform converges', async () => {
      await cp().kubectlOk([
        'create',
        '-f',
        writeYaml(synth.dir, 'nodes.yaml', [
          ...nodeNames.map((name) => kwokNode({ name })),
          gfdNode('gfd-l4-0', 'NVIDIA-L4', 2),
          // A model the TFLOPS table does not know: an UnknownGPUModel event on the pool.
          gfdNode('gfd-odd-0', 'NVIDIA-Odd-9000', 1),
        ]),
      ]);
      ctl = await installController(cp(), synth.controller, synth.dir, { replicas: 1, schedulers: true, env: { LOG_LEVEL: 'info' } });
      await waitFor('replica ready', () => ctl.replicas[0].ready(), 60_000, 200);
      await apply('platform.k8s.yaml', synth.platform);
      await eventually(async () => {
        const pods = (await get(['pods', '-n', NS, '-l', 'tensor-fusion.ai/enabled=true'])).items as Obj[];
        expect(pods.map((p) => p.status.phase)).toEqual(['Running']);
        expect((await get(['gpupool', 'default-pool'])).status?.phase).toBe('Running');
      }, 90_000);
    }, 180_000);

    test('a remote-mode workload makes the controller request its worker pod (and its deletion once scaled to 0, when one exists)', async () => {
      await cp().kubectlOk([
        'patch',
        'gpupool',
        'default-pool',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { componentConfig: { worker: { image: 'example.io/worker:1' } } } }),
      ]);
      await apply('remote.yaml', [
        {
          apiVersion: API_VERSION,
          kind: 'TensorFusionWorkload',
          metadata: { name: 'remote', namespace: NS },
          spec: {
            poolName: 'default-pool',
            isLocalGPU: false,
            replicas: 1,
            resources: { requests: { tflops: '10', vram: '1Gi' }, limits: { tflops: '10', vram: '1Gi' } },
          },
        },
      ]);
      // The request is what this test is about, whatever admission answers.
      await eventually(() => {
        expect(
          cp()
            .auditEvents()
            .some(
              (e) =>
                e.user.username === user.name &&
                e.verb === 'create' &&
                e.objectRef?.resource === 'pods' &&
                e.objectRef.name === 'remote-worker-0',
            ),
        ).toBe(true);
      }, 90_000);
      await cp().kubectlOk(['patch', 'tensorfusionworkload', '-n', NS, 'remote', '--type=merge', '-p', '{"spec":{"replicas":0}}']);
    }, 120_000);

    test('a share released, an event repeated, a node leaving its pool', async () => {
      await cp().kubectlOk(['scale', 'deployment', '-n', NS, 'pytorch-example', '--replicas=0']);
      for (let i = 0; i < 3; i++) await cp().kubectlOk(['label', 'node', 'gfd-odd-0', `example.com/touch=${i}`, '--overwrite']);
      await cp().kubectlOk(['label', 'node', 'gfd-l4-0', 'tensor-fusion.ai/pool-default-pool-']);
      await eventually(async () => {
        expect((await get(['gpunodes'])).items.map((n: Obj) => n.metadata.name)).not.toContain('gfd-l4-0');
        const events = (await get(['events', '-A', '--field-selector=reason=UnknownGPUModel'])).items as Obj[];
        expect(Math.max(...events.map((e) => e.count))).toBeGreaterThan(1);
      }, 60_000);
    }, 120_000);

    test('the ClusterRole and Role grant exactly what the controller requested', async () => {
      const props = resolveControllerProps({ namespace });
      // The scheduler's Lease rule serves the kube-scheduler container, which the harness runs with
      // admin credentials: it is not the controller process's to use.
      const schedulerOnly = (r: PolicyRule) => r.resourceNames?.includes(CONTROLLER_NAMES.schedulerLease) === true;
      const granted = grantedTriples([
        ...controllerClusterRules(props),
        ...controllerNamespaceRules(props).filter((r) => !schedulerOnly(r)),
      ]);
      const requested = requestedTriples(readFileSync(path.join(cp().dir, 'audit.log'), 'utf8'), user.name);
      const listed = { ...AUTHORIZED_INSIDE, ...RARE_PATHS };
      expect({
        unused: granted.filter((t) => !requested.includes(t) && !(t in listed)),
        ungranted: requested.filter((t) => !granted.includes(t)),
        authorizedInsideButRequested: Object.keys(AUTHORIZED_INSIDE).filter((t) => requested.includes(t)),
        listedButNotGranted: Object.keys(listed).filter((t) => !granted.includes(t)),
      }).toEqual({ unused: [], ungranted: [], authorizedInsideButRequested: [], listedButNotGranted: [] });
    });
  },
);

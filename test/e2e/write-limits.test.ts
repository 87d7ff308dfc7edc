/**
 * What the controller's ServiceAccount may do, checked by the real kube-apiserver: the rendered RBAC
 * and ValidatingAdmissionPolicies applied, then requests made as that ServiceAccount with kubectl.
 * Pods: create only remote-mode workers (labels, owner, default ServiceAccount, nothing privileged,
 * the named pool's worker images), delete only owned workers or preemption victims. Nodes: change only
 * the xgn taint and the share-released annotation. OwnerReferencesPermissionEnforcement is on, as on
 * OpenShift, so the blockOwnerDeletion writes need the finalizers grants.
 */
import { ANNOTATION } from '../../lib/annotations';
import { API_VERSION } from '../../lib/model/group';
import { ENABLED_LABEL, MANAGED_BY_LABEL, SHARE_RELEASED_ANNOTATION, WORKLOAD_LABEL } from '../../lib/model/metadata-keys';
import { XGN_TAINT } from '../../lib/t9k/keys';
import { controllerUser, PREEMPTION_REASON, renderController } from '../../lib/render/controller';
import { describeControlPlane, policyDenial as denied, waitFor } from '../support/control-plane';
import { serviceAccountUser } from '../support/control-plane/controller-process';
import { writeYaml } from '../support/control-plane/install';
import { poolObj } from '../runtime/fixtures';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

type Obj = Record<string, any>;

const NAMESPACE = 'tensor-fusion-system';
const SA = controllerUser(NAMESPACE);
const user = serviceAccountUser(NAMESPACE, 'tensor-fusion-controller');
const NS = 'ml';
const WORKER_IMAGE = 'example.io/worker:1';
const INIT_IMAGE = 'example.io/worker-init:1';
const dir = mkdtempSync(path.join(tmpdir(), 'tf-limits-'));
// The install without the webhook configuration (no webhook runs here) and without the Deployment.
const install = renderController({ image: 'example.io/tf:1' }).filter(
  (o) => !['MutatingWebhookConfiguration', 'Deployment'].includes(o.kind),
);

const pool = (name: string, image: string): Obj => ({
  ...poolObj(name, name),
  spec: {
    ...poolObj(name, name).spec,
    componentConfig: {
      worker: { image, podTemplate: { spec: { initContainers: [{ name: 'init', image: INIT_IMAGE }], containers: [{ name: 'worker' }] } } },
    },
  },
});

describeControlPlane(
  'the controller ServiceAccount on a real kube-apiserver',
  {
    users: [user],
    apiServerFlags: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'],
  },
  (cp) => {
    let workloadUid = '';
    const asController = (args: string[], input?: string) => cp().kubectl(args, { user: SA, input });
    const create = (obj: Obj) => asController(['create', '-f', '-'], JSON.stringify(obj));
    /** A remote-mode worker pod as lib/runtime/webhook/workers.ts makes it, changed by `change`. */
    const worker = (i: number, change: (p: Obj) => void = () => undefined): Obj => {
      const pod: Obj = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `remote-worker-${i}`,
          namespace: NS,
          labels: { [ENABLED_LABEL]: 'true', [WORKLOAD_LABEL]: 'remote', [MANAGED_BY_LABEL]: 'remote' },
          annotations: { [ANNOTATION.pool]: 'pool-a', [ANNOTATION.workload]: 'remote' },
          ownerReferences: [
            {
              apiVersion: API_VERSION,
              kind: 'TensorFusionWorkload',
              name: 'remote',
              uid: workloadUid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: { initContainers: [{ name: 'init', image: INIT_IMAGE }], containers: [{ name: 'worker', image: WORKER_IMAGE }] },
      };
      change(pod);
      return pod;
    };
    const WORKERS = 'tensor-fusion-controller-worker-pods';
    const WRITES = 'tensor-fusion-controller-writes';
    const ONLY = 'the tensor-fusion controller may create only remote-mode worker pods';
    const LABELS = `${ONLY}: labelled ${ENABLED_LABEL}: "true", ${WORKLOAD_LABEL} and ${MANAGED_BY_LABEL} with the workload's name, annotated ${ANNOTATION.pool}`;

    beforeAll(async () => {
      await cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(dir, 'install.yaml', install)]);
      await cp().kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
      await cp().kubectlOk(['create', 'namespace', NS]);
      await cp().kubectlOk([
        'apply',
        '--server-side',
        '-f',
        writeYaml(dir, 'pools.yaml', [pool('pool-a', WORKER_IMAGE), pool('pool-b', 'example.io/other:2')]),
      ]);
      const wl = JSON.parse(
        await cp().kubectlOk(['create', '-o', 'json', '-f', '-'], {
          input: JSON.stringify({
            apiVersion: API_VERSION,
            kind: 'TensorFusionWorkload',
            metadata: { name: 'remote', namespace: NS },
            spec: { poolName: 'pool-a', isLocalGPU: false, replicas: 1 },
          }),
        }),
      );
      workloadUid = wl.metadata.uid;
      await cp().kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1' } },
          spec: { taints: [{ key: 'example.com/other', effect: 'NoSchedule' }] },
        }),
      });
      // Policies take effect once the API server has compiled them: wait until a bad pod is refused.
      await waitFor('policies in force', async () => (await create(worker(90, (p) => delete p.metadata.labels))).code !== 0, 30_000, 300);
    }, 90_000);

    test('creates the worker pod of its remote workload (owner finalizers granted, as OwnerReferencesPermissionEnforcement requires)', async () => {
      const r = await create(worker(0));
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    });

    test.each([
      [
        'a pod without our labels',
        (p: Obj) => {
          delete p.metadata.labels;
        },
        LABELS,
      ],
      [
        'a pod managed by another workload',
        (p: Obj) => {
          p.metadata.labels[MANAGED_BY_LABEL] = 'other';
        },
        LABELS,
      ],
      [
        'a pod with another name',
        (p: Obj) => {
          p.metadata.name = 'payload';
        },
        `${ONLY}: named <workload>-worker-<ordinal> and owned (controller: true) by that TensorFusionWorkload only`,
      ],
      [
        'a pod without the owner',
        (p: Obj) => {
          delete p.metadata.ownerReferences;
        },
        `${ONLY}: named <workload>-worker-<ordinal> and owned (controller: true) by that TensorFusionWorkload only`,
      ],
      [
        'a pod running as another ServiceAccount',
        (p: Obj) => {
          p.spec.serviceAccountName = 'admin';
        },
        `${ONLY}: they run as the namespace's default ServiceAccount`,
      ],
      [
        'a privileged pod',
        (p: Obj) => {
          p.spec.containers[0].securityContext = { privileged: true };
        },
        `${ONLY}: no host namespaces, hostPath volumes, host ports, privileged containers or added capabilities`,
      ],
      [
        'a pod on the host network',
        (p: Obj) => {
          p.spec.hostNetwork = true;
        },
        `${ONLY}: no host namespaces, hostPath volumes, host ports, privileged containers or added capabilities`,
      ],
      [
        'a pod mounting the host',
        (p: Obj) => {
          p.spec.volumes = [{ name: 'root', hostPath: { path: '/' } }];
        },
        `${ONLY}: no host namespaces, hostPath volumes, host ports, privileged containers or added capabilities`,
      ],
      [
        'a pod with an added capability in an init container',
        (p: Obj) => {
          p.spec.initContainers[0].securityContext = { capabilities: { add: ['SYS_ADMIN'] } };
        },
        `${ONLY}: no host namespaces, hostPath volumes, host ports, privileged containers or added capabilities`,
      ],
      [
        'a pod with another image',
        (p: Obj) => {
          p.spec.containers[0].image = 'example.io/miner:1';
        },
        `${ONLY}: every image must be the worker image of the GPUPool the pod names (spec.componentConfig.worker.image or its podTemplate)`,
      ],
      [
        'a pod with the image of another pool than the one it names',
        (p: Obj) => {
          p.spec.containers[0].image = 'example.io/other:2';
        },
        `${ONLY}: every image must be the worker image of the GPUPool the pod names (spec.componentConfig.worker.image or its podTemplate)`,
      ],
    ])('refuses %s', async (_, change, message) => {
      const r = await create(worker(1, change));
      expect(r.code).not.toBe(0);
      // The images are checked against the GPUPools (params); the rest needs none.
      const policy = message.includes('image') ? WORKERS : WRITES;
      expect(r.stderr.trim()).toBe(
        `Error from server (Forbidden): error when creating "STDIN": pods "${worker(1, change).metadata.name}" is forbidden: ${denied(policy, message)}`,
      );
    });

    test('limits no one else: the admin creates any pod', async () => {
      await cp().kubectlOk(['run', 'bystander', '-n', NS, '--image=example.io/anything:1', '--restart=Never']);
    });

    test('deletes only its own workers and preemption victims', async () => {
      const r = await asController(['delete', 'pod', '-n', NS, 'bystander', '--wait=false']);
      expect(r.stderr.trim()).toBe(
        `Error from server (Forbidden): pods "bystander" is forbidden: ${denied(WRITES, 'the tensor-fusion controller may delete only the worker pods of its TensorFusionWorkloads, its growth placeholders, or pods kube-scheduler marked for preemption')}`,
      );
      expect((await asController(['delete', 'pod', '-n', NS, 'remote-worker-0', '--wait=false'])).code).toBe(0);
      // kube-scheduler (same ServiceAccount) marks its victims before deleting them.
      await cp().kubectlOk([
        'patch',
        'pod',
        '-n',
        NS,
        'bystander',
        '--subresource=status',
        '--type=json',
        '-p',
        JSON.stringify([
          {
            op: 'add',
            path: '/status/conditions',
            value: [{ type: 'DisruptionTarget', status: 'True', reason: PREEMPTION_REASON, message: 'preempted' }],
          },
        ]),
      ]);
      expect((await asController(['delete', 'pod', '-n', NS, 'bystander', '--wait=false'])).code).toBe(0);
    });

    test('changes the xgn taint and the share-released annotation on nodes, nothing else', async () => {
      const patch = (ops: Obj[]) => asController(['patch', 'node', 'n1', '--type=json', '-p', JSON.stringify(ops)]);
      const refusal = (message: string) => `Error from server (Forbidden): nodes "n1" is forbidden: ${denied(WRITES, message)}`;
      expect((await patch([{ op: 'add', path: '/spec/taints/-', value: { ...XGN_TAINT } }])).stderr).toBe('');
      expect(
        (await patch([{ op: 'add', path: '/metadata/annotations', value: { [SHARE_RELEASED_ANNOTATION]: '2026-01-01T00:00:00Z' } }]))
          .stderr,
      ).toBe('');
      expect((await patch([{ op: 'add', path: '/metadata/labels/evil', value: 'x' }])).stderr.trim()).toBe(
        refusal('the tensor-fusion controller may not change node labels'),
      );
      expect((await patch([{ op: 'add', path: '/metadata/annotations/evil', value: 'x' }])).stderr.trim()).toBe(
        refusal(`the tensor-fusion controller may change only the node annotation ${SHARE_RELEASED_ANNOTATION}`),
      );
      expect((await patch([{ op: 'remove', path: '/spec/taints/0' }])).stderr.trim()).toBe(
        refusal(`the tensor-fusion controller may add, change or remove only the node taint ${XGN_TAINT.key}`),
      );
      expect((await patch([{ op: 'add', path: '/spec/unschedulable', value: true }])).stderr.trim()).toBe(
        refusal('the tensor-fusion controller may not change node fields other than its taint and annotation'),
      );
      const node = JSON.parse(await cp().kubectlOk(['get', 'node', 'n1', '-o', 'json']));
      expect(node.spec.taints).toEqual([{ key: 'example.com/other', effect: 'NoSchedule' }, { ...XGN_TAINT }]);
      expect(node.metadata.labels).toEqual({ 'kubernetes.io/hostname': 'n1' });
    });

    test('mirrors a node as a GPUNode owned by its pool (blockOwnerDeletion needs gpupools/finalizers)', async () => {
      const uid = JSON.parse(await cp().kubectlOk(['get', 'gpupool', 'pool-a', '-o', 'json'])).metadata.uid;
      const gpuNode = {
        apiVersion: API_VERSION,
        kind: 'GPUNode',
        metadata: {
          name: 'n1',
          ownerReferences: [{ apiVersion: API_VERSION, kind: 'GPUPool', name: 'pool-a', uid, controller: true, blockOwnerDeletion: true }],
        },
        spec: { manageMode: 'AutoSelect' },
      };
      const r = await asController(['apply', '--server-side', '--field-manager=tensor-fusion-iac', '-f', '-'], JSON.stringify(gpuNode));
      expect(r.stderr).toBe('');
      const gpuUid = JSON.parse(r.code === 0 ? await cp().kubectlOk(['get', 'gpunode', 'n1', '-o', 'json']) : '{}').metadata?.uid;
      const gpu = {
        apiVersion: API_VERSION,
        kind: 'GPU',
        metadata: {
          name: 'n1-gpu-0',
          ownerReferences: [
            { apiVersion: API_VERSION, kind: 'GPUNode', name: 'n1', uid: gpuUid, controller: true, blockOwnerDeletion: true },
          ],
        },
      };
      expect(
        (await asController(['apply', '--server-side', '--field-manager=tensor-fusion-iac', '-f', '-'], JSON.stringify(gpu))).stderr,
      ).toBe('');
    });

    test('with no GPUPool left, anyone else still creates pods, and the controller still creates no worker', async () => {
      await cp().kubectlOk(['delete', 'gpupools', '--all']);
      // The policy's param cache follows the deletes: wait until the worker is refused for want of a pool.
      await waitFor(
        "no pool in the policy's params",
        async () => (await create(worker(2))).stderr.includes('no params found'),
        30_000,
        300,
      );
      await cp().kubectlOk(['run', 'after-pools', '-n', NS, '--image=example.io/anything:1', '--restart=Never']);
      // A GPU pod of a workload, labelled as the webhook labels it: only worker pods meet the pools.
      const gpuApp = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'gpu-app', namespace: NS, labels: { [ENABLED_LABEL]: 'true', [WORKLOAD_LABEL]: 'remote' } },
        spec: { containers: [{ name: 'app', image: 'example.io/app:1' }] },
      };
      await cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(gpuApp) });
    });
  },
);

/**
 * GPU placement by the real kube-scheduler with our extender, on KWOK GPU nodes: the pod's own
 * constraints are the scheduler's (nodeName, selectors, affinity, DaemonSets, taints, cordons, CPU),
 * the GPU share is ours; a pod that does not fit waits Pending with a typed reason; the pod is the
 * record (copies get fresh shares, terminating pods keep theirs, the record cannot be edited away).
 */
import * as https from 'node:https';
import {
  ALLOCATION_ANNOTATION,
  MANAGED_BY_LABEL,
  ENABLED_LABEL,
  PLACEMENT_ANNOTATIONS,
  SHARE_ANNOTATION,
  SHARE_RELEASED_ANNOTATION,
} from '../../lib/model/metadata-keys';
import { SCHEDULER_NAME } from '../../lib/contract/object-names';
import { gpuName } from '../../lib/model/gpu-object';
import { bindingValidations, integrityValidations, PROTECTED_ANNOTATIONS, shareResourceValidations } from '../../lib/render/controller';
import type { K8sObject } from '../../lib/runtime/kube/cluster';
import { RESOURCES } from '../../lib/runtime/kube/resources';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { review } from '../support/admission-review';
import { type AuditEvent, describeControlPlane, policyDenial } from '../support/control-plane';
import type { Obj, RunningController } from '../support/e2e';
import { a100Labels, controllerSuite, deleteAllPods, installWithPool, kwokNode, localGpuPod, writeYaml } from '../support/e2e';
import { eventually } from '../runtime/fixtures';

// Each case waits on the real scheduler (its retries back off up to seconds) and cleans up after itself.
const { synth, user } = controllerSuite(120_000);

const POOL = 'sched';
const NS = 'gpu-apps';
/** Four nodes of two 80 GiB A100s: room for 8 pods that each take a whole GPU's VRAM. */
const NODES = ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3'];

function gpuNode(name: string, pool = POOL): Obj {
  return kwokNode({
    name,
    cpu: '8',
    labels: a100Labels(pool, 2),
  });
}

/** POSTs a hand-made AdmissionReview straight to a webhook replica, as anyone who reaches its port could. */
function postReview(port: number, review: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate-pods',
        method: 'POST',
        rejectUnauthorized: false,
        headers: { 'Content-Type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(review));
  });
}

/** An opted-in pod asking for a whole GPU's VRAM (so each GPU takes one). */
function gpuPod(name: string, spec: Obj = {}, vram = '80Gi'): Obj {
  return localGpuPod({ name, namespace: NS, pool: POOL, tflops: '10', vram, spec });
}

describeControlPlane(
  'placement by kube-scheduler and the extender',
  { controllerManager: true, kwok: true, audit: true, users: [user] },
  (cp) => {
    let ctl: RunningController;
    const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
    const pod = (name: string) => get(['pod', '-n', NS, name]);
    /** The audit log's events by the controller's user that `match`. */
    const controllerAudit = (match: (e: AuditEvent) => boolean, events = cp().auditEvents()) =>
      events.filter((e) => e.user.username === user.name && match(e));
    const create = (o: Obj) => cp().kubectl(['create', '-f', '-'], { input: JSON.stringify(o) });
    const allocation = (p: Obj) =>
      JSON.parse(p.metadata.annotations[ALLOCATION_ANNOTATION]) as { id: string; node: string; gpuIds: string[] };
    /** Waits until the pod is bound and returns it. */
    const bound = async (name: string): Promise<Obj> => {
      let p: Obj = {};
      await eventually(async () => {
        p = await pod(name);
        expect(p.spec.nodeName).toBeTruthy();
        expect(p.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeTruthy();
      }, 60_000);
      return p;
    };
    /** GPU -> pods holding a share on it, over every bound pod in the namespace. */
    const sharesPerGpu = async (): Promise<Map<string, string[]>> => {
      const out = new Map<string, string[]>();
      for (const p of (await get(['pods', '-n', NS])).items as Obj[]) {
        if (!p.metadata.annotations?.[ALLOCATION_ANNOTATION] || !p.spec.nodeName) continue;
        for (const g of allocation(p).gpuIds) out.set(g, [...(out.get(g) ?? []), p.metadata.name]);
      }
      return out;
    };
    const expectNoGpuOvercommitted = async () => {
      for (const [gpu, pods] of await sharesPerGpu()) expect({ gpu, pods: pods.length }).toEqual({ gpu, pods: 1 });
    };
    /** Removes every workload and pod of the namespace and waits until the pods are gone. */
    const clean = async () => {
      await cp().kubectl(['delete', 'daemonsets,deployments', '--all', '-n', NS, '--wait=false']);
      await deleteAllPods(cp(), NS);
    };

    beforeAll(async () => {
      const docs = [
        renderGpuPool(POOL, { tflopsOversellRatio: 100 }),
        ...NODES.map((n) => gpuNode(n)),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      ];
      ctl = await installWithPool(cp(), synth, 'sched.yaml', docs, POOL, { totalNodes: 4, totalGPUs: 8 });
    }, 180_000);

    afterAll(async () => {
      await ctl?.stop();
    });

    afterEach(async () => {
      await clean();
      await cp().kubectl(['uncordon', 'gpu-2']);
      await cp().kubectl(['taint', 'node', 'gpu-3', 'dedicated-', '--overwrite']);
    }, 300_000);

    test('the webhook marks the pod for our scheduler; the extender places it at bind, recorded by pod UID', async () => {
      expect((await create(gpuPod('plain'))).code).toBe(0);
      const p = await bound('plain');
      expect(p.spec.schedulerName).toBe(SCHEDULER_NAME);
      const a = allocation(p);
      expect(a.id).toBe(p.metadata.uid);
      expect(a.node).toBe(p.spec.nodeName);
      // Hard isolation: kube-scheduler ignores the share resource (the extender placed the pod); the
      // kubelet gets the devices of the GPUs the bind recorded from the node agent.
      expect(p.spec.containers[0].resources.limits['tensor-fusion.ai/share']).toBe('1');
      expect(p.metadata.annotations['tensor-fusion.ai/visible-devices']).toBeTruthy();
      // One review per pod: the webhook writes the priority its class gives, so the Priority plugin,
      // re-run after webhooks, changes nothing and the API server has no reason to reinvoke us.
      const created = cp()
        .auditEvents()
        .find((e) => e.verb === 'create' && e.objectRef?.resource === 'pods' && !e.objectRef.subresource && e.objectRef.name === 'plain');
      const calls = Object.keys(created?.annotations ?? {}).filter((k) => k.startsWith('mutation.webhook.admission.k8s.io/'));
      expect(calls).toEqual(['mutation.webhook.admission.k8s.io/round_0_index_0']);
      expect(p.spec).toMatchObject({ priorityClassName: 'tensor-fusion-medium', priority: 200, preemptionPolicy: 'Never' });
    });

    test("nodeSelector, node affinity and nodeName are the scheduler's: the pod lands where it asked, with a share", async () => {
      await create(gpuPod('by-selector', { nodeSelector: { 'kubernetes.io/hostname': 'gpu-1' } }));
      await create(
        gpuPod('by-affinity', {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['gpu-2'] }] }],
              },
            },
          },
        }),
      );
      await create(gpuPod('by-name', { nodeName: 'gpu-3' }));
      expect((await bound('by-selector')).spec.nodeName).toBe('gpu-1');
      expect((await bound('by-affinity')).spec.nodeName).toBe('gpu-2');
      const named = await bound('by-name');
      expect(named.spec.nodeName).toBe('gpu-3');
      expect(allocation(named).node).toBe('gpu-3');
    });

    // Its name, past what a label value holds, is left off the GPUs' managed-by label, and cut short
    // (with a hash) in their own names, which `<node>-gpu-<index>` would take past 253.
    test('a node of the longest name (253 characters) gets its GPUs, unlabelled and owned by its GPUNode, and takes a share', async () => {
      const long = `gpu-${'x'.repeat(57)}.${'y'.repeat(63)}.${'z'.repeat(63)}.${'w'.repeat(63)}`;
      const longGpus = async () =>
        ((await get(['gpus'])).items as Obj[]).filter((g) => g.metadata.ownerReferences?.some((r: Obj) => r.name === long));
      // A node name may run to 253 characters; its hostname label, like any label value, to 63.
      await cp().kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify(kwokNode({ name: long, cpu: '8', labels: { ...a100Labels(POOL, 2), 'kubernetes.io/hostname': 'gpu-long' } })),
      });
      try {
        await eventually(async () => {
          const gpus = await longGpus();
          expect(gpus.map((g) => [g.metadata.name, g.metadata.labels?.[MANAGED_BY_LABEL], g.status?.phase])).toEqual([
            [gpuName(long, 0), undefined, 'Running'],
            [gpuName(long, 1), undefined, 'Running'],
          ]);
          expect((await get(['gpupool', POOL])).status).toMatchObject({ totalNodes: 5, totalGPUs: 10 });
        }, 60_000);
        await create(gpuPod('on-long', { nodeSelector: { 'kubernetes.io/hostname': 'gpu-long' } }));
        const p = await bound('on-long');
        expect([p.spec.nodeName, allocation(p).node, allocation(p).gpuIds.length]).toEqual([long, long, 1]);
        expect([gpuName(long, 0), gpuName(long, 1)]).toContain(allocation(p).gpuIds[0]);
      } finally {
        await clean();
        await cp().kubectl(['delete', 'node', long]);
        await eventually(async () => expect(await longGpus()).toEqual([]), 60_000);
      }
    }, 180_000);

    test('a DaemonSet of GPU pods gets one placed pod per node, each with a share on its own node', async () => {
      const tpl = gpuPod('ds', {}, '1Gi');
      await cp().kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          metadata: { name: 'agent', namespace: NS },
          spec: {
            selector: { matchLabels: { app: 'gpu' } },
            template: { metadata: { labels: tpl.metadata.labels, annotations: tpl.metadata.annotations }, spec: tpl.spec },
          },
        }),
      });
      await eventually(async () => {
        const pods = ((await get(['pods', '-n', NS])).items as Obj[]).filter(
          (p) => p.spec.nodeName && p.metadata.annotations?.[ALLOCATION_ANNOTATION],
        );
        expect(pods.map((p) => allocation(p).node).sort()).toEqual(NODES);
        for (const p of pods) expect(allocation(p).node).toBe(p.spec.nodeName);
      }, 60_000);
    });

    test("an untolerated taint and a cordon keep pods off those nodes; a pod needing more CPU than any node has waits with the scheduler's reason", async () => {
      await cp().kubectlOk(['taint', 'node', 'gpu-3', 'dedicated=ml:NoSchedule']);
      await cp().kubectlOk(['cordon', 'gpu-2']);
      for (let i = 0; i < 4; i++) await create(gpuPod(`spread-${i}`));
      for (let i = 0; i < 4; i++) expect(['gpu-0', 'gpu-1']).toContain((await bound(`spread-${i}`)).spec.nodeName);
      await create(
        gpuPod('big-cpu', { containers: [{ name: 'main', image: 'example.io/app:1', resources: { requests: { cpu: '1000' } } }] }, '1Gi'),
      );
      await eventually(async () => {
        const cond = ((await pod('big-cpu')).status.conditions as Obj[]).find((c) => c.type === 'PodScheduled');
        expect(cond?.reason).toBe('Unschedulable');
        expect(cond?.message).toMatch(/Insufficient cpu/);
      }, 30_000);
    });

    test('a pod that does not fit waits Pending with our typed reason and is placed once a share is released', async () => {
      for (let i = 0; i < 8; i++) await create(gpuPod(`full-${i}`));
      for (let i = 0; i < 8; i++) await bound(`full-${i}`);
      // Two wait for the room of one: the one left waiting is why the room is announced.
      const waiting = ['waiting-0', 'waiting-1'];
      for (const name of waiting) await create(gpuPod(name));
      await eventually(async () => {
        for (const name of waiting) {
          const cond = ((await pod(name)).status.conditions as Obj[]).find((c) => c.type === 'PodScheduled');
          expect(cond?.reason).toBe('Unschedulable');
          expect(cond?.message).toContain('4 not enough free VRAM on any GPU');
        }
      }, 30_000);
      const freed = (await pod('full-0')).spec.nodeName;
      await cp().kubectlOk(['delete', 'pod', '-n', NS, 'full-0', '--grace-period=0', '--force']);
      const nodes = async () => Promise.all(waiting.map(async (name) => (await pod(name)).spec.nodeName as string | undefined));
      await eventually(async () => expect((await nodes()).filter(Boolean)).toEqual([freed]), 30_000);
      // The extender told the scheduler of the room with a node update of its own, as a pod still waited.
      await eventually(async () => expect((await get(['node', freed])).metadata.annotations?.[SHARE_RELEASED_ANNOTATION]).toBeTruthy());
      await new Promise((r) => setTimeout(r, 2_000));
      expect((await nodes()).filter(Boolean)).toEqual([freed]);
      await expectNoGpuOvercommitted();
      const left = waiting[(await nodes()).findIndex((n) => !n)];
      await cp().kubectlOk(['delete', 'pod', '-n', NS, left, '--grace-period=0', '--force']);
    });

    test('a pod turned away for a limit the pool cannot oversell to is placed once the pool allows it: a change kube-scheduler does not watch', async () => {
      const limited = gpuPod('over-limit', {}, '1Gi');
      limited.metadata.annotations['tensor-fusion.ai/tflops-limit'] = '400';
      await create(limited);
      await eventually(async () => {
        const cond = ((await pod('over-limit')).status.conditions as Obj[]).find((c) => c.type === 'PodScheduled');
        expect(cond?.reason).toBe('Unschedulable');
        expect(cond?.message).toMatch(/tflops-limit 400 is above/);
      }, 30_000);
      const apply = (ratio: number) =>
        cp().kubectlOk([
          'apply',
          '--server-side',
          '-f',
          writeYaml(synth.dir, 'oversell.yaml', [renderGpuPool(POOL, { tflopsOversellRatio: ratio })]),
        ]);
      try {
        // Without our node update the pod would wait for the scheduler's 5-minute flush: no event it
        // watches changes when a GPUPool does.
        await apply(200);
        await bound('over-limit');
        const stamped = ((await get(['nodes'])).items as Obj[]).filter((n) => n.metadata.annotations?.[SHARE_RELEASED_ANNOTATION]);
        expect(stamped.length).toBeGreaterThan(0);
      } finally {
        await apply(100);
      }
    });

    test("a pod copied from a running one gets its own share; deleting the copy leaves the original's share", async () => {
      await create(gpuPod('original', { nodeSelector: { 'kubernetes.io/hostname': 'gpu-0' } }));
      const original = await bound('original');
      const copy = JSON.parse(JSON.stringify(original));
      copy.metadata = { name: 'copy', namespace: NS, labels: original.metadata.labels, annotations: original.metadata.annotations };
      delete copy.status;
      delete copy.spec.nodeName;
      expect((await create(copy)).code).toBe(0);
      const c = await bound('copy');
      expect(allocation(c).id).toBe(c.metadata.uid);
      expect(allocation(c).gpuIds).not.toEqual(allocation(original).gpuIds);
      await cp().kubectlOk(['delete', 'pod', '-n', NS, 'copy', '--grace-period=0', '--force']);
      // The original's GPU is still taken: a pod pinned to its node takes the other GPU, then one more waits.
      await create(gpuPod('after-copy-1', { nodeSelector: { 'kubernetes.io/hostname': 'gpu-0' } }));
      expect(allocation(await bound('after-copy-1')).gpuIds).not.toEqual(allocation(original).gpuIds);
      await create(gpuPod('after-copy-2', { nodeSelector: { 'kubernetes.io/hostname': 'gpu-0' } }));
      await eventually(
        async () =>
          expect(((await pod('after-copy-2')).status.conditions as Obj[]).find((x) => x.type === 'PodScheduled')?.reason).toBe(
            'Unschedulable',
          ),
        30_000,
      );
      await expectNoGpuOvercommitted();
    });

    test('the opt-in label and the allocation record cannot be removed from a pod that holds a share or waits for one', async () => {
      const [labelKept] = integrityValidations(ctl.namespace).filter((v) =>
        v.message.startsWith(`the label ${ENABLED_LABEL} may not be removed`),
      );
      const refused = (name: string) =>
        `Error from server (Forbidden): pods "${name}" is forbidden: ${policyDenial('tensor-fusion-pod-integrity', labelKept.message)}`;
      await create(gpuPod('guarded'));
      await bound('guarded');
      const unlabel = await cp().kubectl(['label', 'pod', '-n', NS, 'guarded', `${ENABLED_LABEL}-`]);
      expect(unlabel.stderr.trim()).toBe(refused('guarded'));
      const unannotate = await cp().kubectl(['annotate', 'pod', '-n', NS, 'guarded', `${ALLOCATION_ANNOTATION}-`]);
      expect(unannotate.code).not.toBe(0);
      expect(unannotate.stderr).toMatch(/ValidatingAdmissionPolicy/);
      expect((await pod('guarded')).metadata.annotations[ALLOCATION_ANNOTATION]).toBeTruthy();
      // Pending (no node has that name), with only its share request: the label stays too, or a bind
      // racing its removal would record a share on a pod nothing counts.
      await create(gpuPod('guarded-pending', { nodeSelector: { 'kubernetes.io/hostname': 'nowhere' } }));
      const unlabelPending = await cp().kubectl(['label', 'pod', '-n', NS, 'guarded-pending', `${ENABLED_LABEL}=false`, '--overwrite']);
      expect(unlabelPending.stderr.trim()).toBe(refused('guarded-pending'));
      expect((await pod('guarded-pending')).metadata.labels[ENABLED_LABEL]).toBe('true');
    });

    test('no one but the controller binds a pod with a placement record or the opt-in label: the API server copies both onto the pod', async () => {
      // Pending for good (no node has that name): only a hand-made Binding would place it.
      await create(gpuPod('stranded', { nodeSelector: { 'kubernetes.io/hostname': 'nowhere' } }));
      await eventually(
        async () =>
          expect(((await pod('stranded')).status.conditions as Obj[]).find((c) => c.type === 'PodScheduled')?.reason).toBe('Unschedulable'),
        30_000,
      );
      const { uid } = (await pod('stranded')).metadata;
      const binding = (name: string, metadata: Obj) =>
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name, namespace: NS, ...metadata },
          target: { apiVersion: 'v1', kind: 'Node', name: 'gpu-0' },
        });
      const forged = binding('stranded', {
        annotations: {
          [ALLOCATION_ANNOTATION]: JSON.stringify({ id: uid, pool: POOL, node: 'gpu-0', gpuIds: ['gpu-0-0'] }),
          [PLACEMENT_ANNOTATIONS.visibleDevices]: '0,1',
        },
      });
      const [records, label] = bindingValidations(ctl.namespace).map((v) => policyDenial('tensor-fusion-pod-bindings', v.message));
      // Both ways in: the older bindings collection (kubectl create) and the pod's binding subresource.
      const viaCollection = await cp().kubectl(['create', '-f', '-'], { input: forged });
      expect(viaCollection.stderr.trim()).toBe(
        `Error from server (Forbidden): error when creating "STDIN": bindings "stranded" is forbidden: ${records}`,
      );
      const viaSubresource = await cp().kubectl(['create', '--raw', `/api/v1/namespaces/${NS}/pods/stranded/binding`, '-f', '-'], {
        input: forged,
      });
      expect(viaSubresource.stderr.trim()).toBe(`Error from server (Forbidden): pods "stranded" is forbidden: ${records}`);
      const relabel = await cp().kubectl(['create', '-f', '-'], { input: binding('stranded', { labels: { [ENABLED_LABEL]: 'false' } }) });
      expect(relabel.stderr.trim()).toBe(
        `Error from server (Forbidden): error when creating "STDIN": bindings "stranded" is forbidden: ${label}`,
      );
      const stranded = await pod('stranded');
      expect(stranded.spec.nodeName).toBeUndefined();
      expect(stranded.metadata.annotations[ALLOCATION_ANNOTATION]).toBeUndefined();
      // Any other Binding goes through, its annotations copied onto the pod: why the policy is needed.
      await create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'hand-placed', namespace: NS },
        spec: { schedulerName: 'by-hand', containers: [{ name: 'main', image: 'example.io/app:1' }] },
      });
      await cp().kubectlOk(['create', '-f', '-'], { input: binding('hand-placed', { annotations: { 'example.com/placed-by': 'hand' } }) });
      const placed = await pod('hand-placed');
      expect([placed.spec.nodeName, placed.metadata.annotations['example.com/placed-by']]).toEqual(['gpu-0', 'hand']);
    });

    test('the integrity policy sees only pods with the opt-in label; on any other pod our records count for nothing', async () => {
      // A whole GPU's share on a pod of our scheduler that never opted in: no webhook resolved it.
      const share = JSON.stringify({
        pool: POOL,
        qos: 'medium',
        gpuCount: 1,
        tflopsRequest: 10,
        tflopsLimit: 10,
        vramRequest: 80 * 2 ** 30,
        vramLimit: 80 * 2 ** 30,
      });
      const plain = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'not-opted-in', namespace: NS, labels: { app: 'plain' }, annotations: { [SHARE_ANNOTATION]: share } },
        spec: {
          schedulerName: SCHEDULER_NAME,
          nodeSelector: { 'kubernetes.io/hostname': 'gpu-2' },
          containers: [{ name: 'main', image: 'example.io/app:1' }],
        },
      };
      expect((await create(plain)).code).toBe(0);
      await eventually(async () => expect((await pod('not-opted-in')).spec.nodeName).toBe('gpu-2'), 60_000);
      expect((await pod('not-opted-in')).metadata.annotations[ALLOCATION_ANNOTATION]).toBeUndefined();
      // Nor can it opt in now: the webhook resolves a share only at creation.
      const optIn = await cp().kubectl(['label', 'pod', '-n', NS, 'not-opted-in', `${ENABLED_LABEL}=true`]);
      expect(optIn.code).not.toBe(0);
      expect(optIn.stderr).toContain(
        policyDenial(
          'tensor-fusion-pod-integrity',
          `the label ${ENABLED_LABEL}: "true" may not be added to a pod that carries any of the annotations ${PROTECTED_ANNOTATIONS.join(', ')}`,
        ),
      );
      await cp().kubectlOk(['annotate', 'pod', '-n', NS, 'not-opted-in', `${SHARE_ANNOTATION}-`]);
      // Both GPUs of its node are still free for opted-in pods.
      for (const name of ['after-plain-1', 'after-plain-2']) {
        await create(gpuPod(name, { nodeSelector: { 'kubernetes.io/hostname': 'gpu-2' } }));
        expect((await bound(name)).spec.nodeName).toBe('gpu-2');
      }
      await expectNoGpuOvercommitted();
    });

    test('a share is refused on an opted-in pod where the webhook does not look, and means nothing on a pod labelled "false"', async () => {
      const share = JSON.stringify({
        pool: POOL,
        qos: 'medium',
        gpuCount: 1,
        tflopsRequest: 10,
        tflopsLimit: 10,
        vramRequest: 2 ** 30,
        vramLimit: 2 ** 30,
      });
      const withShare = (name: string, namespace: string, enabled: string) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace, labels: { [ENABLED_LABEL]: enabled }, annotations: { [SHARE_ANNOTATION]: share } },
        spec: { schedulerName: SCHEDULER_NAME, containers: [{ name: 'main', image: 'example.io/app:1' }] },
      });
      const refused = await create(withShare('unseen', 'kube-system', 'true'));
      expect(refused.code).not.toBe(0);
      expect(refused.stderr.trim()).toBe(
        'Error from server (Forbidden): error when creating "STDIN": pods "unseen" is forbidden: ' +
          policyDenial(
            'tensor-fusion-pod-records',
            `pods in kube-system and ${ctl.namespace} are not seen by the tensor-fusion webhook and may not carry ` +
              `${SHARE_ANNOTATION} or ${ALLOCATION_ANNOTATION}: only the tensor-fusion controller (system:serviceaccount:${ctl.namespace}:tensor-fusion-controller) may set them`,
          ),
      );
      // Labelled "false", the record is inert (the runtime reads records only on pods labelled "true").
      expect((await create(withShare('opted-out', NS, 'false'))).code).toBe(0);
      await cp().kubectlOk(['delete', 'pod', '-n', NS, 'opted-out', '--grace-period=0', '--force', '--wait=false']);
    });

    test('the share resource only through the webhook: refused on pods it never saw, only the inject container holds it on pods it admits', async () => {
      const asking = { requests: { 'tensor-fusion.ai/share': '2' }, limits: { 'tensor-fusion.ai/share': '2' } };
      const plainPod = (name: string, namespace: string, labels: Obj, spec: Obj) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace, labels },
        spec: { containers: [{ name: 'main', image: 'example.io/app:1' }], ...spec },
      });
      const denial = (name: string) =>
        'Error from server (Forbidden): error when creating "STDIN": pods "' +
        name +
        '" is forbidden: ' +
        policyDenial('tensor-fusion-share-resource', shareResourceValidations()[0].message);
      const sneaky = [
        plainPod('not-opted-in', NS, { app: 'plain' }, { containers: [{ name: 'main', image: 'example.io/app:1', resources: asking }] }),
        plainPod(
          'in-init',
          NS,
          {},
          { initContainers: [{ name: 'setup', image: 'example.io/app:1', resources: { limits: asking.limits } }] },
        ),
        plainPod(
          'unseen-ns',
          'kube-system',
          { [ENABLED_LABEL]: 'true' },
          { containers: [{ name: 'main', image: 'example.io/app:1', resources: asking }] },
        ),
      ];
      for (const p of sneaky) {
        const refused = await create(p);
        expect(refused.code).not.toBe(0);
        expect(refused.stderr.trim()).toBe(denial(p.metadata.name));
      }
      const admitted = gpuPod(
        'with-sidecar',
        {
          containers: [
            { name: 'main', image: 'example.io/app:1', resources: asking },
            { name: 'proxy', image: 'example.io/proxy:1', resources: asking },
          ],
        },
        '1Gi',
      );
      admitted.metadata.annotations['tensor-fusion.ai/inject-container'] = 'main';
      expect((await create(admitted)).code).toBe(0);
      const stored = await pod('with-sidecar');
      expect(
        stored.spec.containers.map((c: Obj) => [
          c.name,
          c.resources.requests?.['tensor-fusion.ai/share'],
          c.resources.limits?.['tensor-fusion.ai/share'],
        ]),
      ).toEqual([
        ['main', '1', '1'],
        ['proxy', undefined, undefined],
      ]);
      await cp().kubectlOk(['delete', 'pod', '-n', NS, 'with-sidecar', '--grace-period=0', '--force', '--wait=false']);
    });

    test('a terminating pod keeps its share until it is gone', async () => {
      await create(gpuPod('leaving', { nodeSelector: { 'kubernetes.io/hostname': 'gpu-1' } }));
      await create(gpuPod('staying', { nodeSelector: { 'kubernetes.io/hostname': 'gpu-1' } }));
      await bound('leaving');
      await bound('staying');
      await cp().kubectlOk(['patch', 'pod', '-n', NS, 'leaving', '--type=merge', '-p', '{"metadata":{"finalizers":["example.com/hold"]}}']);
      await cp().kubectlOk(['delete', 'pod', '-n', NS, 'leaving', '--wait=false']);
      await create(gpuPod('next', { nodeSelector: { 'kubernetes.io/hostname': 'gpu-1' } }));
      await new Promise((r) => setTimeout(r, 3_000));
      expect((await pod('leaving')).metadata.deletionTimestamp).toBeTruthy();
      expect((await pod('next')).spec.nodeName).toBeUndefined();
      await cp().kubectlOk(['patch', 'pod', '-n', NS, 'leaving', '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
      expect((await bound('next')).spec.nodeName).toBe('gpu-1');
      await expectNoGpuOvercommitted();
    });

    test('a pod after a pause is placed without listing every GPU pod again while our scheduler has held its Lease throughout', async () => {
      const extenderLists = () =>
        controllerAudit(
          (e) =>
            e.verb === 'list' &&
            e.objectRef?.resource === 'pods' &&
            e.requestURI.includes(`labelSelector=${encodeURIComponent(`${ENABLED_LABEL}=true`)}`),
        ).length;
      await create(gpuPod('before-pause'));
      await bound('before-pause');
      const before = extenderLists();
      // Longer than the pause after which the extender checks whether its state may be stale (5 s).
      await new Promise((r) => setTimeout(r, 6_000));
      await create(gpuPod('after-pause'));
      await bound('after-pause');
      expect(extenderLists() - before).toBe(0);
      await expectNoGpuOvercommitted();
    });

    test('a forged AdmissionReview sent to the webhook creates nothing', async () => {
      // Status of the earlier tests' pods follows them by up to a second, and their generated workloads
      // are collected: wait for the controller to be quiet in the namespace first.
      const writesInNs = (e: AuditEvent) => ['create', 'update', 'patch', 'delete'].includes(e.verb) && e.objectRef?.namespace === NS;
      for (let n = -1; n !== controllerAudit(writesInNs).length;) {
        n = controllerAudit(writesInNs).length;
        await new Promise((r) => setTimeout(r, 2_500));
      }
      const before = cp().auditEvents().length;
      const forged = gpuPod('forged', {}, '1Gi');
      Object.assign(forged.metadata.annotations, {
        'tensor-fusion.ai/generate-workload': 'true',
        'tensor-fusion.ai/workload': 'forged',
        'tensor-fusion.ai/replicas': '100',
      });
      const status = await postReview(ctl.replicas[0].webhookPort, review(forged as K8sObject, { uid: 'forged' }));
      expect(status).toBe(200);
      await new Promise((r) => setTimeout(r, 3_000));
      expect((await cp().kubectl(['get', 'tensorfusionworkload', '-n', NS, 'forged'])).code).not.toBe(0);
      expect(controllerAudit(writesInNs, cp().auditEvents().slice(before))).toEqual([]);
    });

    test('1,000 pods created at once against room for 500: exactly 500 bound, 500 Pending, none over-committed; deleting 100 lets exactly 100 more bind', async () => {
      // Room for exactly 500: 25 nodes × 2 GPUs × 10 shares of 8 GiB.
      const extra = Array.from({ length: 25 }, (_, i) => gpuNode(`race-${i}`, 'race'));
      await cp().kubectlOk([
        'apply',
        '--server-side',
        '-f',
        writeYaml(synth.dir, 'race.yaml', [renderGpuPool('race', { tflopsOversellRatio: 100 }), ...extra]),
      ]);
      await eventually(
        async () => expect((await get(['gpupool', 'race'])).status).toMatchObject({ totalNodes: 25, totalGPUs: 50 }),
        60_000,
      );
      const cluster = cp().cluster('admin', 'race');
      const racePod = (i: number): K8sObject => {
        const p = gpuPod(`race-${i}`, {}, '8Gi');
        p.metadata.annotations['tensor-fusion.ai/gpupool'] = 'race';
        return p as K8sObject;
      };
      const created = await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          cluster.create(RESOURCES.pods, racePod(i)).then(
            () => true,
            () => false,
          ),
        ),
      );
      expect(created.filter(Boolean)).toHaveLength(1000);
      const counts = async () => {
        const pods = ((await get(['pods', '-n', NS, '-l', 'app=gpu'])).items as Obj[]).filter((p) => p.metadata.name.startsWith('race-'));
        return { bound: pods.filter((p) => p.spec.nodeName).length, pending: pods.filter((p) => !p.spec.nodeName).length, pods };
      };
      await eventually(async () => expect(await counts()).toMatchObject({ bound: 500, pending: 500 }), 240_000);
      // Stable: nothing more binds.
      await new Promise((r) => setTimeout(r, 5_000));
      const { pods } = await counts();
      expect(pods.filter((p) => p.spec.nodeName)).toHaveLength(500);
      const perGpu = new Map<string, number>();
      for (const p of pods.filter((x) => x.spec.nodeName)) for (const g of allocation(p).gpuIds) perGpu.set(g, (perGpu.get(g) ?? 0) + 1);
      expect(Math.max(...perGpu.values())).toBe(10);
      expect([...perGpu.values()].reduce((a, b) => a + b, 0)).toBe(500);
      const victims = pods
        .filter((p) => p.spec.nodeName)
        .slice(0, 100)
        .map((p) => p.metadata.name);
      await cp().kubectlOk(['delete', 'pod', '-n', NS, '--grace-period=0', '--force', ...victims]);
      // Releases are announced to kube-scheduler as node updates (and the extender's sweep of the pods it
      // turned away stamps a node again should an announcement lose its race). The deletions retried
      // every pending pod, so kube-scheduler's own flush of unschedulable pods (5 minutes after a pod's
      // last attempt) cannot come within this wait: only our retries place them. The deletions come
      // while the extender re-lists the pods before each refusal; a list sent before a deletion once
      // brought the deleted pod's share back, and about one run in ten left a pod waiting for that flush.
      await eventually(async () => expect(await counts()).toMatchObject({ bound: 500, pending: 400 }), 150_000);
    }, 540_000);
  },
);

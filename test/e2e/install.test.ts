/**
 * The example platform installed on a real control plane as an operator installs it: nodes that
 * already carry taints of another manager, `kubectl apply --server-side` of the synthesized YAML
 * (controller first, then the platform), two controller replicas with real Lease election serving the
 * webhook through the real MutatingWebhookConfiguration, KWOK nodes labelled by GpuNode and by NVIDIA
 * GFD, and pods created with kubectl.
 */
import { API_VERSION } from '../../lib/model/group';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, GFD } from '../../lib/model/metadata-keys';
import { XGN_TAINT } from '../../lib/t9k/keys';
import { describeControlPlane, waitFor } from '../support/control-plane';
import { controllerSuite, installController, kwokNode, type Obj, RunningController, writeYaml } from '../support/e2e';
import { eventually } from '../runtime/fixtures';

const { synth, user } = controllerSuite(30_000);
const FOREIGN_TAINT = { key: 'example.com/maintenance', value: 'soon', effect: 'PreferNoSchedule' };

describeControlPlane(
  'example install on a real control plane',
  { controllerManager: true, scheduler: true, kwok: true, users: [user] },
  (cp) => {
    let ctl: RunningController;
    const nodeNames = synth.platform.filter((d) => d.kind === 'Node').map((d) => d.metadata.name as string);
    const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));

    afterAll(async () => {
      await ctl?.stop();
    });

    test('the nodes exist first, with taints written by another field manager', async () => {
      const nodes = [
        ...nodeNames.map((name) => kwokNode({ name, taints: [FOREIGN_TAINT] })),
        // A node labelled by NVIDIA GPU Feature Discovery, put in the pool by another tool.
        kwokNode({
          name: 'gfd-l4-0',
          labels: {
            [GFD.present]: 'true',
            [GFD.product]: 'NVIDIA-L4',
            [GFD.count]: '2',
            [GFD.memory]: '23034',
            'tensor-fusion.ai/pool-default-pool': 'true',
          },
        }),
      ];
      await cp().kubectlOk(['create', '--field-manager=node-ops', '-f', writeYaml(synth.dir, 'nodes.yaml', nodes)]);
    });

    test('the controller YAML applies server-side and every CRD is Established', async () => {
      ctl = await installController(cp(), synth.controller, synth.dir, { replicas: 2, schedulers: true });
      const crds = await get(['crd']);
      expect(crds.items.map((c: Obj) => c.metadata.name).sort()).toEqual(
        synth.controller
          .filter((d) => d.kind === 'CustomResourceDefinition')
          .map((d) => d.metadata.name)
          .sort(),
      );
      for (const c of crds.items) expect(c.status.conditions.find((x: Obj) => x.type === 'Established')?.status).toBe('True');
    });

    test('two replicas elect one leader through a real Lease, and both serve the webhook', async () => {
      await waitFor('both replicas ready', async () => (await Promise.all(ctl.replicas.map((r) => r.ready()))).every(Boolean), 60_000, 200);
      const leader = await ctl.leader();
      expect(ctl.replicas.map((r) => r.name)).toContain(leader);
      // The leader published its CA into the webhook configuration.
      await waitFor(
        'caBundle published',
        async () => Boolean((await get(['mutatingwebhookconfiguration', 'tensor-fusion-webhook'])).webhooks[0].clientConfig.caBundle),
        30_000,
        200,
      );
    });

    test('the platform YAML applies server-side; a second apply of everything changes nothing and conflicts with nothing', async () => {
      const platform = writeYaml(synth.dir, 'platform.k8s.yaml', synth.platform);
      const first = await cp().kubectl(['apply', '--server-side', '-f', platform]);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      const again = await cp().kubectl(['apply', '--server-side', '-f', synth.dir + '/controller.k8s.yaml', '-f', platform]);
      expect(again.stderr).toBe('');
      expect(again.code).toBe(0);
      expect(again.stdout).not.toMatch(/conflict/i);
      // kubectl diff exits 0 only when a server-side dry run of the apply matches what is live.
      const diff = await cp().kubectl(['diff', '--server-side', '-f', synth.dir + '/controller.k8s.yaml', '-f', platform]);
      expect(diff.stdout).toBe('');
      expect(diff.code).toBe(0);
    });

    test("GpuNode labels leave the other manager's taints in place; the controller merges the xgn taint beside them", async () => {
      await eventually(async () => {
        for (const name of nodeNames) {
          const node = await get(['node', name]);
          expect(node.spec.taints).toContainEqual(FOREIGN_TAINT);
          const labels = synth.platform.find((d) => d.kind === 'Node' && d.metadata.name === name)!.metadata.labels;
          expect(node.metadata.labels).toMatchObject(labels);
        }
        const xgn = await get(['node', 't9k-xgn-0']);
        expect(xgn.spec.taints).toEqual([FOREIGN_TAINT, { ...XGN_TAINT }]);
        expect((await get(['node', 't9k-sgn-0'])).spec.taints).toEqual([FOREIGN_TAINT]);
      }, 30_000);
    });

    test('GPUNode and GPU objects appear for GpuNode- and GFD-labelled nodes, and the pool status converges', async () => {
      await eventually(async () => {
        const gpunodes = (await get(['gpunodes'])).items.map((n: Obj) => n.metadata.name).sort();
        expect(gpunodes).toEqual(['gfd-l4-0', 'gpu-a100-0', 'gpu-h100-0']);
        const gpus = (await get(['gpus'])).items as Obj[];
        expect(gpus).toHaveLength(18);
        expect(gpus.filter((g) => g.metadata.name.startsWith('gfd-l4-0-'))).toHaveLength(2);
        const pool = await get(['gpupool', 'default-pool']);
        expect(pool.status).toMatchObject({ totalNodes: 3, readyNodes: 3, totalGPUs: 18, phase: 'Running' });
      }, 60_000);
    });

    test('the seed 002 Deployment gives admitted, patched pods, and its TensorFusionWorkload status converges', async () => {
      await eventually(async () => {
        const pods = (await get(['pods', '-n', 'ml', '-l', `${ENABLED_LABEL}=true`])).items as Obj[];
        expect(pods).toHaveLength(1);
        const alloc = JSON.parse(pods[0].metadata.annotations[ALLOCATION_ANNOTATION]);
        expect(alloc.pool).toBe('default-pool');
        expect(pods[0].status.phase).toBe('Running');
        const python = pods[0].spec.containers.find((c: Obj) => c.name === 'python');
        expect(python.env.map((e: Obj) => e.name)).toContain('TENSOR_FUSION_ALLOCATION_ID');
        // Hard isolation: the kubelet gets the GPU and the share's MPS daemon from the node agent.
        expect(python.resources.limits['tensor-fusion.ai/share']).toBe('1');
        const workload = await get(['tensorfusionworkload', '-n', 'ml', 'pytorch-example']);
        expect(workload.apiVersion).toBe(API_VERSION);
        expect(workload.status).toMatchObject({ workerCount: 1, readyWorkers: 1, phase: 'Running' });
      }, 60_000);
    });

    test('a bad pod created with kubectl is refused, and kubectl prints our exact message', async () => {
      const bad = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'bad-qos',
          namespace: 'ml',
          labels: { [ENABLED_LABEL]: 'true' },
          annotations: { 'tensor-fusion.ai/qos': 'urgent', 'tensor-fusion.ai/is-local-gpu': 'true' },
        },
        spec: { containers: [{ name: 'main', image: 'example.io/app:1' }] },
      };
      const r = await cp().kubectl(['create', '-f', '-'], { input: JSON.stringify(bad) });
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(
        'Error from server (Forbidden): error when creating "STDIN": admission webhook "pods.tensor-fusion.ai" denied the request: ' +
          'tensor-fusion.ai/qos: got "urgent", expected one of low, medium, high, critical',
      );
      expect((await cp().kubectl(['get', 'pod', '-n', 'ml', 'bad-qos'])).code).toBe(1);
    });

    test('deleting a pod releases its share', async () => {
      const gpuInUse = async (): Promise<string[]> => {
        const gpus = (await get(['gpus'])).items as Obj[];
        return gpus
          .filter((g) => g.status?.available && JSON.stringify(g.status.available) !== JSON.stringify(g.status.capacity))
          .map((g) => g.metadata.name);
      };
      await eventually(async () => expect(await gpuInUse()).toHaveLength(1), 30_000);
      await cp().kubectlOk(['scale', 'deployment', '-n', 'ml', 'pytorch-example', '--replicas=0']);
      await eventually(async () => {
        expect((await get(['pods', '-n', 'ml', '-l', `${ENABLED_LABEL}=true`])).items).toHaveLength(0);
        expect(await gpuInUse()).toEqual([]);
      }, 60_000);
    });
  },
);

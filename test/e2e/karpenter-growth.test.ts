/**
 * A pool that grows, with a real autoscaler: Karpenter v1.15.0's KWOK provider on the real control
 * plane, a NodePool of 4-GPU A100 instances labelled as a cloud's GPU nodes are (GFD keys, the pool's
 * label). 40 quarter-GPU shares overflow the pool's one 4-GPU node by 24 shares, 6 GPUs: the growth
 * reconciler asks for 2 nodes (a placeholder each, whole GPUs through nvidia.com/gpu), Karpenter adds
 * those 2 (not one per pod: 24 pods taking whole GPUs would need 6), the new nodes join the pool with
 * no GpuNode declared, and every share runs where the extender placed it. Deleting the shares leaves
 * the new nodes empty, with nothing of ours on them, and Karpenter removes them. A share refused for a
 * quota asks for no node.
 */
import { ALLOCATION_ANNOTATION, GROWTH_POOL_LABEL } from '../../lib/model/metadata-keys';
import { API_VERSION } from '../../lib/model/group';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { describeControlPlane } from '../support/control-plane';
import type { Obj } from '../support/e2e';
import { a100Labels, controllerSuite, installWithPool, kwokNode, localGpuPod, RunningController } from '../support/e2e';
import { eventually } from '../runtime/fixtures';
import { GROWTH_BATCH, gpuInstanceType, gpuNodePool, NODEPOOL_LABEL, QUARTER_A100, readyNodeClass } from '../support/karpenter';

const { synth, user } = controllerSuite(600_000);

const POOL = 'grows';
const NS = 'burst';
const CAPPED = 'capped';
/** One 4-GPU instance type, and a NodePool of it whose template labels say its nodes have 4 A100s of the pool. */
const INSTANCE_TYPE = gpuInstanceType('a100x4', 4);
const NODE_POOL = gpuNodePool({ name: 'gpus', instanceType: 'a100x4', labels: a100Labels(POOL, 4), gpuLimit: 40 });

function share(name: string, namespace = NS): Obj {
  return localGpuPod({ name, namespace, pool: POOL, ...QUARTER_A100 });
}

describeControlPlane(
  'a pool that grows with Karpenter',
  { controllerManager: true, scheduler: true, karpenter: true, users: [user] },
  (cp) => {
    let ctl: RunningController;
    const items = async (args: string[]): Promise<Obj[]> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json'])).items;
    const apply = (docs: Obj[]) =>
      cp().kubectlOk(['apply', '--server-side', '-f', '-'], { input: docs.map((d) => JSON.stringify(d)).join('\n') });
    const nodeClaims = () => items(['nodeclaims']);
    const placeholders = () => items(['pods', '-A', '-l', GROWTH_POOL_LABEL]);

    beforeAll(async () => {
      const docs = [
        renderGpuPool(POOL, { tflopsOversellRatio: 100, growth: { gpusPerNode: 4 } }),
        kwokNode({ name: 'gpu-0', cpu: '32', labels: a100Labels(POOL, 4) }),
        ...[NS, CAPPED].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
      ];
      ctl = await installWithPool(cp(), synth, 'grows.yaml', docs, POOL, { totalNodes: 1, totalGPUs: 4 });
      await cp().startKarpenter([INSTANCE_TYPE], GROWTH_BATCH);
      await readyNodeClass(cp());
      await apply([NODE_POOL]);
    }, 300_000);

    afterAll(async () => {
      await ctl?.stop();
    });

    test('a share refused for a quota asks for no node', async () => {
      await apply([
        {
          apiVersion: API_VERSION,
          kind: 'GPUResourceQuota',
          metadata: { name: 'small', namespace: CAPPED },
          spec: { total: { requests: { vram: '10Gi' } } },
        },
      ]);
      await cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(share('over', CAPPED)) });
      await eventually(async () => {
        const [p] = await items(['pods', '-n', CAPPED]);
        expect(p.status.conditions?.find((c: Obj) => c.type === 'PodScheduled')?.message).toContain('GPUResourceQuota "small"');
      }, 120_000);
      // Longer than a Karpenter batch and a growth pass: still nothing asked for.
      await new Promise((r) => setTimeout(r, 15_000));
      expect(await placeholders()).toEqual([]);
      expect(await nodeClaims()).toEqual([]);
      await cp().kubectlOk(['delete', 'pods', '--all', '-n', CAPPED, '--grace-period=0', '--force']);
    });

    test('40 shares overflow one node: Karpenter adds the 2 nodes they need, the shares run where they were placed, and the empty nodes go', async () => {
      const pods = Array.from({ length: 40 }, (_, i) => share(`s-${i}`));
      await cp().kubectlOk(['create', '-f', '-'], { input: pods.map((p) => JSON.stringify(p)).join('\n') });
      await eventually(
        async () => {
          const all = await items(['pods', '-n', NS]);
          expect(all.filter((p) => p.status.phase === 'Running')).toHaveLength(40);
        },
        480_000,
        2_000,
      );
      const all = await items(['pods', '-n', NS]);
      for (const p of all) expect(JSON.parse(p.metadata.annotations[ALLOCATION_ANNOTATION]).node).toBe(p.spec.nodeName);
      const grown = (await items(['nodes', '-l', NODEPOOL_LABEL])).map((n) => n.metadata.name).sort();
      // 24 quarter-GPU shares past the 16 gpu-0 holds: 6 GPUs, 2 nodes of 4.
      expect(grown).toHaveLength(2);
      expect(await nodeClaims()).toHaveLength(2);
      expect(new Set(all.map((p) => p.spec.nodeName))).toEqual(new Set(['gpu-0', ...grown]));
      // The new nodes joined the pool by their labels: GPUNodes and GPUs without anyone declaring them.
      await eventually(async () => {
        const status = JSON.parse(await cp().kubectlOk(['get', 'gpupool', POOL, '-o', 'json'])).status;
        expect(status).toMatchObject({ totalNodes: 3, totalGPUs: 12 });
        expect(await placeholders()).toEqual([]);
      }, 120_000);

      await cp().kubectlOk(['delete', 'pods', '--all', '-n', NS, '--wait=false']);
      await eventually(
        async () => {
          expect(await nodeClaims()).toEqual([]);
          expect(await items(['nodes', '-l', NODEPOOL_LABEL])).toEqual([]);
          expect((await items(['gpunodes'])).map((g) => g.metadata.name)).toEqual(['gpu-0']);
        },
        300_000,
        2_000,
      );
    });
  },
);

/**
 * A DRA pool and Karpenter v1.15.0 simulating DRA claims (`IGNORE_DRA_REQUESTS=false`), with its KWOK
 * provider on the real control plane (docs/growth.md, "DRA pools"). 40 quarter-GPU shares (claims of
 * 20Gi of an 80Gi A100) overflow the pool's one 4-GPU node: it takes 16, 4 per GPU by consumable
 * capacity, and 24 wait, 6 GPUs' worth, 2 new nodes of 4.
 *
 * Karpenter adds none: it learns a node's future devices only from its cloud provider's instance types
 * (`InstanceType.DynamicResources`), which the KWOK provider never fills, and no NodeOverlay or object
 * of ours can supply. The first test pins that, with Karpenter's own words. The second adds the two
 * nodes as Karpenter would (NodeClaims of the NodePool, launched by Karpenter's KWOK provider) to show
 * the rest of the way: each new node gets the slice our agent publishes, from the agent's own code, as
 * soon as it appears; the 24 claims run there; once they are gone Karpenter removes the empty nodes,
 * and the garbage collector their slices (owned by the node, as the agent's are).
 */
import type { GPUPool } from '../../lib/api';
import { poolMembershipLabel } from '../../lib/model/metadata-keys';
import { DRA_NAMES, renderController } from '../../lib/render/controller';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { describeControlPlane } from '../support/control-plane';
import { publishSlicesOnNewNodes } from '../support/dra-slices';
import { a100Labels, controllerSuite, installWithPool, kwokNode, localGpuPod, type Obj, RunningController } from '../support/e2e';
import { gpuNodePool, kwokInstanceType, NODE_CLASS_REF, NODEPOOL_LABEL, startKarpenterWith } from '../support/karpenter';
import { eventually } from '../runtime/fixtures';

const { synth, namespace, user } = controllerSuite(600_000);

const POOL = 'dra-grows';
const NS = 'dra-burst';
const NODE_POOL = 'dra-gpus';
/** Karpenter's words for a pod whose claims no device of a node it could add takes (scheduling/nodeclaim.go, dynamicresources/allocator.go). */
const NO_DEVICES = 'allocating dynamic resources, no instance type can satisfy the allocation';

/** A node as Karpenter makes one for its NodePool: a NodeClaim that its KWOK provider launches. */
function nodeClaim(name: string): Obj {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { [NODEPOOL_LABEL]: NODE_POOL, ...a100Labels(POOL, 4) } },
    spec: {
      nodeClassRef: NODE_CLASS_REF,
      requirements: [
        { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['a100x4'] },
        { key: NODEPOOL_LABEL, operator: 'In', values: [NODE_POOL] },
      ],
      expireAfter: 'Never',
    },
  };
}

describeControlPlane(
  'a DRA pool with Karpenter simulating DRA',
  { controllerManager: true, scheduler: true, karpenter: true, users: [user] },
  (cp) => {
    let ctl: RunningController;
    let publisher: ReturnType<typeof publishSlicesOnNewNodes>;
    const pool = renderGpuPool(POOL, { shareDelivery: 'DRA', tflopsOversellRatio: 100 }) as unknown as GPUPool;
    const items = async (args: string[]): Promise<Obj[]> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json'])).items;
    const pods = () => items(['pods', '-n', NS]);
    const perNode = (all: Obj[]) => {
      const out: Record<string, number> = {};
      for (const p of all) out[p.spec.nodeName ?? ''] = (out[p.spec.nodeName ?? ''] ?? 0) + 1;
      return out;
    };

    beforeAll(async () => {
      const draInstall = renderController({ dra: true, namespace, image: 'example.io/tf:1' }).filter(
        (o) => o.kind === 'DeviceClass' || Object.values(DRA_NAMES).includes(o.metadata.name as never),
      );
      const docs = [
        ...draInstall,
        pool as unknown as Obj,
        kwokNode({ name: 'gpu-0', cpu: '32', labels: a100Labels(POOL, 4) }),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      ];
      ctl = await installWithPool(cp(), synth, 'dra-grows.yaml', docs as Obj[], POOL, { totalNodes: 1, totalGPUs: 4 });
      // Every node of the pool, gpu-0 and those added later, as its agent would.
      publisher = publishSlicesOnNewNodes(cp(), `${poolMembershipLabel(POOL)}=true`, pool);
      await eventually(async () => expect([...publisher.published]).toEqual(['gpu-0']), 30_000);
      await startKarpenterWith(
        cp(),
        [kwokInstanceType('a100x4', { cpu: '32', memory: '256Gi', pods: '110' })],
        { IGNORE_DRA_REQUESTS: 'false', BATCH_IDLE_DURATION: '5s', BATCH_MAX_DURATION: '20s' },
        gpuNodePool(NODE_POOL, 'a100x4', a100Labels(POOL, 4), { cpu: '320' }),
      );
    }, 300_000);

    afterAll(async () => {
      await publisher?.stop();
      await ctl?.stop();
    });

    test("40 shares overflow the pool's node by 24 claims: Karpenter, knowing no device of a node it could add, adds none and says why", async () => {
      const burst = Array.from({ length: 40 }, (_, i) =>
        localGpuPod({ name: `s-${i}`, namespace: NS, pool: POOL, tflops: '10', vram: '20Gi' }),
      );
      await cp().kubectlOk(['create', '-f', '-'], { input: burst.map((p) => JSON.stringify(p)).join('\n') });
      await eventually(
        async () => {
          const all = await pods();
          expect(perNode(all)).toEqual({ 'gpu-0': 16, '': 24 });
          for (const p of all.filter((x) => !x.spec.nodeName))
            expect(p.status.conditions.find((c: Obj) => c.type === 'PodScheduled').message).toContain('cannot allocate all claims');
          // Karpenter simulated every waiting claim against the NodePool's instance type, more than once.
          const log = cp().logTail('karpenter', 2_000);
          for (const p of all.filter((x) => !x.spec.nodeName)) {
            const refusals = log
              .split('\n')
              .filter((l) => l.includes(`"name":"${p.metadata.name}","namespace":"${NS}"`) && l.includes(NO_DEVICES));
            expect(refusals.length).toBeGreaterThanOrEqual(2);
          }
        },
        180_000,
        5_000,
      );
      expect(await items(['nodeclaims'])).toEqual([]);
      expect((await items(['nodes'])).map((n) => n.metadata.name)).toEqual(['gpu-0']);
    });

    test('two nodes added to the NodePool get the slices our agent publishes, the 24 claims run there, and once they are gone Karpenter removes the empty nodes and the garbage collector their slices', async () => {
      await cp().kubectlOk(['create', '-f', '-'], {
        input: ['by-hand-0', 'by-hand-1'].map((n) => JSON.stringify(nodeClaim(n))).join('\n'),
      });
      await eventually(
        async () => {
          const all = await pods();
          expect(all.filter((p) => p.status.phase === 'Running')).toHaveLength(40);
          const grown = (await items(['nodes', '-l', NODEPOOL_LABEL])).map((n) => n.metadata.name).sort();
          expect(grown).toHaveLength(2);
          // kube-scheduler's first fit: one new node's 4 GPUs take 16 claims, the other node the last 8.
          expect(Object.values(perNode(all)).sort((a, b) => a - b)).toEqual([8, 16, 16]);
          expect([...publisher.published].sort()).toEqual(['gpu-0', ...grown]);
        },
        300_000,
        2_000,
      );
      // The new nodes joined the pool by their labels, with no GpuNode declared.
      await eventually(async () => {
        const status = JSON.parse(await cp().kubectlOk(['get', 'gpupool', POOL, '-o', 'json'])).status;
        expect(status).toMatchObject({ totalNodes: 3, totalGPUs: 12 });
      }, 120_000);

      await cp().kubectlOk(['delete', 'pods', '--all', '-n', NS, '--wait=false']);
      await eventually(
        async () => {
          expect(await items(['nodeclaims'])).toEqual([]);
          expect(await items(['nodes', '-l', NODEPOOL_LABEL])).toEqual([]);
          expect((await items(['resourceslices'])).map((s) => s.spec.nodeName)).toEqual(['gpu-0']);
          expect((await items(['gpunodes'])).map((g) => g.metadata.name)).toEqual(['gpu-0']);
          expect(await items(['resourceclaims', '-n', NS])).toEqual([]);
        },
        300_000,
        2_000,
      );
    });
  },
);

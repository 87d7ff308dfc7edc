/**
 * The quota race of the quota suite (test/e2e/quotas.test.ts) on the DRA path, on the real control
 * plane: kube-controller-manager makes each pod's claim from the webhook's template, kube-scheduler's
 * DRA allocator picks a device of the KWOK nodes' ResourceSlices (published as the node agent
 * publishes them, with room for every pod), and the extender keeps the namespace quota. Pods created
 * at once against room for half by quota: exactly half bound, their claims the only ones allocated;
 * deleting some lets exactly as many more bind.
 */
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { describeControlPlane } from '../support/control-plane';
import {
  a100Labels,
  controllerSuite,
  deleteAllPods,
  installWithPool,
  kwokNode,
  localGpuPod,
  type Obj,
  RunningController,
  writeYaml,
} from '../support/e2e';
import { a100Slice, draInstall } from '../support/dra';
import { quotaRace } from '../support/quota-race';

const { synth, namespace, user } = controllerSuite(120_000);

const POOL = 'dra-quota-pool';
const NS = 'team-a';
/** Twelve nodes of two 80 GiB A100s: room for 1,320 pods (110 a node) of 1 TFLOPS and 1 GiB. */
const NODES = Array.from({ length: 12 }, (_, i) => `dq-${i}`);
/** Pods of the race, as in the quota suite (its time against the device-plugin race's: docs/dra.md). */
const RACE_PODS = 1000;

describeControlPlane('namespace GPU quotas on the DRA path', { controllerManager: true, kwok: true, users: [user] }, (cp) => {
  let ctl: RunningController;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));

  beforeAll(async () => {
    const pool = renderGpuPool(POOL, { shareDelivery: 'DRA', tflopsOversellRatio: 100 }) as Obj;
    const docs = [
      ...draInstall(namespace),
      pool,
      ...NODES.map((name) => kwokNode({ name, cpu: '64', labels: a100Labels(POOL, 2) })),
      ...NODES.map((name) => a100Slice(name, pool, 2)),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    ];
    ctl = await installWithPool(cp(), synth, 'dra-quota-nodes.yaml', docs, POOL, { totalNodes: 12, totalGPUs: 24 });
  }, 180_000);

  afterAll(async () => {
    await deleteAllPods(cp(), NS);
    await ctl?.stop();
  }, 300_000);

  test(`${RACE_PODS} DRA pods created at once against room for ${RACE_PODS / 2} by quota: exactly ${RACE_PODS / 2} bound, the rest Pending with the reason; deleting ${RACE_PODS / 10} lets exactly ${RACE_PODS / 10} more bind`, async () => {
    await quotaRace({
      cp: cp(),
      namespace: NS,
      pods: RACE_PODS,
      deleted: RACE_PODS / 10,
      pod: (name) => localGpuPod({ name, namespace: NS, pool: POOL, tflops: '1', vram: '1Gi', cpu: '10m' }),
      apply: (docs) => cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'quota.yaml', docs)]),
      timeoutMs: 480_000,
      checkBound: async (bound) => {
        // Each bound pod's claim is allocated on its node (kube-scheduler giving up on a bind must not
        // leave a bound pod without its device: docs/dra.md), and no GPU holds more than its 80 GiB
        // allow. The extender packs DRA pods (its pool's mode), so a GPU may fill; 500 pods of the 1,320
        // the nodes hold never make capacity the bound.
        const claims = ((await get(['resourceclaims', '-n', NS])).items as Obj[]).filter((c) => c.status?.allocation);
        const allocatedOn = new Map(claims.map((c) => [c.metadata.ownerReferences[0].name, c.status.allocation.devices.results[0].pool]));
        expect(bound.filter((p) => allocatedOn.get(p.metadata.name) !== p.spec.nodeName).map((p) => p.metadata.name)).toEqual([]);
        const perGpu = new Map<string, number>();
        for (const c of claims) {
          const r = c.status.allocation.devices.results[0];
          perGpu.set(`${r.pool}/${r.device}`, (perGpu.get(`${r.pool}/${r.device}`) ?? 0) + 1);
        }
        expect(Math.max(...perGpu.values())).toBeLessThanOrEqual(80);
      },
    });
  }, 1_200_000);
});

/**
 * Issue 53 on the real control plane: a DRA pool's pod gets its claim template from the webhook,
 * kube-controller-manager makes its claim, and kube-scheduler's allocator gives it a device of the
 * node's ResourceSlice (hand-published here as the node agent publishes one); the extender binds it
 * with no GPU record of its own. Claims, templates and pods that would take a share around the
 * webhook are refused by the install's policies. No kubelet: the node is KWOK's.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CLI_BUNDLE_PATH } from '../../lib/contract/bundle';
import { CONTROLLER_ENV } from '../../lib/contract/env';
import { ALLOCATION_ANNOTATION } from '../../lib/model/metadata-keys';
import { binaryPath } from '../envtest/assets';
import { claimTemplateValidations, claimValidations, draPodValidations, DRA_NAMES } from '../../lib/render/controller';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { describeControlPlane, policyDenial } from '../support/control-plane';
import { a100Labels, controllerSuite, installWithPool, kwokNode, localGpuPod, type Obj, RunningController } from '../support/e2e';
import { draInstall } from '../support/dra';
import { eventually } from '../runtime/fixtures';

const { synth, namespace, user } = controllerSuite(120_000);

const POOL = 'dra';
const NS = 'dra-apps';
const NODE = 'dra-0';

/** The node's two A100s as the agent publishes them (pool = node, one device per GPU, consumable capacity). */
function resourceSlice(node: string): Obj {
  const capacity = (value: string, unit: string) => ({ value, requestPolicy: { default: unit, validRange: { min: unit, step: unit } } });
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name: `${node}-gpu.tensor-fusion.ai` },
    spec: {
      driver: 'gpu.tensor-fusion.ai',
      nodeName: node,
      pool: { name: node, generation: 1, resourceSliceCount: 1 },
      devices: [0, 1].map((i) => ({
        name: `gpu-${i}`,
        allowMultipleAllocations: true,
        attributes: { uuid: { string: `GPU-${node}-${i}` }, model: { string: 'A100' }, index: { int: i } },
        capacity: { tflops: capacity('312', '1'), memory: capacity('80Gi', '1Gi') },
      })),
    },
  };
}

describeControlPlane('DRA delivery (issue 53)', { controllerManager: true, kwok: true, users: [user] }, (cp) => {
  let ctl: RunningController;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
  const create = (o: Obj) => cp().kubectl(['create', '-f', '-'], { input: JSON.stringify(o) });
  /** `kubectl tf ARGS` through kubectl's plugin lookup, as users run it. */
  const kubectlTf = async (args: string[]): Promise<{ code: number; stdout: string }> => {
    const bin = mkdtempSync(path.join(tmpdir(), 'kubectl-tf-'));
    symlinkSync(path.resolve(__dirname, '../..', CLI_BUNDLE_PATH), path.join(bin, 'kubectl-tf'));
    return new Promise((resolve) =>
      execFile(
        binaryPath('kubectl'),
        ['tf', ...args],
        { env: { ...process.env, KUBECONFIG: cp().kubeconfig, PATH: `${bin}:${process.env.PATH}` }, timeout: 60_000 },
        (err, stdout) => resolve({ code: err ? 1 : 0, stdout }),
      ),
    );
  };
  const claimOf = async (pod: string): Promise<Obj> => {
    const claims = (await get(['resourceclaims', '-n', NS])).items as Obj[];
    const mine = claims.filter((c) => c.metadata.ownerReferences?.some((o: Obj) => o.kind === 'Pod' && o.name === pod));
    expect(mine).toHaveLength(1);
    return mine[0];
  };

  beforeAll(async () => {
    const docs = [
      ...draInstall(namespace),
      renderGpuPool(POOL, { shareDelivery: 'DRA', tflopsOversellRatio: 100 }),
      kwokNode({ name: NODE, cpu: '8', labels: a100Labels(POOL, 2) }),
      resourceSlice(NODE),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    ];
    // The controller as the install with `dra` runs it: watching claims (CONTROLLER_ENV.dra).
    ctl = await installWithPool(
      cp(),
      synth,
      'dra.yaml',
      docs as Obj[],
      POOL,
      { totalNodes: 1, totalGPUs: 2 },
      { env: { [CONTROLLER_ENV.dra]: 'true' } },
    );
  }, 180_000);

  afterAll(async () => {
    await ctl?.stop();
  });

  test('the pod gets its claim from the template the webhook made; kube-scheduler allocates it on the slice; the extender binds it', async () => {
    expect((await create(localGpuPod({ name: 'one', namespace: NS, pool: POOL, tflops: '10', vram: '4500Mi' }))).code).toBe(0);
    const pod = await get(['pod', '-n', NS, 'one']);
    const template = pod.spec.resourceClaims[0].resourceClaimTemplateName;
    expect(pod.spec.resourceClaims).toEqual([{ name: 'tensor-fusion-gpu', resourceClaimTemplateName: template }]);
    expect(pod.spec.containers[0].resources.claims).toEqual([{ name: 'tensor-fusion-gpu' }]);
    expect((await get(['resourceclaimtemplate', '-n', NS, template])).spec.spec.devices.requests[0].exactly).toMatchObject({
      deviceClassName: 'gpu.tensor-fusion.ai',
      count: 1,
      capacity: { requests: { tflops: '10', memory: '4500Mi' } },
    });
    await eventually(async () => {
      const claim = await claimOf('one');
      expect(claim.status?.allocation?.devices?.results).toEqual([
        expect.objectContaining({
          request: 'gpu',
          driver: 'gpu.tensor-fusion.ai',
          pool: NODE,
          device: 'gpu-0',
          // Rounded up to the slice's 1Gi step.
          consumedCapacity: { tflops: '10', memory: '5Gi' },
        }),
      ]);
      const bound = await get(['pod', '-n', NS, 'one']);
      expect(bound.spec.nodeName).toBe(NODE);
      expect(bound.metadata.annotations[ALLOCATION_ANNOTATION]).toBeUndefined();
    }, 60_000);
  });

  test("the claim's consumed capacity leaves its GPU's and its pool's status, and kubectl tf top shows the share on its GPU", async () => {
    // 'one' consumed 10 TFLOPS and 5Gi of gpu-0 (the test above).
    await eventually(async () => {
      expect((await get(['gpu', `${NODE}-gpu-0`])).status.available).toEqual({ tflops: '302', vram: '75Gi' });
      expect((await get(['gpu', `${NODE}-gpu-1`])).status.available).toEqual({ tflops: '312', vram: '80Gi' });
      expect((await get(['gpupool', POOL])).status).toMatchObject({ totalTFlops: '624', availableTFlops: '614', availableVRAM: '155Gi' });
    }, 60_000);
    const top = await kubectlTf(['top', 'gpus']);
    expect(top.code).toBe(0);
    expect(top.stdout.split('\n')).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          new RegExp(`^${NODE}-gpu-0\\s+${NODE}\\s+${POOL}\\s+A100\\s+1\\s+312\\s+10 \\(3%\\)\\s+10\\s+-\\s+80Gi\\s+5Gi \\(6%\\)\\s+-$`),
        ),
        expect.stringMatching(new RegExp(`^${NODE}-gpu-1\\s+${NODE}\\s+${POOL}\\s+A100\\s+0\\s+312\\s+0 \\(0%\\)`)),
      ]),
    );
  });

  test('gpu-count and gpu-model reach the claim as a count of distinct devices and a CEL selector the API server compiles', async () => {
    const annotations = { 'tensor-fusion.ai/gpu-count': '2', 'tensor-fusion.ai/gpu-model': 'A100' };
    expect((await create(localGpuPod({ name: 'two', namespace: NS, pool: POOL, tflops: '5', vram: '1Gi', annotations }))).code).toBe(0);
    await eventually(async () => {
      const results = (await claimOf('two')).status?.allocation?.devices?.results as Obj[];
      expect(results.map((r) => r.device).sort()).toEqual(['gpu-0', 'gpu-1']);
    }, 60_000);
  });

  test('a claim that fits no device waits Pending with kube-scheduler\'s "cannot allocate all claims"', async () => {
    expect((await create(localGpuPod({ name: 'big', namespace: NS, pool: POOL, tflops: '10', vram: '100Gi' }))).code).toBe(0);
    await eventually(async () => {
      const pod = await get(['pod', '-n', NS, 'big']);
      const scheduled = (pod.status.conditions as Obj[]).find((c) => c.type === 'PodScheduled');
      expect(scheduled).toMatchObject({ status: 'False', reason: 'Unschedulable' });
      expect(scheduled!.message).toContain('cannot allocate all claims');
    }, 60_000);
    // `kubectl tf why`, through kubectl's plugin lookup: which capacity was short, from the slice and the claims.
    const why = await kubectlTf(['why', 'big', '-n', NS]);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain(
      "No node of pool dra can allocate its claim (1 node), counting the GPUs' ResourceSlices less the allocated claims:\n  1 node: not enough free VRAM on any GPU\n",
    );
  });

  test('a hand-made claim or template of our DeviceClass, and a pod naming our template without a share, are refused', async () => {
    const devices = { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.tensor-fusion.ai', count: 1 } }] };
    const claim = await create({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name: 'mine', namespace: NS },
      spec: { devices },
    });
    expect(claim.code).not.toBe(0);
    expect(claim.stderr).toContain(policyDenial(DRA_NAMES.claimPolicy, claimValidations()[0].message));
    const template = await create({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'mine', namespace: NS },
      spec: { spec: { devices } },
    });
    expect(template.code).not.toBe(0);
    expect(template.stderr).toContain(policyDenial(DRA_NAMES.templatePolicy, claimTemplateValidations(namespace)[0].message));
    // Another class is none of ours.
    const other = { requests: [{ name: 'x', exactly: { deviceClassName: 'someone-else', count: 1 } }] };
    expect(
      (
        await create({
          apiVersion: 'resource.k8s.io/v1',
          kind: 'ResourceClaim',
          metadata: { name: 'theirs', namespace: NS },
          spec: { devices: other },
        })
      ).code,
    ).toBe(0);
    const existing = (await get(['resourceclaimtemplates', '-n', NS])).items[0].metadata.name;
    const sneaky = await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'sneaky', namespace: NS },
      spec: {
        resourceClaims: [{ name: 'gpu', resourceClaimTemplateName: existing }],
        containers: [{ name: 'main', image: 'example.io/app:1', resources: { claims: [{ name: 'gpu' }] } }],
      },
    });
    expect(sneaky.code).not.toBe(0);
    expect(sneaky.stderr).toContain(policyDenial(DRA_NAMES.podPolicy, draPodValidations()[0].message));
  });
});

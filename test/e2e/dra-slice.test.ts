/**
 * The ResourceSlice the node agent publishes (lib/runtime/shared/dra/resource-slice.ts), on the real
 * kube-apiserver and kube-scheduler v1.36: the API server accepts it as written (request policies,
 * attributes, a device taint), and kube-scheduler's DRA allocator gives a claim the ready GPU, not
 * the first one listed when that one is tainted NoSchedule, consuming its request rounded up to the
 * policy's steps (whole TFLOPS: the allocator rounds in whole units).
 */
import { DRA_DEVICE_CLASS, DRA_DRIVER } from '../../lib/model/dra';
import { resourceSlice } from '../../lib/runtime/shared/dra/resource-slice';
import { POOL_NAME_MAX } from '../../lib/model/name-checks';
import { describeControlPlane } from '../support/control-plane';
import { a100Labels } from '../support/control-plane/install';
import { agentSlice } from '../support/dra-slices';
import type { Obj } from '../support/e2e';
import { eventually } from '../runtime/fixtures';

const NODE = 'dra-0';
const GI = 2 ** 30;
const gpu = (index: number, notReady?: string) => ({
  uuid: `GPU-${index}`,
  model: 'A100',
  index,
  minor: 1 - index,
  tflops: 312,
  vram: 80 * GI,
  ...(notReady ? { notReady } : {}),
});
const pool = {
  metadata: { name: 'p' },
  spec: { nodeManagerConfig: {}, capacityConfig: { oversubscription: { tflopsOversellRatio: 200 } } },
};

describeControlPlane('the node agent ResourceSlice on the real API server and scheduler', { scheduler: true }, (cp) => {
  const create = (o: object) => cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(o) });
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));

  test('a claim gets the ready GPU of the slice, its request rounded up to the policy steps', async () => {
    await create({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'DeviceClass',
      metadata: { name: DRA_DEVICE_CLASS },
      spec: { selectors: [{ cel: { expression: `device.driver == "${DRA_DRIVER}"` } }] },
    });
    await create({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } });
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const resources = { cpu: '32', memory: '256Gi', pods: '110' };
    await cp().kubectlOk([
      'patch',
      'node',
      NODE,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({
        status: {
          capacity: resources,
          allocatable: resources,
          conditions: [
            { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'fake', lastHeartbeatTime: now, lastTransitionTime: now },
          ],
        },
      }),
    ]);
    // GPU 0 first in the slice, but not ready.
    await create(resourceSlice({ nodeName: NODE, pool, gpus: [gpu(0, 'MpsDaemonNotAnswering'), gpu(1)] }));
    const published = await get(['resourceslice', `${NODE}-${DRA_DRIVER}`]);
    expect(
      published.spec.devices.map((d: Obj) => [d.name, d.capacity.tflops.value, d.capacity.memory.value, d.taints?.[0]?.effect]),
    ).toEqual([
      ['gpu-0', '624', '80Gi', 'NoSchedule'],
      ['gpu-1', '624', '80Gi', undefined],
    ]);
    await create({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name: 'c1', namespace: 'default' },
      spec: {
        devices: {
          requests: [
            {
              name: 'gpu',
              exactly: {
                deviceClassName: DRA_DEVICE_CLASS,
                allocationMode: 'ExactCount',
                count: 1,
                capacity: { requests: { tflops: '10.5', memory: '4500Mi' } },
              },
            },
          ],
        },
      },
    });
    await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p1', namespace: 'default' },
      spec: {
        tolerations: [{ operator: 'Exists' }],
        resourceClaims: [{ name: 'gpu', resourceClaimName: 'c1' }],
        containers: [{ name: 'main', image: 'registry.invalid/none:0', resources: { claims: [{ name: 'gpu' }] } }],
      },
    });
    await eventually(async () => {
      const claim = await get(['resourceclaim', '-n', 'default', 'c1']);
      const [r] = claim.status?.allocation?.devices?.results ?? [];
      expect([r?.pool, r?.device, r?.consumedCapacity]).toEqual([NODE, 'gpu-1', { tflops: '11', memory: '4500Mi' }]);
      expect(typeof r.shareID).toBe('string');
    }, 60_000);
    await eventually(async () => expect((await get(['pod', '-n', 'default', 'p1'])).spec.nodeName).toBe(NODE), 30_000);
  }, 120_000);

  // Karpenter's KWOK node names run to 60 characters and more: the slice the suites publish for such a
  // node was refused (a UUID attribute of `GPU-<node>-<index>` is over 64), and the claims it would
  // have taken waited for good (test/e2e/karpenter-dra-growth.test.ts in CI).
  test('the slice the suites publish for a KWOK node is accepted for a 63-character node name in a pool of the longest name', async () => {
    const node = 'n'.repeat(63);
    const longPool = { metadata: { name: 'p'.repeat(POOL_NAME_MAX) }, spec: pool.spec };
    const slice = agentSlice(
      { metadata: { name: node, uid: '00000000-0000-4000-8000-000000000000', labels: a100Labels(longPool.metadata.name, 4) } },
      longPool,
    );
    await create(slice);
    const published = await get(['resourceslice', slice.metadata.name]);
    expect(published.spec.devices.map((d: Obj) => d.attributes.uuid.string)).toEqual(
      slice.spec.devices.map((d) => (d.attributes.uuid as { string: string }).string),
    );
    expect(new Set(published.spec.devices.map((d: Obj) => d.attributes.uuid.string)).size).toBe(4);
  }, 60_000);

  test("the agent's slice for a node of the longest name (253 characters) is accepted, named within 253", async () => {
    const node = `${'a'.repeat(61)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}`;
    const slice = resourceSlice({ nodeName: node, pool, gpus: [gpu(0), gpu(1)] });
    await create(slice);
    const published = await get(['resourceslice', slice.metadata.name]);
    expect([published.metadata.name.length, published.spec.nodeName, published.spec.pool.name]).toEqual([253, node, node]);
  }, 60_000);
});

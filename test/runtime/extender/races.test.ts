/**
 * The extender's state against the orderings that once over-committed a GPU: a reservation expiring
 * while its Binding is on the wire, a relist whose response predates a resized share's record, and a
 * Binding whose answer was lost.
 */
import { ALLOCATION_ANNOTATION, ENABLED_LABEL } from '../../../lib/model/metadata-keys';
import { ApiError, Cluster, K8sObject } from '../../../lib/runtime/kube/cluster';
import { RESOURCES } from '../../../lib/runtime/kube/resources';
import { Extender } from '../../../lib/runtime/extender/extender';
import { BIND_UNCONFIRMED } from '../../../lib/runtime/extender/node-reasons';
import { PlacementState } from '../../../lib/runtime/extender/placement-state';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { eventually } from '../fixtures';
import { GiB, seedPool } from '../webhook/fixtures';
import { ExtenderUnderTest, shareOf, sharePod, startExtender } from './fixtures';

const NODE = 'p-node-0';
const GPU = 'p-node-0-gpu-0';

let api: ApiServerDouble;
let x: ExtenderUnderTest;
beforeEach(async () => {
  api = await startApiServer();
  seedPool(api, { name: 'p', nodes: 1, gpusPerNode: 1, vram: 80 * GiB, tflops: 100 });
  x = await startExtender(api);
});
afterEach(async () => {
  await Promise.all(x.informers.map((i) => i.stop()));
  await api.stop();
});

const newPod = (name: string, vram: number): K8sObject => api.put('pods', sharePod(name, shareOf(vram))) as K8sObject;

const filter = async (ext: Extender, pod: K8sObject) => (await ext.filter({ Pod: pod, NodeNames: [NODE], Nodes: null })).NodeNames;
const bind = (ext: Extender, pod: K8sObject) =>
  ext.bind({ PodName: pod.metadata.name!, PodNamespace: 'default', PodUID: pod.metadata.uid!, Node: NODE });

test('a reservation does not expire while its Binding is on the wire: a pod filtered meanwhile is turned away', async () => {
  let t = 1_000_000;
  const now = () => t;
  const [pools, gpuNodes, gpus, pods, nodes] = x.informers;
  const state = new PlacementState({ sources: { nodes, pools, gpuNodes, gpus, pods } as never, now, reservationTtlMs: 60_000 });
  const real = clusterFor(api, 'extender');
  let meanwhile: (() => Promise<void>) | undefined;
  const cluster = {
    list: real.list.bind(real),
    get: real.get.bind(real),
    bind: async (...args: Parameters<Cluster['bind']>) => {
      await meanwhile?.();
      return real.bind(...args);
    },
  } as unknown as Cluster;
  const ext = new Extender({ state, cluster, pods, now });
  const a = newPod('a', 50 * GiB);
  expect(await filter(ext, a)).toEqual([NODE]);
  // The bind comes just before the reservation's time is up (a slow Permit), and takes 20 ms.
  t += 59_990;
  const b = newPod('b', 50 * GiB);
  let bFiltered: string[] | null | undefined;
  meanwhile = async () => {
    meanwhile = undefined;
    t += 20;
    bFiltered = await filter(ext, b);
  };
  expect(await bind(ext, a)).toEqual({ Error: '' });
  expect(bFiltered).toEqual([]);
  expect(state.current().gpuUsage(GPU)!.vram.requested).toBe(50 * GiB);
});

test('a bind whose reservation went meanwhile still counts the share it recorded', async () => {
  const a = newPod('a', 50 * GiB);
  expect(await filter(x.extender, a)).toEqual([NODE]);
  const reserved = x.state.startBinding(a.metadata.uid!)!;
  x.state.cancel(a.metadata.uid!);
  expect(x.state.current().gpuUsage(GPU)!.vram.requested).toBe(0);
  x.state.commit(a.metadata.uid!, reserved);
  expect(x.state.current().gpuUsage(GPU)!.vram.requested).toBe(50 * GiB);
  expect(x.state.holding(a.metadata.uid!)).toEqual(reserved);
});

test('a bind that lands while the pod holds another reservation counts the share once', async () => {
  const a = newPod('a', 50 * GiB);
  expect(await filter(x.extender, a)).toEqual([NODE]);
  const first = x.state.startBinding(a.metadata.uid!)!;
  // Reserved again meanwhile, for other amounts.
  const again = {
    id: a.metadata.uid!,
    pool: 'p',
    qos: 'medium' as const,
    gpuCount: 1,
    tflopsRequest: 10,
    tflopsLimit: 20,
    vramRequest: 30 * GiB,
    vramLimit: 30 * GiB,
    cpu: 0,
    memory: 0,
  };
  expect(x.state.reserve(again, NODE).ok).toBe(true);
  x.state.commit(a.metadata.uid!, first);
  expect(x.state.current().gpuUsage(GPU)!.vram.requested).toBe(50 * GiB);
  expect(x.state.current().allocation(a.metadata.uid!)).toEqual(first);
  expect(x.state.isReserved(a.metadata.uid!)).toBe(false);
});

describe('a relist while a share is resized in place', () => {
  const grown = { tflopsRequest: 10, tflopsLimit: 20, vramRequest: 60 * GiB, vramLimit: 60 * GiB };

  async function placed(): Promise<string> {
    const a = newPod('a', 30 * GiB);
    expect(await filter(x.extender, a)).toEqual([NODE]);
    expect(await bind(x.extender, a)).toEqual({ Error: '' });
    await eventually(async () => expect(x.informers[3].get('default/a')?.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeTruthy());
    return a.metadata.uid!;
  }
  const list = () => clusterFor(api, 'extender').list(RESOURCES.pods, { labelSelector: `${ENABLED_LABEL}=true` });

  test('a list sent before the resize keeps the grown share', async () => {
    const uid = await placed();
    const listedAt = Date.now() - 1;
    const stale = await list();
    expect(x.state.resize(uid, grown, true)!.ok).toBe(true);
    expect(x.state.resize(uid, grown)!.ok).toBe(true);
    x.state.resetFromPods(stale.items, listedAt);
    expect(x.state.holding(uid)!.vramRequest).toBe(60 * GiB);
    // So a pod that would over-commit the GPU is turned away.
    expect(await filter(x.extender, newPod('b', 45 * GiB))).toEqual([]);
  });

  test('a list sent while the record is being written keeps the grown share, until a later list after it lands', async () => {
    const uid = await placed();
    expect(x.state.resize(uid, grown, true)!.ok).toBe(true);
    const listedAt = Date.now() + 1;
    x.state.resetFromPods((await list()).items, listedAt);
    expect(x.state.holding(uid)!.vramRequest).toBe(60 * GiB);
    // The patch failed: back to the old size, which any later list shows.
    expect(x.state.resize(uid, { ...grown, vramRequest: 30 * GiB, vramLimit: 30 * GiB })!.ok).toBe(true);
    x.state.resetFromPods((await list()).items, Date.now() + 1);
    expect(x.state.holding(uid)!.vramRequest).toBe(30 * GiB);
  });
});

test('a bind reads the pod of the bound UID when the cache still has the one it replaced', async () => {
  const a = newPod('a', 50 * GiB);
  const replaced = { ...a, metadata: { ...a.metadata, uid: 'the-replaced-pod', annotations: {} } };
  const [, , , pods] = x.informers;
  const stale = Object.assign(Object.create(pods), { get: () => replaced });
  // No reservation (the extender restarted since its filter): the share is placed at bind.
  const ext = new Extender({ state: x.state, cluster: clusterFor(api, 'extender'), pods: stale });
  expect(await bind(ext, a)).toEqual({ Error: '' });
  expect(JSON.parse(api.getObject('pods', 'a', 'default')!.metadata.annotations[ALLOCATION_ANNOTATION]).id).toBe(a.metadata.uid);
});

describe('a Binding whose answer is lost', () => {
  /** What one Binding request does: `send` is the real one, to the double. */
  type Step = (send: () => Promise<void>) => Promise<void>;
  const lost = () => new Error('socket hang up');
  const landsAnswerLost: Step = async (send) => {
    await send();
    throw lost();
  };
  const neverArrives: Step = async () => {
    throw lost();
  };
  const timesOut: Step = async () => {
    throw new ApiError(
      504,
      'Timeout',
      'the server was unable to return a response in the time allotted, but may still be processing the request',
    );
  };

  /** An extender whose Bindings take `steps` in turn (then pass), on a clock the test moves. */
  function scripted(steps: Step[]) {
    const clock = { t: 1_000_000 };
    const now = () => clock.t;
    const [pools, gpuNodes, gpus, pods, nodes] = x.informers;
    const state = new PlacementState({ sources: { nodes, pools, gpuNodes, gpus, pods } as never, now, reservationTtlMs: 60_000 });
    const real = clusterFor(api, 'extender');
    let binds = 0;
    const cluster = {
      list: real.list.bind(real),
      get: real.get.bind(real),
      bind: async (...args: Parameters<Cluster['bind']>) => {
        binds++;
        await (steps.shift() ?? ((send) => send()))(() => real.bind(...args));
      },
    } as unknown as Cluster;
    return { clock, state, ext: new Extender({ state, cluster, pods, now }), binds: () => binds };
  }
  const vram = (state: PlacementState) => state.current().gpuUsage(GPU)!.vram.requested;

  // A pod binds once: the second Binding lands, or is refused as already assigned and the pod shows
  // the first was ours.
  test.each([
    ['landed', landsAnswerLost],
    ['never arrived', neverArrives],
  ])('one that %s is sent again and the share counted once', async (_, step) => {
    const s = scripted([step]);
    const a = newPod('a', 50 * GiB);
    expect(await filter(s.ext, a)).toEqual([NODE]);
    expect(await bind(s.ext, a)).toEqual({ Error: '' });
    expect(s.binds()).toBe(2);
    expect(api.getObject('pods', 'a', 'default')!.spec.nodeName).toBe(NODE);
    expect(vram(s.state)).toBe(50 * GiB);
    expect(s.state.isReserved(a.metadata.uid!)).toBe(false);
    expect(await filter(s.ext, newPod('b', 50 * GiB))).toEqual([]);
  });

  test('one lost after kube-scheduler stopped waiting is not sent again: the share stays counted', async () => {
    const s = scripted([
      async (send) => {
        s.clock.t += 5_000;
        await send();
        throw lost();
      },
    ]);
    const a = newPod('a', 50 * GiB);
    expect(await filter(s.ext, a)).toEqual([NODE]);
    expect((await bind(s.ext, a)).Error).toBe('socket hang up');
    expect(s.binds()).toBe(1);
    expect(vram(s.state)).toBe(50 * GiB);
    // The record it carried arrives: the share is the pod's.
    await eventually(async () => expect(s.state.isReserved(a.metadata.uid!)).toBe(false));
    expect(s.state.holding(a.metadata.uid!)?.node).toBe(NODE);
    expect(vram(s.state)).toBe(50 * GiB);
  });

  test("twice: the share stays counted and the pod waits with the reason, until a reservation's time is up", async () => {
    const s = scripted([neverArrives, timesOut]);
    const a = newPod('a', 50 * GiB);
    expect(await filter(s.ext, a)).toEqual([NODE]);
    expect((await bind(s.ext, a)).Error).toMatch(/^504 Timeout/);
    expect(s.state.isBinding(a.metadata.uid!)).toBe(true);
    expect(vram(s.state)).toBe(50 * GiB);
    // kube-scheduler retries the pod: it is not given a second share while the first may still land.
    const again = await s.ext.filter({ Pod: a, NodeNames: [NODE], Nodes: null });
    expect(again.NodeNames).toEqual([]);
    expect(again.FailedAndUnresolvableNodes).toEqual({ [NODE]: BIND_UNCONFIRMED });
    expect(await filter(s.ext, newPod('b', 50 * GiB))).toEqual([]);
    s.clock.t += 60_001;
    expect(await filter(s.ext, newPod('c', 50 * GiB))).toEqual([NODE]);
  });

  test('twice: the sweep does not stamp room for the pod that waits on its bind, until the bind is given up', async () => {
    const s = scripted([neverArrives, timesOut]);
    const a = newPod('a', 30 * GiB);
    await eventually(async () => expect(x.informers[3].get('default/a')).toBeDefined());
    expect(await filter(s.ext, a)).toEqual([NODE]);
    expect((await bind(s.ext, a)).Error).toMatch(/^504 Timeout/);
    expect(await filter(s.ext, a)).toEqual([]);
    // Its request would fit beside its own reservation, which must not bring a retry every sweep.
    expect(s.ext.sweep()).toBeUndefined();
    s.clock.t += 60_001;
    expect(s.ext.sweep()).toBe(NODE);
  });

  test("twice, then the pod's record arrives: the share is the pod's, counted once", async () => {
    const s = scripted([landsAnswerLost, timesOut]);
    const a = newPod('a', 50 * GiB);
    expect(await filter(s.ext, a)).toEqual([NODE]);
    expect((await bind(s.ext, a)).Error).toMatch(/^504 Timeout/);
    await eventually(async () => expect(s.state.isReserved(a.metadata.uid!)).toBe(false));
    expect(s.state.holding(a.metadata.uid!)?.node).toBe(NODE);
    expect(vram(s.state)).toBe(50 * GiB);
  });

  test('a refusal of the second frees the share at once', async () => {
    const s = scripted([
      async () => {
        api.remove('pods', 'a', 'default');
        throw lost();
      },
    ]);
    const a = newPod('a', 50 * GiB);
    expect(await filter(s.ext, a)).toEqual([NODE]);
    expect((await bind(s.ext, a)).Error).toMatch(/^404/);
    expect(s.state.isReserved(a.metadata.uid!)).toBe(false);
    expect(vram(s.state)).toBe(0);
  });

  test('kube-scheduler stopped waiting for a Binding still on the wire: filter of the pod leaves its reservation', async () => {
    let arrive: () => void = () => undefined;
    let onWire: () => void = () => undefined;
    const sent = new Promise<void>((r) => {
      onWire = r;
    });
    const s = scripted([
      async (send) => {
        onWire();
        await new Promise<void>((r) => {
          arrive = r;
        });
        await send();
      },
    ]);
    const a = newPod('a', 50 * GiB);
    expect(await filter(s.ext, a)).toEqual([NODE]);
    const bound = bind(s.ext, a);
    await sent;
    expect((await s.ext.filter({ Pod: a, NodeNames: [NODE], Nodes: null })).FailedAndUnresolvableNodes).toEqual({
      [NODE]: BIND_UNCONFIRMED,
    });
    expect(vram(s.state)).toBe(50 * GiB);
    arrive();
    expect(await bound).toEqual({ Error: '' });
    expect(vram(s.state)).toBe(50 * GiB);
    expect(s.state.holding(a.metadata.uid!)?.node).toBe(NODE);
  });
});

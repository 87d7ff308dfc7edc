/**
 * The growth reconciler over caches that lag behind its own writes (a watch delivers a created
 * placeholder some time after the create returns): a pass that runs in between asks for no node again,
 * and a GPU that is made but has no status yet is not room, nor a node that joined.
 */
import { ENABLED_LABEL, GFD, GROWTH_POOL_LABEL, MANAGED_BY_LABEL, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { AssumedWrites } from '../../../lib/runtime/kube/assumed-writes';
import { INDEX_BY_OWNER, INDEX_PLACEHOLDER_BY_POOL, INDEX_UNBOUND_BY_POOL, ReadCaches } from '../../../lib/runtime/shared/caches';
import { placeholderGpus, placeholderPool, placeholderShares } from '../../../lib/runtime/shared/growth-placeholder';
import { encodeShare, shareOf } from '../../../lib/runtime/shared/share';
import { ROOM_REASONS } from '../../../lib/runtime/shared/wait-reasons';
import type { ReconcileContext } from '../../../lib/runtime/reconcile/reconcile-context';
import { reconcileGrowth } from '../../../lib/runtime/reconcile/growth';

const GiB = 1024 ** 3;
const POOL = 'grows';
const NOW = '2026-11-28T12:00:00Z';

/** A quarter-A100 share that kube-scheduler refused for room. */
function waiting(uid: string): K8sObject {
  const share = {
    pool: POOL,
    qos: 'medium' as const,
    gpuCount: 1,
    tflopsRequest: 10,
    tflopsLimit: 10,
    vramRequest: 20 * GiB,
    vramLimit: 20 * GiB,
  };
  const message = `0/1 nodes are available: 1 ${ROOM_REASONS.lacking(['VRAM'])}.`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `s-${uid}`,
      namespace: 'ml',
      uid,
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: { [SHARE_ANNOTATION]: encodeShare(share) },
    },
    spec: { containers: [{ name: 'main' }] },
    status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }] },
  };
}

function gpu(node: string, index: number, status: 'full' | 'free' | 'none'): K8sObject {
  const amounts = { full: { vram: '0', tflops: '0' }, free: { vram: '80Gi', tflops: '312' } };
  return {
    apiVersion: 'tensor-fusion.ai/v1',
    kind: 'GPU',
    metadata: { name: `${node}-gpu-${index}`, labels: { [MANAGED_BY_LABEL]: node } },
    ...(status === 'none' ? {} : { status: { capacity: { vram: '80Gi', tflops: '312' }, available: amounts[status] } }),
  };
}

/** Caches that hold exactly what a test puts in them: the pods cache does not see the writer's creates. */
class Cluster {
  pods: K8sObject[] = [];
  gpus: K8sObject[] = [gpu('n0', 0, 'full')];
  gpuNodes: K8sObject[] = [
    { apiVersion: 'tensor-fusion.ai/v1', kind: 'GPUNode', metadata: { name: 'n0', labels: { [MANAGED_BY_LABEL]: POOL } } },
  ];
  /** Nodes with the GFD labels of 4 A100s, as the pool's new nodes come. */
  nodes: K8sObject[] = [];
  created: K8sObject[] = [];
  deleted: string[] = [];
  warnings: string[] = [];
  nodeManagerConfig: Record<string, string> = {};
  private uids = 0;

  context(): ReconcileContext {
    const ofNode = (objs: () => K8sObject[]) => ({
      get: (n: string) => objs().find((o) => o.metadata.name === n),
      list: () => objs(),
      byIndex: (index: string, v: string) =>
        index === INDEX_BY_OWNER ? objs().filter((o) => o.metadata.labels?.[MANAGED_BY_LABEL] === v) : [],
    });
    const pods = {
      get: () => undefined,
      list: () => this.pods,
      byIndex: (index: string, v: string) =>
        this.pods.filter((p) =>
          index === INDEX_PLACEHOLDER_BY_POOL
            ? placeholderPool(p) === v
            : index === INDEX_UNBOUND_BY_POOL && !(p.spec as { nodeName?: string }).nodeName && shareOf(p)?.pool === v,
        ),
    };
    const pool = { metadata: { name: POOL }, spec: { growth: { gpusPerNode: 4 }, nodeManagerConfig: this.nodeManagerConfig } };
    const caches = {
      pods,
      pools: { get: (n: string) => (n === POOL ? pool : undefined), list: () => [pool], byIndex: () => [] },
      gpuNodes: ofNode(() => this.gpuNodes),
      gpus: ofNode(() => this.gpus),
      nodes: ofNode(() => this.nodes),
    } as unknown as ReadCaches;
    const writer = {
      create: async (_rt: unknown, obj: K8sObject) => {
        if (this.created.some((c) => c.metadata.name === obj.metadata.name)) throw Object.assign(new Error('exists'), { statusCode: 409 });
        const made = { ...obj, metadata: { ...obj.metadata, uid: `p${++this.uids}`, creationTimestamp: NOW } };
        this.created.push(made);
        return made;
      },
      delete: async (_rt: unknown, ref: { name: string }) => {
        this.deleted.push(ref.name);
        return true;
      },
    };
    const logger = { warn: (_: object, msg: string) => this.warnings.push(msg), debug: () => undefined };
    return { caches, writer, logger, now: () => NOW } as unknown as ReconcileContext;
  }
}

/** Node `name` of the pool, with 4 A100s by its labels, and its GPUNode. */
function addNode(c: Cluster, name: string): void {
  const labels = { [GFD.product]: 'NVIDIA-A100-SXM4-80GB', [GFD.count]: '4', [GFD.memory]: '81920' };
  c.nodes.push({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
  c.gpuNodes.push({ apiVersion: 'tensor-fusion.ai/v1', kind: 'GPUNode', metadata: { name, labels: { [MANAGED_BY_LABEL]: POOL } } });
}

/** The placeholder `p`, bound to `node`. */
const bound = (p: K8sObject, node: string): K8sObject => ({ ...p, spec: { ...(p.spec as object), nodeName: node } });

const asked = (c: Cluster) => c.created.map((p) => ({ shares: placeholderShares(p).length, gpus: placeholderGpus(p) }));

test('a pass before the cache shows the last placeholder asks only for the shares that came since', async () => {
  const c = new Cluster();
  const ctx = c.context();
  c.pods = ['u5', 'u6', 'u7', 'u8'].map(waiting);
  await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
  expect(asked(c)).toEqual([{ shares: 4, gpus: 1 }]);
  // Four more wait, whose UIDs sort first (the last placeholder's name came from its first share); the
  // cache still lacks the placeholder. Asking for all 8 again would make 3 GPUs out of the 2 needed.
  c.pods = ['u1', 'u2', 'u3', 'u4', 'u5', 'u6', 'u7', 'u8'].map(waiting);
  await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
  expect(asked(c)).toEqual([
    { shares: 4, gpus: 1 },
    { shares: 4, gpus: 1 },
  ]);
  expect(c.deleted).toEqual([]);
  // Once the cache shows both, a pass changes nothing.
  c.pods = [...c.pods, ...c.created];
  await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
  expect(c.created).toHaveLength(2);
  expect(c.deleted).toEqual([]);
});

test("a placeholder's node whose GPUs have no status yet has not joined: the placeholder stays and nothing more is asked", async () => {
  const c = new Cluster();
  const ctx = c.context();
  c.pods = ['u1', 'u2'].map(waiting);
  await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
  const [placeholder] = c.created;
  c.pods = [...c.pods, bound(placeholder, 'n1')];
  addNode(c, 'n1');
  // The node reconciler made n1's GPUs; their status comes in its next write.
  c.gpus.push(...[0, 1, 2, 3].map((i) => gpu('n1', i, 'none')));
  await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
  expect(c.deleted).toEqual([]);
  expect(c.created).toHaveLength(1);
  // With their status, the room is there: the placeholder goes, and the shares wait for it alone.
  c.gpus = c.gpus.map((g) => (g.metadata.name!.startsWith('n1-') ? gpu('n1', Number(g.metadata.name!.slice(-1)), 'free') : g));
  await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
  expect(c.deleted).toEqual([placeholder.metadata.name]);
  expect(c.created).toHaveLength(1);
});

test("a placeholder's node joins when all its GPUs count: one GPU with a status is not room for the other shares", async () => {
  const c = new Cluster();
  const ctx = c.context();
  c.pods = Array.from({ length: 16 }, (_, i) => waiting(`u${i}`));
  await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
  expect(asked(c)).toEqual([{ shares: 16, gpus: 4 }]);
  const [placeholder] = c.created;
  c.pods = [...c.pods, bound(placeholder, 'n1')];
  addNode(c, 'n1');
  // The node reconciler makes n1's GPUs and gives each its status, one after the other.
  for (const made of [1, 2, 3]) {
    c.gpus = [gpu('n0', 0, 'full'), ...Array.from({ length: made }, (_, i) => gpu('n1', i, 'free'))];
    await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
    // Dropping the placeholder here would pack 16 shares into this many GPUs and ask for another node.
    expect(c.deleted).toEqual([]);
    expect(c.created).toHaveLength(1);
  }
  c.gpus.push(gpu('n1', 3, 'free'));
  await reconcileGrowth(ctx, { kind: 'growth', name: POOL });
  expect(c.deleted).toEqual([placeholder.metadata.name]);
  expect(c.created).toHaveLength(1);
});

test('a DRA pool with growth asks for nothing, says why, and its placeholders go', async () => {
  const c = new Cluster();
  c.pods = ['u1', 'u2'].map(waiting);
  await reconcileGrowth(c.context(), { kind: 'growth', name: POOL });
  const [placeholder] = c.created;
  // The pool is rewritten to deliver by DRA: the placeholder made before goes, and none is made.
  c.nodeManagerConfig = { shareDelivery: 'DRA' };
  c.pods = [...c.pods, placeholder];
  await reconcileGrowth(c.context(), { kind: 'growth', name: POOL });
  expect(c.deleted).toEqual([placeholder.metadata.name]);
  expect(c.created).toHaveLength(1);
  expect(c.warnings).toEqual([
    `spec.growth ignored: the pool's shareDelivery is "DRA"; growth counts shares the scheduler extender refused for GPU room, and a DRA share is refused by kube-scheduler's claim allocator instead, so no node would be asked for it`,
  ]);
});

describe('AssumedWrites', () => {
  const pod = (name: string, uid: string): K8sObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'ml', uid, labels: { [GROWTH_POOL_LABEL]: POOL } },
  });
  const all = () => true;
  const names = (objs: K8sObject[]) => objs.map((o) => `${o.metadata.name}:${o.metadata.uid}`).sort();

  test('shows what was made until the cache has it, and hides what was deleted until the cache drops it', () => {
    const a = new AssumedWrites<K8sObject>(30_000);
    a.created(pod('new', 'u2'), 0);
    a.deleted(pod('old', 'u1'), 0);
    expect(names(a.view([pod('old', 'u1')], all, 1_000))).toEqual(['new:u2']);
    // The cache caught up with both: nothing is assumed any more.
    expect(names(a.view([pod('new', 'u2')], all, 2_000))).toEqual(['new:u2']);
    expect(names(a.view([], all, 3_000))).toEqual([]);
  });

  test('a remade name replaces the one on its way out; other scopes and expired writes are not shown', () => {
    const a = new AssumedWrites<K8sObject>(30_000);
    a.created(pod('same', 'u2'), 0);
    expect(names(a.view([pod('same', 'u1')], all, 1_000))).toEqual(['same:u2']);
    expect(names(a.view([], () => false, 1_000))).toEqual([]);
    expect(names(a.view([], all, 30_000))).toEqual([]);
  });
});

/** How many new GPU nodes waiting shares need, and which placeholders stand for them (lib/runtime/shared/growth-plan.ts). */
import { packIntoNewNodes, planGrowth, WaitingShare } from '../../../lib/runtime/shared/growth-plan';

const GiB = 1024 ** 3;
const A100 = { vram: 80 * GiB, tflops: 312 };

function share(uid: string, vramGiB: number, more: Partial<WaitingShare> = {}): WaitingShare {
  return { uid, namespace: 'ml', name: `pod-${uid}`, gpuCount: 1, vram: vramGiB * GiB, tflops: 10, cpu: 100, memory: GiB, ...more };
}

const shares = (n: number, vramGiB: number, more: Partial<WaitingShare> = {}) =>
  Array.from({ length: n }, (_, i) => share(`u${String(i).padStart(2, '0')}`, vramGiB, more));

describe('packIntoNewNodes', () => {
  it('packs shares onto as few new nodes as their GPU room needs, not one per pod', () => {
    // 20 quarter-GPU shares: 5 GPUs, on 4-GPU nodes: 2 nodes (4 GPUs + 1 GPU).
    const { nodes, unfit } = packIntoNewNodes(shares(20, 20), 4, A100);
    expect(unfit).toEqual([]);
    expect(nodes.map((n) => [n.pods.length, n.gpus])).toEqual([
      [16, 4],
      [4, 1],
    ]);
    expect(nodes[0]).toMatchObject({ cpu: 1600, memory: 16 * GiB });
  });

  it('takes whole GPUs for each share when the pool has no GPUs to tell their size by', () => {
    const { nodes } = packIntoNewNodes(shares(5, 20), 4);
    expect(nodes.map((n) => n.gpus)).toEqual([4, 1]);
  });

  it('asks for nothing that fits in the room the pool still has', () => {
    const free = [[{ vram: 40 * GiB, tflops: 100 }], [{ vram: 10 * GiB, tflops: 100 }]];
    const { nodes } = packIntoNewNodes(shares(3, 20), 4, A100, free);
    expect(nodes.map((n) => n.pods.map((p) => p.uid))).toEqual([['u02']]);
  });

  it('keeps multi-GPU shares on one node and leaves out what no new node can take', () => {
    const big = share('big', 81);
    const wide = share('wide', 10, { gpuCount: 8 });
    const two = share('two', 50, { gpuCount: 2 });
    const { nodes, unfit } = packIntoNewNodes([big, wide, two, share('s', 50)], 4, A100);
    expect(unfit.map((s) => s.uid)).toEqual(['wide', 'big']);
    expect(nodes.map((n) => [n.pods.map((p) => p.uid), n.gpus])).toEqual([[['two', 's'], 3]]);
  });

  it('asks for a node per namespace, as a placeholder is owned by its shares', () => {
    const { nodes } = packIntoNewNodes([share('a', 10), share('b', 10, { namespace: 'other' })], 4, A100);
    expect(nodes.map((n) => n.pods.map((p) => p.namespace))).toEqual([['ml'], ['other']]);
  });
});

describe('planGrowth', () => {
  const base = { gpusPerNode: 4, gpu: A100, nowMs: 1_000_000, boundGraceMs: 600_000 };

  it('asks for the waiting shares no placeholder stands for, and keeps those that stand for waiting ones', () => {
    const waiting = shares(8, 40);
    const plan = planGrowth({ ...base, waiting, existing: [{ name: 'p1', pods: ['u00', 'u01'], askedAtMs: 0, bound: false, gpus: 1 }] });
    expect(plan.remove).toEqual([]);
    expect(plan.create.map((n) => n.pods.length)).toEqual([6]);
    expect(plan.create[0].pods.map((p) => p.uid)).not.toContain('u00');
  });

  it('fills the GPUs a kept placeholder asked for before asking for another node', () => {
    // p1 asked for 2 GPUs for 3 half-GPU shares: one half GPU is left, and the next share takes it.
    const waiting = [...shares(3, 40), share('late', 40)];
    const existing = [{ name: 'p1', pods: ['u00', 'u01', 'u02'], askedAtMs: 0, bound: false, gpus: 2 }];
    expect(planGrowth({ ...base, waiting, existing }).create).toEqual([]);
    expect(
      planGrowth({ ...base, waiting: [...waiting, share('later', 40)], existing }).create.map((n) => n.pods.map((p) => p.uid)),
    ).toEqual([['later']]);
  });

  it('removes a placeholder whose shares stopped waiting, whose node joined, or that holds a node that never joined', () => {
    const waiting = shares(2, 40);
    const plan = planGrowth({
      ...base,
      waiting,
      existing: [
        { name: 'placed', pods: ['gone'], askedAtMs: 0, bound: false, gpus: 1 },
        { name: 'joined', pods: ['u00'], askedAtMs: 999_000, bound: true, nodeJoined: true, gpus: 1 },
        { name: 'stale', pods: ['u01'], askedAtMs: 400_000, bound: true, gpus: 1 },
      ],
      // The joined node's room: both shares fit there, so nothing more is asked.
      free: [[A100]],
    });
    expect(plan.remove).toEqual(['placed', 'joined', 'stale']);
    expect(plan.create).toEqual([]);
  });

  it('keeps a bound placeholder within its grace while its node has not joined', () => {
    const plan = planGrowth({
      ...base,
      waiting: shares(1, 40),
      existing: [{ name: 'p', pods: ['u00'], askedAtMs: 500_000, bound: true, gpus: 1 }],
    });
    expect(plan).toEqual({ remove: [], create: [], unfit: [] });
  });
});

/** Per-pod compute from the pod's own MPS server, on real H200 pmon output and through the collector. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_METRICS } from '../../../lib/contract/agent';
import { GpuCollector } from '../../../lib/runtime/agent/collector';
import { parsePmon } from '../../../lib/runtime/agent/nvidia-smi';
import { shareCompute, ShareContainer } from '../../../lib/runtime/agent/share/compute';
import type { ShareMembers } from '../../../lib/runtime/agent/share/members';
import { fakeNode, FakeNode, POD_A, POD_B, Trace, TRACE } from './fixtures';

const H200_TFLOPS = 989;
const UUID = 'GPU-9fca33e6-4022-ad7e-7cc7-e8e787c3d4f7';

describe('shareCompute', () => {
  // ../shared/gpu/h200-driver-580/t4c.log: two daemons at 50 %; share A (server 701, client 769) runs
  // matmuls, share B (server 772, client 770) holds memory and idles.
  const pmon = parsePmon(readFileSync(join(__dirname, 'h200-pmon-two-shares.txt'), 'utf8'));
  const pmonSm = new Map(pmon.map((r) => [`${UUID}/${r.pid}`, r.sm]));
  const members = new Map<string, ShareMembers | undefined>([
    ['a', { servers: [701], clients: [{ server: 701, pid: 769 }] }],
    ['b', { servers: [772], clients: [{ server: 772, pid: 770 }] }],
  ]);
  const inputs = (containers: ShareContainer[], m = members) => ({
    containers,
    pmonSm,
    members: m,
    cap: () => 0.5,
    tflops: () => H200_TFLOPS,
  });

  it("gives a busy share its own server's activity × its percentage × TFLOPS, and an idle one 0 (real H200 pmon)", () => {
    const uses = shareCompute(
      inputs([
        { share: 'a', gpuUuid: UUID, key: 'a/main' },
        { share: 'b', gpuUuid: UUID, key: 'b/main' },
      ]),
    );
    expect(uses.get('a/main')!.sm).toBeCloseTo(0.9 * 0.5, 9);
    expect(uses.get('a/main')!.tflops).toBeCloseTo(0.9 * 0.5 * H200_TFLOPS, 9);
    expect(uses.get('b/main')).toEqual({ sm: 0, tflops: 0 });
  });

  it("splits a share's compute over its own containers only", () => {
    const uses = shareCompute(
      inputs([
        { share: 'a', gpuUuid: UUID, key: 'a/one' },
        { share: 'a', gpuUuid: UUID, key: 'a/two' },
        { share: 'b', gpuUuid: UUID, key: 'b/main' },
      ]),
    );
    expect(uses.get('a/one')!.tflops).toBeCloseTo((0.9 * 0.5 * H200_TFLOPS) / 2, 9);
    expect(uses.get('a/two')!.tflops).toBeCloseTo((0.9 * 0.5 * H200_TFLOPS) / 2, 9);
    expect(uses.get('b/main')!.tflops).toBe(0);
  });

  it('never goes past the cap, even when pmon sums past 100 %', () => {
    const busy = new Map([...pmonSm, [`${UUID}/702`, 0.8]]);
    const m = new Map([['a', { servers: [701, 702], clients: [] }]]);
    const uses = shareCompute({ ...inputs([{ share: 'a', gpuUuid: UUID, key: 'a/main' }], m), pmonSm: busy });
    expect(uses.get('a/main')!.tflops).toBeCloseTo(0.5 * H200_TFLOPS, 9);
  });

  it('leaves a share out (missing, not 0) when its daemon did not answer or pmon did not list its server', () => {
    const m = new Map<string, ShareMembers | undefined>([
      ['a', undefined],
      ['b', { servers: [4242], clients: [] }],
    ]);
    const uses = shareCompute(
      inputs(
        [
          { share: 'a', gpuUuid: UUID, key: 'a/main' },
          { share: 'b', gpuUuid: UUID, key: 'b/main' },
        ],
        m,
      ),
    );
    expect(uses.size).toBe(0);
  });
});

describe('the collector with the shares’ daemons', () => {
  // Pod A (25 %) is busy on its server 900, pod B (50 %) idle on its server 901, both on GPU 0.
  const SHARES_TRACE: Trace = {
    gpus: TRACE.gpus,
    steps: [
      {
        apps: [
          { pid: 900, gpu: 0, mib: 66, sm: 90, mps: 'server' },
          { pid: 101, gpu: 0, mib: 680, sm: null, mps: 'client' },
          { pid: 201, gpu: 0, mib: 1298, sm: null, mps: 'client' },
          { pid: 901, gpu: 0, mib: 66, sm: null, mps: 'server' },
        ],
      },
    ],
  };
  let node: FakeNode;
  beforeEach(() => (node = fakeNode(undefined, SHARES_TRACE)));
  afterEach(() => node.cleanup());

  const members = new Map<string, ShareMembers>([
    [POD_A.uid, { servers: [900], clients: [{ server: 900, pid: 101 }] }],
    [POD_B.uid, { servers: [901], clients: [{ server: 901, pid: 201 }] }],
  ]);
  const value = (text: string, metric: string, pod: string) =>
    text
      .split('\n')
      .find((l) => l.startsWith(`${metric}{`) && l.includes(`pod="${pod}"`))
      ?.split(' ')
      .pop();

  it("exports each pod's compute from its own server, and no estimate for them", async () => {
    const c = new GpuCollector({
      nvidiaSmi: node.nvidiaSmi,
      procRoot: node.procRoot,
      resolver: node.resolver,
      members: async (id) => members.get(id),
    });
    const text = await c.registry.metrics();
    expect(Number(value(text, AGENT_METRICS.computeUsed, POD_A.pod))).toBeCloseTo(0.9 * 0.25 * 312, 6);
    expect(Number(value(text, AGENT_METRICS.smUtilization, POD_A.pod))).toBeCloseTo(0.9 * 0.25, 9);
    expect(Number(value(text, AGENT_METRICS.computeUsed, POD_B.pod))).toBe(0);
    expect(text).not.toMatch(new RegExp(`^${AGENT_METRICS.computeEstimated}\\{`, 'm'));
  });

  it("holds (no compute series) for a pod whose daemon does not answer, and keeps the other pod's", async () => {
    const c = new GpuCollector({
      nvidiaSmi: node.nvidiaSmi,
      procRoot: node.procRoot,
      resolver: node.resolver,
      members: async (id) => (id === POD_B.uid ? undefined : members.get(id)),
    });
    const text = await c.registry.metrics();
    expect(Number(value(text, AGENT_METRICS.computeUsed, POD_A.pod))).toBeCloseTo(0.9 * 0.25 * 312, 6);
    expect(value(text, AGENT_METRICS.computeUsed, POD_B.pod)).toBeUndefined();
    // B's estimate comes from the servers no share claimed (901, idle), never from A's busy server.
    expect(Number(value(text, AGENT_METRICS.computeEstimated, POD_B.pod))).toBe(0);
  });
});

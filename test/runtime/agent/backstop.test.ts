/**
 * The backstop: membership from the share's own daemon, the fast loop against the fake nvidia-smi
 * with real processes (killed within 1 s, escalated, re-checked before the kill), and failing closed.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { identify, parseStat, PodCgroup, ProcessIdentity } from '../../../lib/runtime/agent/cgroup';
import type { MpsShare } from '../../../lib/runtime/agent/mps/supervisor';
import { queryApps } from '../../../lib/runtime/agent/nvidia-smi-run';
import { BackstopLoop, BackstopLoopOptions } from '../../../lib/runtime/agent/share/backstop-loop';
import { judge } from '../../../lib/runtime/agent/share/bypass';
import type { ShareMembers } from '../../../lib/runtime/agent/share/members';
import {
  bypassTrace,
  fakeNode,
  FakeNode,
  MEMBERS_A,
  POD_A,
  POD_B,
  replaceTrace,
  SHARE_A,
  spawnBypasser,
  statLine,
  TRACE,
} from './fixtures';

const GPU0 = TRACE.gpus[0].uuid;
const GPU1 = TRACE.gpus[1].uuid;
const SHARE_B: MpsShare = { id: POD_B.uid, pod: 'ml/infer-0', gpuUuids: [GPU1], vramLimitBytes: 2 ** 31, threadPercentage: 50 };
const podA = { podUid: POD_A.uid, containerId: POD_A.containerId };

describe('parseStat', () => {
  it('reads the name and field 22 (start time), whatever the name holds', () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3)).join(' ');
    expect(parseStat(`4242 (evil) (x y) ${fields}`)).toEqual({ comm: 'evil) (x y', startTicks: 22 });
    expect(parseStat('garbage')).toBeUndefined();
  });
});

describe('judge', () => {
  const app = (pid: number, gpuUuid = GPU0) => ({ pid, gpuUuid, usedBytes: 2 ** 30 });
  const ids = (entries: [number, ProcessIdentity][]) => new Map(entries);
  const python = (pod: PodCgroup = podA): ProcessIdentity => ({ pod, comm: 'python3', startTicks: 7 });

  it("passes the share's own server and clients, and names a process of the pod its daemon does not list", () => {
    const v = judge(
      [app(900), app(101), app(102)],
      ids([
        [900, { comm: 'nvidia-cuda-mps', startTicks: 1 }],
        [101, python()],
        [102, python()],
      ]),
      [SHARE_A],
      new Map([[SHARE_A.id, MEMBERS_A]]),
    );
    expect(v.bypasses.map((b) => [b.pid, b.reason, b.message])).toEqual([
      [
        102,
        'MpsBypassed',
        `process 102 (python3) of ml/train-0 on GPU ${GPU0} is no client of its share's MPS daemon (CUDA_MPS_PIPE_DIRECTORY pointed elsewhere, or a daemon of its own), so no limit binds it; it was killed`,
      ],
    ]);
    expect(v.unjudged.size).toBe(0);
  });

  it("names an MPS server of the pod's own and its client, although pmon would type them as ours", () => {
    const v = judge(
      [app(300), app(301)],
      ids([
        [300, { pod: podA, comm: 'nvidia-cuda-mps', startTicks: 5 }],
        [301, python()],
      ]),
      [SHARE_A],
      new Map([[SHARE_A.id, MEMBERS_A]]),
    );
    expect(v.bypasses.map((b) => [b.pid, b.reason])).toEqual([
      [300, 'MpsServerOfItsOwn'],
      [301, 'MpsBypassed'],
    ]);
    expect(v.bypasses[0].message).toBe(
      `process 300 (nvidia-cuda-mps) of ml/train-0 on GPU ${GPU0} is an MPS server its share's daemon did not start (an MPS daemon of the pod's own), whose clients get no limit; it was killed`,
    );
  });

  it('never calls a pid with no query row a bypass, nor a process of a pod without a share', () => {
    const v = judge(
      [app(500, GPU1)],
      ids([
        [102, python()],
        [500, python({ podUid: 'not-a-share' })],
      ]),
      [SHARE_A],
      new Map([[SHARE_A.id, MEMBERS_A]]),
    );
    expect(v.bypasses).toEqual([]);
  });

  it('judges nothing of a share whose daemon did not list its members, and says which GPUs', () => {
    const v = judge([app(102), app(102, GPU1)], ids([[102, python()]]), [SHARE_A], new Map([[SHARE_A.id, undefined]]));
    expect(v.bypasses).toEqual([]);
    expect([...v.unjudged]).toEqual([
      [GPU0, 'the MPS daemon of ml/train-0 did not list its servers and clients'],
      [GPU1, 'the MPS daemon of ml/train-0 did not list its servers and clients'],
    ]);
  });
});

describe('BackstopLoop against the fake nvidia-smi, with real processes', () => {
  let node: FakeNode;
  let loop: BackstopLoop | undefined;
  const children = new Map<number, ChildProcess>();
  let kills: number[];
  let events: [string, string, string][];
  let removed: [string, string][];

  beforeEach(() => {
    node = fakeNode(undefined, { gpus: TRACE.gpus, steps: [{ apps: [] }, { apps: [], fail: true }] });
    [kills, events, removed] = [[], [], []];
    // Share A's client 101 is in pod A's cgroup (fixtures.ts), its server 900 in the agent's: both judged, both members.
    writeFileSync(join(node.procRoot, '101', 'stat'), statLine(101, 'python3', 11));
    writeFileSync(join(node.procRoot, '900', 'stat'), statLine(900, 'nvidia-cuda-mps', 10));
  });
  afterEach(async () => {
    await loop?.stop();
    loop = undefined;
    for (const c of children.values()) c.kill('SIGKILL');
    children.clear();
    node.cleanup();
  });

  const show = (extra: number[]) => replaceTrace(node, bypassTrace(extra));
  const bypasser = (startTicks?: number) => {
    const b = spawnBypasser(node, startTicks);
    children.set(b.pid, b.child);
    return b;
  };
  const options = (over: Partial<BackstopLoopOptions> = {}): BackstopLoopOptions => ({
    shares: () => [SHARE_A, SHARE_B],
    members: async (id) => (id === SHARE_A.id ? MEMBERS_A : { servers: [], clients: [] }),
    query: () => queryApps(node.nvidiaSmi, 2_000),
    identify: (pid) => identify(node.procRoot, pid),
    kill: (pid) => {
      kills.push(pid);
      // Only processes this test started are ever signalled.
      if (!children.has(pid)) throw new Error(`pid ${pid} is not a test process`);
      process.kill(pid, 'SIGKILL');
    },
    event: async (share, reason, message) => void events.push([share.pod, reason, message]),
    remove: async (share, message) => void removed.push([share.pod, message]),
    ...over,
  });

  it('kills a process of a share that bypasses its daemon within 1 s, with an Event, and leaves the members alone', async () => {
    show([]);
    loop = new BackstopLoop(options());
    await loop.start();
    const { pid, exited } = bypasser();
    const t0 = Date.now();
    show([pid]);
    const took = (await exited) - t0;
    expect(took).toBeLessThan(1_000);
    expect(kills).toEqual([pid]);
    await loop.stop();
    expect(events).toEqual([
      [
        'ml/train-0',
        'MpsBypassed',
        `process ${pid} (python3) of ml/train-0 on GPU ${GPU0} is no client of its share's MPS daemon (CUDA_MPS_PIPE_DIRECTORY pointed elsewhere, or a daemon of its own), so no limit binds it; it was killed`,
      ],
    ]);
    expect(removed).toEqual([]);
  });

  it("logs each kill with where the poll's time went: its start, the query, identification, membership, the re-check", async () => {
    const logs: [string, Record<string, unknown>][] = [];
    const slow = async (ms: number) => new Promise((r) => setTimeout(r, ms));
    show([]);
    loop = new BackstopLoop(
      options({
        query: async () => (await slow(30), queryApps(node.nvidiaSmi, 2_000)),
        members: async (id) => (await slow(20), id === SHARE_A.id ? MEMBERS_A : { servers: [], clients: [] }),
        log: (msg, fields) => void logs.push([msg, fields ?? {}]),
      }),
    );
    await loop.start();
    const { pid, exited } = bypasser();
    const shown = Date.now();
    show([pid]);
    await exited;
    const [[, fields]] = logs.filter(([msg]) => msg.startsWith(`process ${pid} `));
    expect(Object.keys(fields)).toEqual(['pod', 'reason', 'kills', 'pollStartedAt', 'queryMs', 'identifyMs', 'membersMs', 'recheckMs']);
    expect(fields.pollStartedAt).toBeGreaterThanOrEqual(shown - 1_000);
    // Lower bounds only: the fakes' own waits.
    expect(fields.queryMs).toBeGreaterThanOrEqual(29);
    expect(fields.membersMs).toBeGreaterThanOrEqual(19);
    expect(fields.recheckMs).toBeGreaterThanOrEqual(19);
    expect(typeof fields.identifyMs).toBe('number');
  });

  it('deletes the pod (with an Event) when it restarts the bypass a third time, and only once', async () => {
    show([]);
    loop = new BackstopLoop(options());
    await loop.start();
    for (let i = 0; i < 4; i++) {
      const { pid, exited } = bypasser();
      show([pid]);
      await exited;
    }
    await loop.stop();
    expect(events.map((e) => e[1])).toEqual(['MpsBypassed', 'MpsBypassed', 'MpsBypassed', 'MpsBypassRepeated', 'MpsBypassed']);
    const message = 'ml/train-0 bypassed its MPS daemon 3 times (the backstop deletes a pod after 3); the pod is deleted';
    expect(events[3]).toEqual(['ml/train-0', 'MpsBypassRepeated', message]);
    expect(removed).toEqual([['ml/train-0', message]]);
  });

  it('re-checks start time and cgroup before the kill: a pid reused meanwhile is left alone', async () => {
    const { pid } = bypasser(100);
    let calls = 0;
    // The second look (right before the kill) finds another process under the same pid.
    const reused = async (p: number) => {
      const id = await identify(node.procRoot, p);
      return p === pid && ++calls > 1 && id ? { ...id, startTicks: 101 } : id;
    };
    show([pid]);
    loop = new BackstopLoop(options({ identify: reused }));
    await loop.poll();
    expect(calls).toBe(2);
    expect(kills).toEqual([]);
    expect(events).toEqual([]);
  });

  it('does not kill a client its daemon lists by the time of the kill (it connected after the first question)', async () => {
    const { pid } = bypasser();
    let asked = 0;
    const late = async (id: string): Promise<ShareMembers> =>
      id === SHARE_A.id && ++asked > 1 ? { ...MEMBERS_A, clients: [...MEMBERS_A.clients, { server: 900, pid }] } : MEMBERS_A;
    show([pid]);
    loop = new BackstopLoop(options({ members: late }));
    await loop.poll();
    expect(asked).toBe(2);
    expect(kills).toEqual([]);
  });

  it('turns every GPU not ready while nvidia-smi fails, with its words, and ready again when it answers', async () => {
    show([]);
    let changes = 0;
    loop = new BackstopLoop(options({ onChange: () => changes++ }));
    await loop.start();
    // The first poll's success is a change (not ready until then).
    expect(changes).toBe(1);
    expect(loop.readiness([GPU0, GPU1]).get(GPU0)).toEqual({
      ready: true,
      reason: 'BackstopRunning',
      message: 'every process of a share is checked against its MPS daemon',
    });
    node.setStep(1);
    await until(() => changes === 2);
    const message =
      `the backstop cannot run (${node.nvidiaSmi} --query-compute-apps=pid,used_memory,gpu_uuid failed (exit 9): NVIDIA-SMI has failed ` +
      "because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.): " +
      'processes that bypass MPS would go unseen, so no new share is placed here';
    expect([...loop.readiness([GPU0, GPU1])]).toEqual([
      [GPU0, { ready: false, reason: 'BackstopUnavailable', message }],
      [GPU1, { ready: false, reason: 'BackstopUnavailable', message }],
    ]);
    node.setStep(0);
    await until(() => changes === 3);
    expect(loop.readiness([GPU0]).get(GPU0)?.ready).toBe(true);
    await loop.stop();
    expect(loop.readiness([GPU0]).get(GPU0)).toMatchObject({ ready: false, reason: 'BackstopUnavailable' });
  });

  it('logs a readiness listener that throws and polls on', async () => {
    show([]);
    let changes = 0;
    const logs: string[] = [];
    const onChange = () => {
      if (++changes === 2) throw new Error('listener failed');
    };
    loop = new BackstopLoop(options({ onChange, log: (msg, fields) => logs.push(`${msg} ${JSON.stringify(fields)}`) }));
    await loop.start();
    node.setStep(1);
    await until(() => changes === 2);
    node.setStep(0);
    await until(() => changes === 3);
    expect(logs).toContain('backstop poll failed; polling on {"err":"Error: listener failed"}');
  });

  it("turns a share's GPUs not ready while its daemon does not list its members, and kills nothing there", async () => {
    const { pid } = bypasser();
    show([pid]);
    loop = new BackstopLoop(options({ members: async (id) => (id === SHARE_A.id ? undefined : MEMBERS_A) }));
    await loop.start();
    expect(kills).toEqual([]);
    expect([...loop.readiness([GPU0, GPU1])]).toEqual([
      [
        GPU0,
        {
          ready: false,
          reason: 'BackstopUnavailable',
          message: 'the backstop cannot judge processes here: the MPS daemon of ml/train-0 did not list its servers and clients',
        },
      ],
      [GPU1, { ready: true, reason: 'BackstopRunning', message: 'every process of a share is checked against its MPS daemon' }],
    ]);
  });
});

async function until(ok: () => boolean, timeoutMs = 5_000): Promise<void> {
  for (const end = Date.now() + timeoutMs; !ok();) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

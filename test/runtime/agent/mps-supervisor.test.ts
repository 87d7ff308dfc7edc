/**
 * The MPS supervisor against the fake nvidia-cuda-mps-control (test/support/fake-mps-control.c,
 * which behaves as the real daemon does for these commands): per-share daemons with their limits, a
 * daemon that dies or hangs replaced with its limits re-applied, a stale socket, clients ended through
 * the daemon, per-user servers, readiness per GPU, and shares taken over by a restarted agent.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { mpsCommand } from '../../../lib/runtime/agent/mps/control';
import { LimitBreach, MpsShare, MpsSupervisor, SupervisorOptions } from '../../../lib/runtime/agent/mps/supervisor';
import { fakeMpsControl } from '../../support/fake-mps-control';

const FAKE = fakeMpsControl();
const GIB = 2 ** 30;

let base: string;
let sup: MpsSupervisor;
/** What `sup` reported to onBreach. */
let breaches: LimitBreach[];
const clients: ChildProcess[] = [];

const share = (id: string, over: Partial<MpsShare> = {}): MpsShare => ({
  id,
  pod: `ns/${id}`,
  gpuUuids: ['GPU-a'],
  vramLimitBytes: 4 * GIB,
  threadPercentage: 25,
  ...over,
});

const ask = (id: string, cmds: string[]) => mpsCommand(FAKE, sup.dirsOf(id), cmds, 3000);

/**
 * A fake MPS client of share `id` running as `uid` (as that host uid for real with `asUid`, so the
 * kernel checks the pipe folder's mode); resolves with its first line (`ready <server> ...`), or the
 * connect error.
 */
function client(id: string, uid: number, asUid = false): { proc: ChildProcess; first: Promise<string> } {
  const proc = spawn(FAKE, ['client', String(uid)], {
    env: { ...process.env, CUDA_MPS_PIPE_DIRECTORY: sup.dirsOf(id).pipeDir },
    ...(asUid ? { uid, gid: uid } : {}),
  });
  clients.push(proc);
  const first = new Promise<string>((res) => {
    proc.stdout!.once('data', (d) => res(String(d).trim()));
    proc.stderr!.once('data', (d) => res(String(d).trim()));
  });
  return { proc, first };
}

/** Commands sent through share `id`'s pipe folder by a process running as host `uid` (a tenant, through the pod's mount). */
function asTenant(id: string, uid: number, cmds: string[]): Promise<string> {
  return new Promise((res, rej) => {
    const p = spawn(FAKE, [], { env: { ...process.env, CUDA_MPS_PIPE_DIRECTORY: sup.dirsOf(id).pipeDir }, uid, gid: uid });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', rej).on('close', () => res(out.trim()));
    p.stdin.end(cmds.map((c) => `${c}\n`).join(''));
  });
}

const refusal = (uid: number) =>
  `Insufficient privileges for UID ${uid}. Control deamon settings can only be modified by the user who started it or by the root user.`;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'tf-mps-'));
  chmodSync(base, 0o755); // as the agent's base folder: tenants' uids reach their share's folder
  breaches = [];
  sup = new MpsSupervisor({ controlBin: FAKE, baseDir: base, isolateShm: false, answerTimeoutMs: 2000, onBreach: (b) => breaches.push(b) });
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.kill('SIGKILL');
  await sup.stop();
  rmSync(base, { recursive: true, force: true });
});

test('a share gets a daemon of its own whose defaults are its limits, so a client that sets nothing is bound', async () => {
  const dirs = await sup.ensure(share('p1', { gpuUuids: ['GPU-a', 'GPU-b'] }));
  expect(dirs.pipeDir).toBe(join(base, 'p1', 'pipe'));
  expect(await ask('p1', ['get_default_active_thread_percentage'])).toBe('25.0');
  expect(await ask('p1', ['get_default_device_pinned_mem_limit 0', 'get_default_device_pinned_mem_limit 1'])).toBe('4096M\n4096M');
  const c = client('p1', 0);
  expect(await c.first).toMatch(/^ready \d+ 25 0=4096M,1=4096M$/);
});

test('two shares on one GPU have two daemons: clients of different users do not wait for each other', async () => {
  await sup.ensure(share('p1'));
  await sup.ensure(share('p2', { threadPercentage: 50 }));
  const a = client('p1', 0);
  const b = client('p2', 1000);
  expect(await a.first).toMatch(/^ready \d+ 25 /);
  expect(await b.first).toMatch(/^ready \d+ 50 /);
});

test('each daemon runs with -M: clients of two uids share its one root-owned server at once, with the limits', async () => {
  await sup.ensure(share('p1'));
  const a = client('p1', 100000);
  const b = client('p1', 100001);
  const [ra, rb] = await Promise.all([a.first, b.first]);
  expect(ra).toMatch(/^ready \d+ 25 0=4096M$/);
  expect(rb.split(' ')[1]).toBe(ra.split(' ')[1]);
  const server = Number(ra.split(' ')[1]);
  expect(await sup.members('p1')).toEqual({
    servers: [server],
    clients: expect.arrayContaining([
      { server, pid: a.proc.pid },
      { server, pid: b.proc.pid },
    ]),
  });
});

describe('no tenant lifts its limits (A2)', () => {
  test("a tenant that is not host root (uid 100000, a user namespace) is refused every set_* through the pod's mount, and its next client keeps the limits", async () => {
    await sup.ensure(share('p1'));
    const first = client('p1', 100000, true);
    const server = (await first.first).split(' ')[1];
    const answers = await asTenant('p1', 100000, [
      'set_default_active_thread_percentage 100',
      `set_active_thread_percentage ${server} 100`,
      `set_device_pinned_mem_limit ${server} 0 8G`,
    ]);
    expect(answers).toBe([refusal(100000), refusal(100000), refusal(100000)].join('\n'));
    expect(await asTenant('p1', 100000, [`get_active_thread_percentage ${server}`, `get_device_pinned_mem_limit ${server} 0`])).toBe(
      '25.0\n4096M',
    );
    expect(await client('p1', 100000, true).first).toBe(`ready ${server} 25 0=4096M`);
  });

  test('without -M (the daemon as it was started before) the same tenant owns its server and raises it: why every daemon runs with -M', async () => {
    const pipeDir = join(base, 'plain', 'pipe');
    const env = { ...process.env, CUDA_MPS_PIPE_DIRECTORY: pipeDir, CUDA_MPS_LOG_DIRECTORY: pipeDir };
    rmSync(pipeDir, { recursive: true, force: true });
    mkdirSync(pipeDir, { recursive: true });
    chmodSync(join(base, 'plain'), 0o755);
    chmodSync(pipeDir, 0o1777);
    const daemon = spawn(FAKE, ['-f'], { env, stdio: 'ignore' });
    clients.push(daemon);
    while (!existsSync(join(pipeDir, 'control'))) await new Promise((r) => setTimeout(r, 20));
    const say = (uid: number, cmds: string[]) =>
      new Promise<string>((res) => {
        const p = spawn(FAKE, [], { env, uid, gid: uid });
        let out = '';
        p.stdout.on('data', (d) => (out += d));
        p.on('close', () => res(out.trim()));
        p.stdin.end(cmds.map((c) => `${c}\n`).join(''));
      });
    await say(0, ['set_default_active_thread_percentage 25']);
    const c = spawn(FAKE, ['client'], { env, uid: 100000, gid: 100000 });
    clients.push(c);
    const server = (await new Promise<string>((res) => c.stdout.once('data', (d) => res(String(d))))).split(' ')[1];
    expect(await say(100000, ['set_default_active_thread_percentage 100'])).toBe(refusal(100000));
    expect(await say(100000, [`set_active_thread_percentage ${server} 100`, `get_active_thread_percentage ${server}`])).toBe(
      '100.0\n100.0',
    );
  });

  test("a host-root process that changes its server's limits is caught at the next check: set back, and a breach reported with the clients", async () => {
    await sup.ensure(share('p1'));
    const c = client('p1', 0);
    const server = Number((await c.first).split(' ')[1]);
    expect(await asTenant('p1', 0, [`set_active_thread_percentage ${server} 100`, `set_device_pinned_mem_limit ${server} 0 8G`])).toBe(
      '100.0',
    );
    await sup.check();
    expect(breaches).toEqual([
      {
        share: expect.objectContaining({ id: 'p1' }),
        mismatches: [
          {
            server,
            setting: 'active_thread_percentage',
            found: '100.0',
            expected: '25',
            fix: `set_active_thread_percentage ${server} 25`,
          },
          {
            server,
            setting: 'device_pinned_mem_limit 0',
            found: '8G',
            expected: '4096M',
            fix: `set_device_pinned_mem_limit ${server} 0 4096M`,
          },
        ],
        clients: [{ server, pid: c.proc.pid }],
      },
    ]);
    expect(await ask('p1', [`get_active_thread_percentage ${server}`, `get_device_pinned_mem_limit ${server} 0`])).toBe('25.0\n4096M');
    expect(sup.restarts()).toBe(0);
  });

  test('changed defaults are set back at the next check and reported', async () => {
    await sup.ensure(share('p1'));
    await asTenant('p1', 0, ['set_default_active_thread_percentage 100']);
    await sup.check();
    expect(breaches.map((b) => b.mismatches)).toEqual([
      [
        {
          server: undefined,
          setting: 'active_thread_percentage',
          found: '100.0',
          expected: '25',
          fix: 'set_default_active_thread_percentage 25',
        },
      ],
    ]);
    expect(await ask('p1', ['get_default_active_thread_percentage'])).toBe('25.0');
  });

  test('clients that connect while a daemon is replaced never get a server without the limits', async () => {
    await sup.ensure(share('p1'));
    process.kill(findDaemonPid('p1'), 'SIGKILL');
    const seen: string[] = [];
    let racing = true;
    // A tenant (uid 100000) starting clients back to back through the pod's mount during the restart.
    const race = (async () => {
      while (racing) {
        const c = client('p1', 100000, true);
        seen.push(await Promise.race([c.first, new Promise<string>((r) => setTimeout(() => r('no answer'), 1000))]));
        c.proc.kill('SIGKILL');
      }
    })();
    await sup.check();
    for (const until = Date.now() + 10_000; Date.now() < until && !seen.some((l) => l.startsWith('ready '));)
      await new Promise((r) => setTimeout(r, 50));
    racing = false;
    await race;
    const served = seen.filter((l) => l.startsWith('ready '));
    expect(served.length).toBeGreaterThan(0);
    // Refused ones ran off MPS (CUDA fails open): the backstop's to find; none was served without limits.
    expect(served.filter((l) => !/^ready \d+ 25 0=4096M$/.test(l))).toEqual([]);
  });
});

test("members lists every server of the daemon and each one's clients, one front-end run for all the lists", async () => {
  await sup.ensure(share('p1'));
  const c = client('p1', 0);
  const first = Number((await c.first).split(' ')[1]);
  await ask('p1', ['start_server -uid 0']);
  const servers = (await ask('p1', ['get_server_list'])).split('\n').map(Number);
  expect(servers).toHaveLength(2);
  expect(await sup.members('p1')).toEqual({ servers, clients: [{ server: first, pid: c.proc.pid }] });
  expect(await sup.members('no-such-share')).toBeUndefined();
});

test('release ends the clients through the daemon (terminate_client), quits it and removes the share folder', async () => {
  await sup.ensure(share('p1'));
  const c = client('p1', 0);
  await c.first;
  const exited = new Promise((r) => c.proc.once('exit', r));
  await sup.release('p1');
  await exited;
  expect(existsSync(join(base, 'p1'))).toBe(false);
});

test("a daemon that died is replaced at the next check, with the share's limits re-applied", async () => {
  await sup.ensure(share('p1', { threadPercentage: 40 }));
  const pid = Number((await ask('p1', ['get_server_list'])) || 0);
  expect(pid).toBe(0); // no client yet, no server
  process.kill(findDaemonPid('p1'), 'SIGKILL');
  await new Promise((r) => setTimeout(r, 100));
  await expect(ask('p1', ['get_default_active_thread_percentage'])).rejects.toThrow();
  await sup.check();
  expect(await ask('p1', ['get_default_active_thread_percentage'])).toBe('40.0');
  expect(sup.restarts()).toBe(1);
});

test('a check during a start leaves the starting daemon alone (its limits are not applied yet)', async () => {
  const starting = sup.ensure(share('p1', { threadPercentage: 40 }));
  await new Promise((r) => setTimeout(r, 150)); // the control socket is up, the limits not yet set
  await sup.check();
  await starting;
  expect(sup.restarts()).toBe(0);
  expect(await ask('p1', ['get_default_active_thread_percentage'])).toBe('40.0');
});

test('a stale control socket left by a dead daemon is removed before the next one starts', async () => {
  const dirs = sup.dirsOf('p1');
  await sup.ensure(share('p1'));
  process.kill(findDaemonPid('p1'), 'SIGKILL'); // the fake leaves its socket file behind, as a killed daemon does
  await new Promise((r) => setTimeout(r, 100));
  expect(existsSync(join(dirs.pipeDir, 'control'))).toBe(true);
  await sup.ensure(share('p1'));
  expect(await ask('p1', ['get_default_active_thread_percentage'])).toBe('25.0');
});

test('a hung daemon makes its GPU not ready with the reason and the pod named, until it is replaced', async () => {
  const hanging = new MpsSupervisor({ controlBin: FAKE, baseDir: base, isolateShm: false, answerTimeoutMs: 500 });
  process.env.FAKE_MPS_HANG = '1';
  try {
    await expect(hanging.ensure(share('p9'))).rejects.toThrow(
      'MPS daemon of ns/p9: set_default_active_thread_percentage 25; set_default_device_pinned_mem_limit 0 4096M: no answer within 500 ms',
    );
    const r = await hanging.readiness(['GPU-a', 'GPU-b']);
    expect(r.get('GPU-a')).toEqual({ ready: false, reason: 'MpsDaemonNotAnswering', message: expect.stringContaining('ns/p9: ') });
  } finally {
    delete process.env.FAKE_MPS_HANG;
  }
  await hanging.check();
  expect((await hanging.readiness(['GPU-a'])).get('GPU-a')).toEqual({ ready: true, reason: 'MpsReady', message: expect.any(String) });
  await hanging.stop();
});

test('readiness: a probe daemon runs a real server (start_server -uid 0); a GPU in Exclusive_Process is not ready, with the reason, and is not changed', async () => {
  const r = await sup.readiness(['GPU-a', 'GPU-b'], new Map([['GPU-b', 'Exclusive_Process']]));
  expect(r.get('GPU-a')).toEqual({ ready: true, reason: 'MpsReady', message: 'MPS control daemons start and run a server on this GPU' });
  expect(r.get('GPU-b')).toEqual({
    ready: false,
    reason: 'ComputeModeNotDefault',
    message:
      'compute mode is Exclusive_Process; MPS shares need Default (nvidia-smi -i GPU-b -c DEFAULT), which the agent does not set itself',
  });
});

test('a probe daemon that starts no server makes the GPU not ready: MpsProbeFailed, with why', async () => {
  const probing = new MpsSupervisor({ controlBin: FAKE, baseDir: base, isolateShm: false, answerTimeoutMs: 500 });
  process.env.FAKE_MPS_NO_SERVER = '1';
  try {
    expect((await probing.readiness(['GPU-a'])).get('GPU-a')).toEqual({
      ready: false,
      reason: 'MpsProbeFailed',
      message:
        'a control daemon for this GPU did not run a server: start_server -uid 0 started no server (get_server_list lists none after 500 ms)',
    });
  } finally {
    delete process.env.FAKE_MPS_NO_SERVER;
  }
});

/** A supervisor that moves daemons into cgroups under `cgroups` (or as `over` says), and what it logged. */
function cgroupSupervisor(cgroups: string, over: Partial<SupervisorOptions> = {}): { inCgroup: MpsSupervisor; logged: string[] } {
  const logged: string[] = [];
  const inCgroup = new MpsSupervisor({
    controlBin: FAKE,
    baseDir: base,
    isolateShm: false,
    answerTimeoutMs: 2000,
    daemonCgroup: cgroups,
    log: (msg) => logged.push(msg),
    ...over,
  });
  return { inCgroup, logged };
}

test("a daemon cgroup: each share's daemon is moved into <dir>/<share>, with its memory limit, before its folder opens", async () => {
  const cgroups = join(base, 'cgroup');
  mkdirSync(cgroups);
  writeFileSync(join(cgroups, 'cgroup.controllers'), 'cpu memory pids\n');
  const { inCgroup, logged } = cgroupSupervisor(cgroups);
  try {
    await inCgroup.ensure(share('p1'));
    expect(readFileSync(join(cgroups, 'p1', 'cgroup.procs'), 'utf8')).toBe(String(findDaemonPid('p1')));
    expect(readFileSync(join(cgroups, 'p1', 'memory.max'), 'utf8')).toBe(String(512 * 2 ** 20));
    expect(logged.filter((m) => m.startsWith('no memory controller'))).toEqual([]);
  } finally {
    await inCgroup.stop();
  }
});

test('a daemon cgroup without a memory controller: daemons are moved without a limit, and the log says so once', async () => {
  const cgroups = join(base, 'cgroup');
  const { inCgroup, logged } = cgroupSupervisor(cgroups);
  try {
    await inCgroup.ensure(share('p1'));
    await inCgroup.ensure(share('p2'));
    expect(readFileSync(join(cgroups, 'p2', 'cgroup.procs'), 'utf8')).toBe(String(findDaemonPid('p2')));
    expect(existsSync(join(cgroups, 'p2', 'memory.max'))).toBe(false);
    expect(logged.filter((m) => m.startsWith('no memory controller'))).toEqual([
      'no memory controller in the daemon cgroups: daemons run there without a memory limit of their own',
    ]);
  } finally {
    await inCgroup.stop();
  }
});

test('a daemon cgroup the daemon cannot be moved into fails its share (it would die with the agent)', async () => {
  const cgroups = join(base, 'cgroup');
  mkdirSync(join(cgroups, 'p1', 'cgroup.procs'), { recursive: true });
  const { inCgroup } = cgroupSupervisor(cgroups);
  try {
    await expect(inCgroup.ensure(share('p1'))).rejects.toThrow(
      new RegExp(`^MPS daemon of ns/p1: moving the daemon \\(pid \\d+\\) into ${join(cgroups, 'p1')}: EISDIR`),
    );
  } finally {
    await inCgroup.stop();
  }
});

test("cgroup v1 hierarchies: each share's daemon gets <hierarchy>/<name>/<share> in each, its memory limit there, and they go with the share", async () => {
  const v1 = join(base, 'host-cgroup');
  const hierarchies = ['cpuset', 'memory', 'pids'].map((h) => join(v1, h));
  for (const h of hierarchies) mkdirSync(h, { recursive: true });
  writeFileSync(join(v1, 'memory', 'memory.limit_in_bytes'), '9223372036854771712');
  // A v1 cpuset cgroup starts with no CPUs (the kernel's files; plain ones here, made empty beforehand).
  writeFileSync(join(v1, 'cpuset', 'cpuset.cpus'), '0-1\n');
  writeFileSync(join(v1, 'cpuset', 'cpuset.mems'), '0\n');
  for (const d of [join(v1, 'cpuset', 'tf'), join(v1, 'cpuset', 'tf', 'p1')]) {
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'cpuset.cpus'), '');
    writeFileSync(join(d, 'cpuset.mems'), '');
  }
  const { inCgroup: inCgroups, logged } = cgroupSupervisor('', { daemonCgroup: undefined, daemonCgroupsV1: { hierarchies, name: 'tf' } });
  try {
    await inCgroups.ensure(share('p1'));
    for (const h of hierarchies) expect(readFileSync(join(h, 'tf', 'p1', 'cgroup.procs'), 'utf8')).toBe(String(findDaemonPid('p1')));
    expect(readFileSync(join(v1, 'memory', 'tf', 'p1', 'memory.limit_in_bytes'), 'utf8')).toBe(String(512 * 2 ** 20));
    expect(readFileSync(join(v1, 'cpuset', 'tf', 'p1', 'cpuset.cpus'), 'utf8')).toBe('0-1');
    expect(logged.filter((m) => m.startsWith('no memory controller'))).toEqual([]);
    // Plain folders stand for the cgroups: the files the kernel would drop are removed first.
    for (const h of hierarchies)
      for (const f of ['cgroup.procs', 'memory.limit_in_bytes', 'cpuset.cpus', 'cpuset.mems'])
        rmSync(join(h, 'tf', 'p1', f), { force: true });
    await inCgroups.release('p1');
    for (const h of hierarchies) expect(existsSync(join(h, 'tf', 'p1'))).toBe(false);
  } finally {
    await inCgroups.stop();
  }
});

test('a daemon that exits at once (a flag it refuses) makes its share fail with what it printed', async () => {
  const bin = join(base, 'refusing-control');
  writeFileSync(bin, '#!/bin/sh\necho "Only root user may enable -multiuser-server!" >&2\nexit 1\n', { mode: 0o755 });
  const refusing = new MpsSupervisor({ controlBin: bin, baseDir: base, isolateShm: false, answerTimeoutMs: 2000 });
  await expect(refusing.ensure(share('p1'))).rejects.toThrow(
    'MPS daemon of ns/p1: daemon exited with 1: Only root user may enable -multiuser-server!',
  );
});

test('without the control binary every GPU is not ready: MpsControlMissing', async () => {
  const missing = new MpsSupervisor({ controlBin: join(base, 'no-such-binary'), baseDir: base, isolateShm: false, answerTimeoutMs: 500 });
  expect((await missing.readiness(['GPU-a'])).get('GPU-a')).toEqual({
    ready: false,
    reason: 'MpsControlMissing',
    message: `${join(base, 'no-such-binary')} not found on the node`,
  });
});

test('a restarted agent takes over the shares pods still hold (a live daemon is kept) and ends the others', async () => {
  await sup.ensure(share('kept', { threadPercentage: 30 }));
  await sup.ensure(share('gone'));
  const next = new MpsSupervisor({ controlBin: FAKE, baseDir: base, isolateShm: false, answerTimeoutMs: 2000 });
  await next.adopt((id) => id === 'kept');
  expect(next.shares().map((s) => s.id)).toEqual(['kept']);
  expect(existsSync(join(base, 'gone'))).toBe(false);
  expect(await ask('kept', ['get_default_active_thread_percentage'])).toBe('30.0');
  await next.stop();
});

test('a share whose daemon died with the old agent is started again by the new one, limits and all', async () => {
  await sup.ensure(share('kept', { threadPercentage: 30 }));
  process.kill(findDaemonPid('kept'), 'SIGKILL');
  await new Promise((r) => setTimeout(r, 100));
  const next = new MpsSupervisor({ controlBin: FAKE, baseDir: base, isolateShm: false, answerTimeoutMs: 2000 });
  await next.adopt(() => true);
  expect(await ask('kept', ['get_default_active_thread_percentage'])).toBe('30.0');
  await next.stop();
});

test('an agent killed with its whole process group leaves the daemons, servers and clients running; the next agent adopts them', async () => {
  // The old agent: another process, the group leader of its own process group, as in its container.
  const script = `const { MpsSupervisor } = require(${JSON.stringify(resolve(__dirname, '../../../lib/runtime/agent/mps/supervisor'))});
    new MpsSupervisor({ controlBin: ${JSON.stringify(FAKE)}, baseDir: ${JSON.stringify(base)}, isolateShm: false })
      .ensure(${JSON.stringify(share('kept', { threadPercentage: 30 }))}).then(() => console.log('ready'));
    setInterval(() => undefined, 1000);`;
  const agent = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  clients.push(agent);
  await new Promise((res) => agent.stdout!.once('data', res));
  const c = client('kept', 100000, true);
  const server = Number((await c.first).split(' ')[1]);
  const daemon = findDaemonPid('kept');
  process.kill(-agent.pid!, 'SIGKILL');
  await new Promise((r) => agent.once('exit', r));
  await new Promise((r) => setTimeout(r, 200));
  expect(() => process.kill(daemon, 0)).not.toThrow();
  expect(c.proc.exitCode).toBeNull();
  const next = new MpsSupervisor({ controlBin: FAKE, baseDir: base, isolateShm: false, answerTimeoutMs: 2000 });
  try {
    await next.adopt(() => true);
    expect(await next.members('kept')).toEqual({ servers: [server], clients: [{ server, pid: c.proc.pid }] });
    await next.check();
    expect(next.restarts()).toBe(0);
    expect(findDaemonPid('kept')).toBe(daemon);
  } finally {
    await next.stop();
  }
}, 60_000);

/** The pid of the fake daemon serving share `id` (from its log). */
function findDaemonPid(id: string): number {
  const log = readFileSync(join(sup.dirsOf(id).logDir, 'control.log'), 'utf8')
    .trim()
    .split('\n');
  return Number(/Control (\d+)\]/.exec(log[log.length - 1])![1]);
}

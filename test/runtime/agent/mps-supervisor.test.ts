/**
 * The MPS supervisor against the fake nvidia-cuda-mps-control (test/support/fake-mps-control.js,
 * which behaves as the real daemon does for these commands): per-share daemons with their limits, a
 * daemon that dies or hangs replaced with its limits re-applied, a stale socket, clients ended through
 * the daemon, per-user servers, readiness per GPU, and shares taken over by a restarted agent.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { mpsCommand } from '../../../lib/runtime/agent/mps/control';
import { MpsShare, MpsSupervisor } from '../../../lib/runtime/agent/mps/supervisor';

const FAKE = resolve(__dirname, '../../support/fake-mps-control.js');
const GIB = 2 ** 30;

let base: string;
let sup: MpsSupervisor;
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

/** A fake MPS client of share `id` running as `uid`; resolves with its first line (`ready <server> ...`). */
function client(id: string, uid: number): { proc: ChildProcess; first: Promise<string> } {
  const proc = spawn(process.execPath, [FAKE, 'client', String(uid)], {
    env: { ...process.env, CUDA_MPS_PIPE_DIRECTORY: sup.dirsOf(id).pipeDir },
  });
  clients.push(proc);
  const first = new Promise<string>((res) => proc.stdout!.once('data', (d) => res(String(d).trim())));
  return { proc, first };
}

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'tf-mps-'));
  sup = new MpsSupervisor({ controlBin: FAKE, baseDir: base, isolateShm: false, answerTimeoutMs: 2000 });
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

test("within one daemon a client of another user queues until the first user's clients end (the rule per-share daemons avoid)", async () => {
  await sup.ensure(share('p1'));
  const a = client('p1', 0);
  await a.first;
  const b = client('p1', 1000);
  const early = await Promise.race([b.first, new Promise((r) => setTimeout(() => r('waiting'), 300))]);
  expect(early).toBe('waiting');
  a.proc.kill('SIGKILL');
  expect(await b.first).toMatch(/^ready /);
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
      'MPS daemon of ns/p9: set_default_active_thread_percentage 25; set_default_device_pinned_mem_limit 0 4096M; get_default_active_thread_percentage: no answer within 500 ms',
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

/** The pid of the fake daemon serving share `id` (from its log). */
function findDaemonPid(id: string): number {
  const log = readFileSync(join(sup.dirsOf(id).logDir, 'control.log'), 'utf8')
    .trim()
    .split('\n');
  return Number(/Control (\d+)\]/.exec(log[log.length - 1])![1]);
}

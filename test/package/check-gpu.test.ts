/**
 * `npm run check:gpu` where there is no GPU (CI, development machines): one line and exit 0, but a
 * failure where /dev/nvidiactl exists. Its `--pack` folder: complete, under the size limit, its
 * run.sh runs the bundled check on the packed node outside the repo and forwards SIGTERM. Against
 * fakes (nvidia-smi, nvidia-cuda-mps-control, a libcuda built here, device nodes): the global
 * deadline, the JSON line with null and a reason for what did not finish, and the torch-free client's
 * answers. The GPU path itself needs a GPU machine.
 */
import { execFileSync, spawn, spawnSync, SpawnSyncReturns } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fakeMpsControl } from '../support/fake-mps-control';

const REPO = resolve(__dirname, '../..');
const LINE = 'check:gpu: no NVIDIA GPU here (nvidia-smi lists none); nothing to check';
const CLIENT = join(REPO, 'scripts/check-gpu/client.py');
const SUPPORT = join(REPO, 'test/support');

let work: string;
/** PATH with an nvidia-smi first that lists no GPU, as the real one does on a machine without one. */
let noGpuPath: string;
/** PATH with fakes of nvidia-smi (one GPU) and nvidia-cuda-mps-control, and the variables that complete them. */
let fakeGpuPath: string;
let fakeGpuEnv: NodeJS.ProcessEnv;
/** The fake libcuda.so.1 (test/support/fake-libcuda.c, built here). */
let libcuda: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'check-gpu-test-'));
  chmodSync(work, 0o755); // the check's non-root clients load the fake libcuda from here
  const bin = join(work, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'nvidia-smi'), '#!/bin/sh\necho "No devices were found"\nexit 6\n', { mode: 0o755 });
  noGpuPath = `${bin}${delimiter}${process.env.PATH}`;
  const gpuBin = join(work, 'gpu-bin');
  const dev = join(work, 'dev');
  mkdirSync(gpuBin);
  mkdirSync(dev);
  copyFileSync(join(SUPPORT, 'fake-nvidia-smi.js'), join(gpuBin, 'nvidia-smi'));
  copyFileSync(fakeMpsControl(), join(gpuBin, 'nvidia-cuda-mps-control'));
  for (const n of ['nvidiactl', 'nvidia-uvm', 'nvidia0']) execFileSync('mknod', ['-m', '666', join(dev, n), 'c', '1', '3']);
  libcuda = join(work, 'libcuda.so.1');
  execFileSync('cc', ['-shared', '-fPIC', '-o', libcuda, join(SUPPORT, 'fake-libcuda.c')]);
  writeFileSync(
    join(work, 'trace.json'),
    JSON.stringify({ gpus: [{ index: 0, uuid: 'GPU-fake-0', name: 'Fake H200' }], steps: [{ apps: [] }] }),
  );
  writeFileSync(join(work, 'step'), '0');
  fakeGpuPath = `${gpuBin}${delimiter}${process.env.PATH}`;
  fakeGpuEnv = {
    FAKE_SMI_TRACE: join(work, 'trace.json'),
    FAKE_SMI_STEP_FILE: join(work, 'step'),
    CHECK_GPU_DEV: dev,
    CHECK_GPU_LIBCUDA: libcuda,
  };
});

afterAll(() => rmSync(work, { recursive: true, force: true }));

function run(cmd: string, args: string[], path: string, extra: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { cwd: REPO, env: { ...process.env, PATH: path, ...extra }, encoding: 'utf8', timeout: 120_000 });
}

describe('npm run check:gpu without a GPU', () => {
  it('prints one line and exits 0 where nvidia-smi lists no GPU', () => {
    const r = run('npm', ['run', '-s', 'check:gpu'], noGpuPath);
    expect(r.stdout).toBe(`${LINE}\n`);
    expect(r.status).toBe(0);
  });

  it('fails with a JSON line, not the no-GPU line, where /dev/nvidiactl exists but nvidia-smi cannot run', () => {
    const dev = mkdtempSync(join(work, 'dev-'));
    writeFileSync(join(dev, 'nvidiactl'), '');
    const r = run('npm', ['run', '-s', 'check:gpu'], noGpuPath, { CHECK_GPU_DEV: dev });
    expect(JSON.parse(r.stdout)).toEqual({
      pass: false,
      error: expect.stringMatching(
        new RegExp(`^${join(dev, 'nvidiactl')} exists but nvidia-smi cannot run here: Command failed: .*nvidia-smi`),
      ),
    });
    expect(r.status).toBe(1);
  });

  it('prints the same line where nvidia-smi is not installed', () => {
    const empty = mkdtempSync(join(work, 'empty-'));
    const r = run(process.execPath, [join(REPO, 'node_modules/ts-node/dist/bin.js'), '--transpile-only', 'scripts/check-gpu.ts'], empty);
    expect(r.stdout).toBe(`${LINE}\n`);
    expect(r.status).toBe(0);
  });
});

describe('npm run check:gpu -- --pack', () => {
  let dir: string;
  let packed: SpawnSyncReturns<string>;

  // One pack for both tests: it gzips the node binary (about 10 s here).
  beforeAll(() => {
    dir = join(work, 'pack');
    packed = run('npm', ['run', '-s', 'check:gpu', '--', '--pack', dir], process.env.PATH!);
  }, 180_000);

  it('writes run.sh, the bundle, the client and the gzipped node, under 60 MiB, and prints its size', () => {
    expect(packed.stderr).toBe('');
    expect(packed.status).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['check-gpu.js', 'client.py', 'node.gz', 'run.sh']);
    const bytes = readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
    expect(bytes).toBeLessThan(60 * 2 ** 20);
    expect(packed.stdout).toContain(`packed ${dir}: ${(bytes / 2 ** 20).toFixed(1)} MiB`);
    expect(statSync(join(dir, 'run.sh')).mode & 0o111).toBe(0o111);
  });

  it('run.sh forwards SIGTERM: sent at 4 s, the check ends within 5 s with its JSON line, null and a reason for what did not run', async () => {
    const child = spawn('bash', [join(dir, 'run.sh')], { env: { ...process.env, PATH: fakeGpuPath, ...fakeGpuEnv } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', () => undefined);
    await new Promise((r) => setTimeout(r, 4_000));
    const sent = Date.now();
    child.kill('SIGTERM');
    const code = await new Promise((r) => child.once('close', r));
    expect(Date.now() - sent).toBeLessThan(5_000);
    expect(code).toBe(130);
    const result = JSON.parse(out.trim().split('\n').pop()!);
    expect(result.pass).toBe(false);
    expect(Object.values(result.errors)).toContain('not run: interrupted by SIGTERM');
    expectNullsWithReasons(result);
  }, 30_000);

  it('run.sh unpacks node, runs the bundle outside the repo, and removes the unpacked node', () => {
    const tmp = mkdtempSync(join(work, 'tmp-'));
    const r = run('bash', [join(dir, 'run.sh')], noGpuPath, { TMPDIR: tmp });
    expect(r.stdout).toBe(`${LINE}\n`);
    expect(r.status).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
  }, 60_000);
});

/** Every check is measured or null with its reason: never false for "could not tell". */
function expectNullsWithReasons(result: { errors: Record<string, string> } & Record<string, unknown>): void {
  for (const [name, why] of Object.entries(result.errors)) {
    expect([name, result[name]]).toEqual([name, null]);
    expect(why).not.toBe('');
  }
}

describe('npm run check:gpu against fakes', () => {
  it('ends at the global deadline with the JSON line: what finished, and null with the reason for the rest', () => {
    const started = Date.now();
    const r = run('npm', ['run', '-s', 'check:gpu'], fakeGpuPath, { ...fakeGpuEnv, CHECK_GPU_DEADLINE_S: '3' });
    expect(Date.now() - started).toBeLessThan(30_000);
    const result = JSON.parse(r.stdout.trim().split('\n').pop()!);
    expect(result).toMatchObject({ gpu: 'Fake H200', uuid: 'GPU-fake-0', gpus: 1, pass: false });
    expect(Object.values(result.errors)).toContain('not run: the 3 s deadline passed');
    expectNullsWithReasons(result);
    expect(r.stderr).toMatch(/^check:gpu: isolation: /m); // streamed as it ended
    expect(r.status).toBe(1);
  }, 60_000);

  it('a whole run: limits read through the clients, a tenant refused, host root caught, and null with the reason where the fakes cannot tell', () => {
    const r = run('npm', ['run', '-s', 'check:gpu'], fakeGpuPath, fakeGpuEnv);
    const result = JSON.parse(r.stdout.trim().split('\n').pop()!);
    expect(result).toMatchObject({
      isolation: { ready: true, reason: 'MpsReady' },
      vramLimitHolds: true,
      hostileVramLimitHolds: true,
      smsAt25Percent: 32,
      smsTotal: 132,
      nonRootClientBound: true,
      tenantCannotRaise: true,
      rootRaiseCaught: true,
      othersSurviveKill: true,
      freshClientAfterKill: 66,
      // The fake nvidia-smi lists no process: the bypass is never seen, and pass cannot be true.
      bypassKilledMs: null,
      mpsRssKiB: null,
      multiGpuLimits: null,
      pass: false,
    });
    expect(result.errors).toEqual({
      bypassKilledMs: 'the bypassing client never showed in nvidia-smi as a process outside the shares within 10 s',
      // The fake daemon's servers are not processes.
      mpsRssKiB: expect.stringMatching(/^ENOENT: no such file or directory, open '\/proc\/\d+\/status'$/),
      multiGpuLimits: 'this machine has 1 GPU: a share over several GPUs needs two',
    });
    expect(result.details.tenantCannotRaise.answers).toEqual(
      Array(3).fill(expect.stringMatching(/^Insufficient privileges for UID 100000\./)),
    );
    expect(result.details.rootRaiseCaught).toMatchObject({ raisedClientSms: 132, afterClientSms: 32 });
    expect(result.halfShareTflops).toBeLessThanOrEqual(0.65 * result.soloTflops);
    expect(r.status).toBe(1);
  }, 120_000);
});

describe('the torch-free client (ctypes on libcuda)', () => {
  // -S: no site-packages, so no PyTorch even where it is installed (the client must not need it).
  const client = (args: string[], env: NodeJS.ProcessEnv = {}, input = '') =>
    spawnSync('python3', ['-S', CLIENT, ...args], { env: { ...process.env, CHECK_GPU_LIBCUDA: libcuda, ...env }, input, encoding: 'utf8' });
  const lines = (r: SpawnSyncReturns<string>) =>
    r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it('info: the SM count and memory its context sees', () => {
    const r = client(['info'], { FAKE_CUDA_SMS: '32', FAKE_CUDA_LIMIT_MIB: '1903' });
    expect(lines(r)).toEqual([{ pid: expect.any(Number), uid: 0, ctxS: expect.any(Number), sms: 32, memInfoMiB: [1903, 143771] }]);
    expect(r.status).toBe(0);
  });

  it('alloc: 512 MiB blocks until out of memory; hold: a ready line, then the result at a line on stdin', () => {
    expect(lines(client(['alloc', '8192'], { FAKE_CUDA_LIMIT_MIB: '1903' }))[0]).toMatchObject({ allocatedMiB: 1536, oom: true });
    expect(lines(client(['alloc', '1024']))[0]).toMatchObject({ allocatedMiB: 1024, oom: false });
    expect(lines(client(['hold', '1024'], {}, 'go\n')).map((l) => [l.ready, l.heldMiB])).toEqual([
      [true, 1024],
      [undefined, 1024],
    ]);
  });

  it('burn: the FMA kernel through the driver, with its TFLOPS; where it cannot load and there is no PyTorch, an error saying so', () => {
    const ok = lines(client(['burn', '0.3'], {}, 'go\n'));
    expect(ok[0]).toMatchObject({ ready: true, engine: 'ptx-fma-fp32' });
    expect(ok[1]).toMatchObject({ engine: 'ptx-fma-fp32', tflops: expect.any(Number) });
    const noJit = client(['burn', '0.3'], { FAKE_CUDA_NO_JIT: '1' }, 'go\n');
    expect(lines(noJit)).toEqual([
      { error: 'RuntimeError: the FMA kernel did not run (cuModuleLoadData: CUDA_ERROR_INVALID_PTX (218)) and PyTorch is not installed' },
    ]);
    expect(noJit.status).toBe(1);
  });

  it('a driver error ends the client with its name and exit status 1', () => {
    const r = client(['info'], { FAKE_CUDA_INIT_ERROR: '100' });
    expect(lines(r)).toEqual([{ error: 'CudaError: cuInit: CUDA_ERROR_NO_DEVICE (100)' }]);
    expect(r.status).toBe(1);
  });
});

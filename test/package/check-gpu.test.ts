/**
 * `npm run check:gpu` where there is no GPU (CI, development machines): one line and exit 0. And its
 * `--pack` folder: complete, under the size limit, and its run.sh runs the bundled check on the packed
 * node outside the repo (here, too, to the no-GPU line). The GPU path itself needs a GPU machine.
 */
import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';

const REPO = resolve(__dirname, '../..');
const LINE = 'check:gpu: no NVIDIA GPU here (nvidia-smi lists none); nothing to check';

let work: string;
/** PATH with an nvidia-smi first that lists no GPU, as the real one does on a machine without one. */
let noGpuPath: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'check-gpu-test-'));
  const bin = join(work, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'nvidia-smi'), '#!/bin/sh\necho "No devices were found"\nexit 6\n', { mode: 0o755 });
  noGpuPath = `${bin}${delimiter}${process.env.PATH}`;
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

  it('run.sh unpacks node, runs the bundle outside the repo, and removes the unpacked node', () => {
    const tmp = mkdtempSync(join(work, 'tmp-'));
    const r = run('bash', [join(dir, 'run.sh')], noGpuPath, { TMPDIR: tmp });
    expect(r.stdout).toBe(`${LINE}\n`);
    expect(r.status).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
  }, 60_000);
});

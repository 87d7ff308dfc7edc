/**
 * The two fake nvidia-smis (test/support/fake-nvidia-smi.js, and the C one the real node runs,
 * fake-nvidia-smi.c) answer alike: the same stdout, stderr and exit status for every query the agent
 * runs, over traces with MPS servers and clients, compute modes, a failing step, no processes, a
 * step chosen by file and by time, and arguments neither knows.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMI_QUERIES } from '../../lib/runtime/agent/nvidia-smi-run';
import { builtFake } from './built-fake';

const JS = join(__dirname, 'fake-nvidia-smi.js');
const C = builtFake('fake-nvidia-smi');

const TRACE = {
  gpus: [
    { index: 0, uuid: 'GPU-11111111-2222-3333-4444-555555555555', name: 'NVIDIA A100-SXM4-80GB' },
    { index: 1, uuid: 'GPU-66666666-7777-8888-9999-000000000000', name: 'NVIDIA H100 80GB HBM3', computeMode: 'Exclusive_Process' },
  ],
  steps: [
    {
      apps: [
        { pid: 900, gpu: 0, mib: 66, sm: 60, mps: 'server' },
        { pid: 101, gpu: 0, mib: 2806, sm: null, mps: 'client' },
        { pid: 4194303, gpu: 1, mib: 1.5, sm: 100 },
        { pid: 7, gpu: 1, mib: 0, sm: null },
      ],
    },
    { apps: [] },
    { apps: [], fail: true },
  ],
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tf-fake-smi-'));
  writeFileSync(join(dir, 'trace.json'), JSON.stringify(TRACE, null, 2));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function both(args: readonly string[], env: Record<string, string>): void {
  const run = (cmd: string, argv: readonly string[]) => {
    const r = spawnSync(cmd, argv, { env: { PATH: process.env.PATH, FAKE_SMI_TRACE: join(dir, 'trace.json'), ...env }, encoding: 'utf8' });
    return { stdout: r.stdout, stderr: r.stderr, status: r.status };
  };
  const js = run(process.execPath, [JS, ...args]);
  expect(run(C, args)).toEqual(js);
}

const queries = [...Object.values(SMI_QUERIES), ['--query-gpu=pstate'], []];

test.each([0, 1, 2, 7, -1])('step %i by file: every query, byte for byte', (step) => {
  writeFileSync(join(dir, 'step'), `${step}\n`);
  for (const q of queries) both(q, { FAKE_SMI_STEP_FILE: join(dir, 'step') });
});

test('step by time: started long enough ago for the last step', () => {
  for (const q of queries) both(q, { FAKE_SMI_START_MS: String(Date.now() - 60_000), FAKE_SMI_STEP_MS: '1000' });
});

test('what the C fake prints for the MPS step (the agent parses this)', () => {
  writeFileSync(join(dir, 'step'), '0');
  const out = (args: readonly string[]) =>
    spawnSync(C, args, { env: { FAKE_SMI_TRACE: join(dir, 'trace.json'), FAKE_SMI_STEP_FILE: join(dir, 'step') }, encoding: 'utf8' })
      .stdout;
  expect(out(SMI_QUERIES.apps)).toBe(
    '900, 66, GPU-11111111-2222-3333-4444-555555555555\n101, 2806, GPU-11111111-2222-3333-4444-555555555555\n' +
      '4194303, 1.5, GPU-66666666-7777-8888-9999-000000000000\n7, 0, GPU-66666666-7777-8888-9999-000000000000\n',
  );
  expect(out(SMI_QUERIES.modes)).toBe(
    'GPU-11111111-2222-3333-4444-555555555555, Default\nGPU-66666666-7777-8888-9999-000000000000, Exclusive_Process\n',
  );
});

/**
 * `npm run check:gpu`: the node side's MPS isolation on a real GPU. The real MpsSupervisor runs one
 * control daemon per share with the real nvidia-cuda-mps-control, python3 + PyTorch clients run with
 * the environment a pod's container gets, and the real GpuCollector reads the real nvidia-smi. Ends
 * with one JSON line (exit 1 where a check failed). Where nvidia-smi lists no GPU (CI, development
 * machines) it prints one line and exits 0.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { MpsSupervisor } from '../../lib/runtime/agent/mps/supervisor';
import { GpuCheck, passed } from './checks';
import { Clients } from './clients';

const run = promisify(execFile);

/** The whole output where nvidia-smi lists no GPU (or is not installed). */
export const NO_GPU_LINE = 'check:gpu: no NVIDIA GPU here (nvidia-smi lists none); nothing to check';

/** An executable on PATH by name, or the bare name (whoever runs it then reports it missing). */
function onPath(name: string): string {
  const dir = (process.env.PATH ?? '').split(delimiter).find((d) => d && existsSync(join(d, name)));
  return dir ? join(dir, name) : name;
}

const note = (msg: string) => console.error(`check:gpu: ${msg}`);

/** Runs the check with `clientScript` (client.py) as the CUDA client; resolves to the exit status. */
export async function checkGpu(clientScript: string): Promise<number> {
  const listed = await run('nvidia-smi', ['-L']).then(
    (r) => r.stdout,
    () => '',
  );
  if (!/^GPU \d+:/m.test(listed)) {
    console.log(NO_GPU_LINE);
    return 0;
  }
  const started = Date.now();
  const nvidiaSmi = onPath('nvidia-smi');
  const query = await run(nvidiaSmi, [
    '-i',
    '0',
    '--query-gpu=name,uuid,driver_version,memory.total,compute_mode',
    '--format=csv,noheader,nounits',
  ]);
  const [gpu, uuid, driver, memoryMiB, computeMode] = query.stdout
    .trim()
    .split(',')
    .map((f) => f.trim());
  const workDir = await mkdtemp(join(tmpdir(), 'check-gpu-'));
  const supervisor = new MpsSupervisor({
    controlBin: onPath('nvidia-cuda-mps-control'),
    // Short: the daemons' sockets live below it, and a Unix socket path has at most 107 characters.
    baseDir: join(workDir, 's'),
    // The clients here are host processes that see the host's /dev/shm, not a pod whose /dev/shm is
    // the share's folder; MPS clients and servers meet through /dev/shm, so a daemon in a namespace
    // of its own would serve none of them. Limits in the daemon and two daemons at once do not
    // depend on where /dev/shm is.
    isolateShm: false,
    answerTimeoutMs: 10_000,
    log: (msg, fields) => note(`${msg} ${JSON.stringify(fields ?? {})}`),
  });
  const clients = new Clients(onPath('python3'), clientScript);
  const check = new GpuCheck({ supervisor, clients, gpuUuid: uuid, nvidiaSmi, workDir, note });
  // A signal ends the run early and the cleanup below still runs; a second one exits at once.
  let interrupted = false;
  const onSignal = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    check.abort();
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  let result;
  try {
    const values = await check.run();
    result = {
      gpu,
      uuid,
      driver,
      memoryMiB: Number(memoryMiB),
      computeMode,
      ...values,
      pass: passed(values),
      errors: check.errors,
      details: check.details,
      timingsMs: { ...check.timingsMs, total: Date.now() - started },
    };
  } finally {
    await cleanUp(clients, supervisor, workDir);
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
  // Printed once everything is stopped: the JSON line is the last line of the output.
  console.log(JSON.stringify(result));
  return interrupted ? 130 : result.pass ? 0 : 1;
}

/** Clients first (a daemon waits for its clients), then the daemons with their servers, then the folders. */
async function cleanUp(clients: Clients, supervisor: MpsSupervisor, workDir: string): Promise<void> {
  clients.close();
  await supervisor.stop();
  await rm(workDir, { recursive: true, force: true });
}

/** Runs the check and exits with its status; an error that stops the whole check ends as a JSON line too. */
export function runCheckGpu(clientScript: string): void {
  checkGpu(clientScript).then(
    (code) => process.exit(code),
    (err: Error) => {
      console.log(JSON.stringify({ pass: false, error: err.message }));
      process.exit(1);
    },
  );
}

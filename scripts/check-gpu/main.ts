/**
 * `npm run check:gpu`: the node side's MPS isolation on a real GPU, on the production path. The real
 * MpsSupervisor runs one `-M` control daemon per share in its own mount namespace (a bounded
 * /dev/shm) with the real nvidia-cuda-mps-control, clients (client.py: ctypes on libcuda, PyTorch
 * optional) start as a share's containers would, and the real GpuCollector reads the real nvidia-smi.
 * Each sub-check's result is streamed (stderr) as it ends; one JSON line on stdout ends the run (exit
 * 1 where a check failed), also when the global deadline passes or a signal arrives, with what
 * finished and null plus a reason for the rest. Where no GPU is here it prints one line and exits 0,
 * unless /dev/nvidiactl exists: then nvidia-smi failing is a failure, not a machine without a GPU.
 */
import { chmod, copyFile, mkdtemp, rm, rmdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LimitBreach, MpsSupervisor } from '../../lib/runtime/agent/mps/supervisor';
import { DEFAULT_PIPE_DIRECTORY } from '../../lib/runtime/agent/share/container-edits';
import { GpuCheck, passed } from './checks';
import { Clients } from './clients';
import { CheckedGpu, findTool, listGpus } from './smi';

/** The whole output where nvidia-smi lists no GPU (or is not installed) and there is no /dev/nvidiactl. */
export const NO_GPU_LINE = 'check:gpu: no NVIDIA GPU here (nvidia-smi lists none); nothing to check';
/** The global deadline, seconds ($CHECK_GPU_DEADLINE_S for the tests). */
export const DEADLINE_S = 240;
/** How long the daemons' cleanup may take once the JSON line is out. */
const CLEANUP_MS = 15_000;

const note = (msg: string) => console.error(`check:gpu: ${msg}`);

export interface CheckGpuOptions {
  /** client.py. */
  readonly clientScript: string;
  readonly deadlineS?: number;
  /** Where the driver's device nodes are. @default /dev */
  readonly devDir?: string;
}

/** Runs the check; resolves to the exit status once the JSON line is printed and the daemons are gone. */
export async function checkGpu(opts: CheckGpuOptions): Promise<number> {
  const devDir = opts.devDir ?? '/dev';
  const nvidiaSmi = findTool('nvidia-smi');
  const gpus = nvidiaSmi
    ? await listGpus(nvidiaSmi).catch((err: Error) => err)
    : new Error('nvidia-smi is not on PATH nor in /usr/local/nvidia/bin');
  if (gpus instanceof Error || gpus.length === 0) {
    if (!existsSync(join(devDir, 'nvidiactl'))) {
      console.log(NO_GPU_LINE);
      return 0;
    }
    const why = gpus instanceof Error ? gpus.message : 'it lists no GPU';
    console.log(JSON.stringify({ pass: false, error: `${join(devDir, 'nvidiactl')} exists but nvidia-smi cannot run here: ${why}` }));
    return 1;
  }
  return run(opts, nvidiaSmi!, gpus, devDir);
}

async function run(opts: CheckGpuOptions, nvidiaSmi: string, gpus: CheckedGpu[], devDir: string): Promise<number> {
  const started = Date.now();
  const workDir = await mkdtemp(join(tmpdir(), 'check-gpu-'));
  // Tenants' uids (100000, 65534) reach the shares' pipe folders and the client below it.
  await chmod(workDir, 0o755);
  const script = join(workDir, 'client.py');
  await copyFile(opts.clientScript, script);
  await chmod(script, 0o644);
  const controlBin = findTool('nvidia-cuda-mps-control') ?? 'nvidia-cuda-mps-control';
  // The clients' launches create CUDA's default pipe folder as a mount point; removed after if they did.
  const defaultPipeWasThere = existsSync(DEFAULT_PIPE_DIRECTORY);
  const breaches: LimitBreach[] = [];
  const supervisor = new MpsSupervisor({
    controlBin,
    // Short: the daemons' sockets live below it, and a Unix socket path has at most 107 characters.
    baseDir: join(workDir, 's'),
    answerTimeoutMs: 10_000,
    onBreach: (b) => breaches.push(b),
    log: (msg, fields) => note(`${msg} ${JSON.stringify(fields ?? {})}`),
  });
  const clients = new Clients({ python: findTool('python3') ?? 'python3', script, devDir, stageDir: join(workDir, 'stage') });
  const check = new GpuCheck({ supervisor, clients, gpus, controlBin, nvidiaSmi, workDir, breaches, note });
  const deadlineS = opts.deadlineS ?? DEADLINE_S;
  // run() returns soon after abort (its clients are killed); `cut` bounds a step that does not.
  let cut: () => void = () => undefined;
  const cutShort = new Promise<void>((r) => (cut = r));
  const stop = (why: string, graceMs: number) => {
    check.abort(why);
    setTimeout(cut, graceMs).unref();
  };
  const deadline = setTimeout(() => stop(`the ${deadlineS} s deadline passed`, 5_000), deadlineS * 1000);
  // A signal ends the run early; a second one exits at once.
  let signalled: string | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    if (signalled) process.exit(130);
    signalled = sig;
    stop(`interrupted by ${sig}`, 2_000);
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  let crash: string | undefined;
  await Promise.race([check.run().catch((err: Error) => (crash = err.message)), cutShort]);
  clearTimeout(deadline);
  const v = check.values;
  const gpu = gpus[0];
  console.log(
    JSON.stringify({
      gpu: gpu.name,
      uuid: gpu.uuid,
      gpus: gpus.length,
      driver: gpu.driver ?? null,
      memoryMiB: gpu.memoryMiB ?? null,
      computeMode: gpu.computeMode ?? null,
      ...v,
      pass: passed(v),
      ...(crash ? { error: crash } : {}),
      errors: check.errors,
      details: { ...check.details, breaches: breaches.map((b) => ({ pod: b.share.pod, mismatches: b.mismatches, clients: b.clients })) },
      timingsMs: { ...check.timingsMs, total: Date.now() - started },
    }),
  );
  // The daemons and their servers go; bounded, since the JSON line is already out.
  clients.close();
  await Promise.race([supervisor.stop(), new Promise((r) => setTimeout(r, CLEANUP_MS).unref())]);
  await rm(workDir, { recursive: true, force: true }).catch(() => undefined);
  if (!defaultPipeWasThere) await rmdir(DEFAULT_PIPE_DIRECTORY).catch(() => undefined);
  process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  return signalled ? 130 : passed(v) ? 0 : 1;
}

/** Runs the check and exits with its status; an error that stops the whole check ends as a JSON line too. */
export function runCheckGpu(clientScript: string): void {
  const deadlineS = Number(process.env.CHECK_GPU_DEADLINE_S) || undefined;
  checkGpu({ clientScript, deadlineS, devDir: process.env.CHECK_GPU_DEV || undefined }).then(
    (code) => process.exit(code),
    (err: Error) => {
      console.log(JSON.stringify({ pass: false, error: err.message }));
      process.exit(1);
    },
  );
}

/**
 * The GPU check's CUDA clients: client.py (ctypes on libcuda, no PyTorch needed) started in a
 * container built from a share's ContainerSpec (container.ts), each reporting JSON lines on stdout.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ContainerSpec, launchArgs } from './container';

/** A line of client.py: its ready line or its result (the last line). */
export interface ClientReport {
  readonly pid: number;
  readonly uid: number;
  /** Seconds to the context (under MPS: joining the server). */
  readonly ctxS: number;
  /** SMs the context sees. */
  readonly sms: number;
  /** cuMemGetInfo: free and total, MiB. */
  readonly memInfoMiB: [number, number];
  readonly ready?: boolean;
  readonly allocatedMiB?: number;
  readonly heldMiB?: number;
  /** The allocation loop ended with CUDA out of memory. */
  readonly oom?: boolean;
  readonly tflops?: number;
  /** What ran the compute loop: the PTX FMA kernel or PyTorch's matmul. */
  readonly engine?: string;
  readonly error?: string;
}

export type ClientMode = 'info' | 'alloc' | 'hold' | 'burn';

export interface Client {
  readonly child: ChildProcess;
  /** The ready line of a burn or hold client; rejects when the process ends first. */
  readonly ready: Promise<ClientReport>;
  /** The result, once the process exited 0; rejects with its error otherwise. */
  readonly done: Promise<ClientReport>;
  /** Starts a ready burn client's timed loop, or ends a hold client. */
  go(): void;
}

export interface ClientsOptions {
  readonly python: string;
  readonly script: string;
  /** Where the host's GPU device nodes are (/dev; the tests' fake nodes elsewhere). */
  readonly devDir: string;
  /** A folder of the check's own for the launches' staging mounts. */
  readonly stageDir: string;
}

/** Starts clients and ends those still running at the end of the check. */
export class Clients {
  private readonly live = new Set<ChildProcess>();
  private closed = false;
  private count = 0;

  constructor(private readonly opts: ClientsOptions) {}

  /**
   * Starts client.py in `mode` with `arg` in the container `spec` describes, as host `uid`, with the
   * spec's variables on top of this process's environment less its CUDA_MPS_* ones (so a client
   * without a variable really has none). Killed after `timeoutMs`.
   */
  start(spec: ContainerSpec, mode: ClientMode, arg = 0, uid = 0, timeoutMs = 60_000): Client {
    if (this.closed) throw new Error('interrupted');
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CUDA_MPS_')));
    const env = { ...base, ...spec.env, ...(uid !== 0 ? { CHECK_GPU_AS_UID: String(uid) } : {}) };
    const stage = `${this.opts.stageDir}/${++this.count}`;
    const argv = [this.opts.python, this.opts.script, mode, String(arg)];
    const child = spawn('unshare', launchArgs(spec, this.opts.devDir, stage, argv), { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.live.add(child);
    // A client that died cannot take its "go"; the write error is not the check's failure.
    child.stdin!.on('error', () => undefined);
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-4000);
    });
    const lines: ClientReport[] = [];
    let onReady: (r: ClientReport) => void = () => undefined;
    const readyLine = new Promise<ClientReport>((res) => {
      onReady = res;
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      // Libraries may print too; only the client's own lines are JSON objects.
      if (!line.startsWith('{')) return;
      try {
        const r = JSON.parse(line) as ClientReport;
        lines.push(r);
        if (r.ready) onReady(r);
      } catch {
        /* not the client's */
      }
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    const done = new Promise<ClientReport>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        this.live.delete(child);
        const last = lines.at(-1);
        if (code === 0 && last && !last.ready) return resolve(last);
        const why = timedOut ? `no result within ${timeoutMs / 1000} s` : (last?.error ?? `exited with ${code ?? signal}${tail(stderr)}`);
        reject(new Error(`${mode} client: ${why}`));
      });
    });
    const ready = Promise.race([
      readyLine,
      done.then(() => {
        throw new Error(`${mode} client ended before it was ready`);
      }),
    ]);
    // Either may be left unawaited when an earlier step of a sub-check failed.
    for (const p of [ready, done]) p.catch(() => undefined);
    return { child, ready, done, go: () => child.stdin!.end('go\n') };
  }

  /** Kills every client still running and starts no more. */
  close(): void {
    this.closed = true;
    for (const child of this.live) child.kill('SIGKILL');
  }
}

/** The last lines of a client's stderr, for its error; nothing when it printed none. */
function tail(text: string): string {
  const lines = text.trim().split('\n').filter(Boolean).slice(-3);
  return lines.length > 0 ? `: ${lines.join(' | ')}` : '';
}

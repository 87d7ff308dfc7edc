/**
 * The GPU check's CUDA clients: python3 + PyTorch processes (client.py) started with the environment
 * a pod's container gets from the agent's device plugin, each reporting JSON lines on stdout.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { MpsShare, ShareDirs } from '../../lib/runtime/agent/mps/supervisor';
import { shareEdits } from '../../lib/runtime/agent/share/container-edits';

/** A line of client.py: its ready line or its result (the last line). */
export interface ClientReport {
  readonly pid: number;
  /** SMs the process's CUDA device properties report. */
  readonly sms: number;
  /** `torch.cuda.mem_get_info()`: free and total, GiB. */
  readonly memGetInfoGiB: [number, number];
  readonly ready?: boolean;
  readonly allocatedGiB?: number;
  /** The allocation loop ended with CUDA out of memory. */
  readonly oom?: boolean;
  readonly tflops?: number;
  readonly error?: string;
}

export type ClientMode = 'info' | 'alloc' | 'matmul' | 'hold';

export interface Client {
  readonly child: ChildProcess;
  /** The ready line of a matmul or hold client; rejects when the process ends first. */
  readonly ready: Promise<ClientReport>;
  /** The result, once the process exited 0; rejects with its error otherwise. */
  readonly done: Promise<ClientReport>;
  /** Starts a ready matmul client's timed loop, or ends a hold client. */
  go(): void;
}

/**
 * The variables the agent's device plugin gives a share's container (its Allocate answer): the
 * daemon's pipe folder, the share's GPUs, and the limit variables, which are informational (the
 * daemon holds the limits whatever they say). Its device nodes and mounts are left out: the clients
 * here are host processes, which see every device node and the host's /dev/shm.
 */
export function containerEnv(share: MpsShare, dirs: ShareDirs): Record<string, string> {
  const minors = new Map(share.gpuUuids.map((uuid, index) => [uuid, index]));
  const edits = shareEdits(share, dirs.pipeDir, { minors, devRoot: '/dev', exists: () => false, libraries: [] });
  // The toolkit's `void` is for containers; a process on the host has no toolkit to tell.
  return Object.fromEntries(edits.env.map((e) => e.split(/=(.*)/s).slice(0, 2)).filter(([k]) => k !== 'NVIDIA_VISIBLE_DEVICES'));
}

/** Starts clients and ends those still running at the end of the check. */
export class Clients {
  private readonly live = new Set<ChildProcess>();
  private closed = false;

  constructor(
    private readonly python: string,
    private readonly script: string,
  ) {}

  /**
   * Starts client.py in `mode` with `arg`, `env` on top of this process's environment less its own
   * CUDA_MPS_* variables (so that a client without a variable really has none). Killed after `timeoutMs`.
   */
  start(env: Record<string, string>, mode: ClientMode, arg = 0, timeoutMs = 60_000): Client {
    if (this.closed) throw new Error('interrupted');
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CUDA_MPS_')));
    const child = spawn(this.python, [this.script, mode, String(arg)], { env: { ...base, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
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
      let r: ClientReport;
      try {
        r = JSON.parse(line) as ClientReport;
      } catch {
        return;
      }
      lines.push(r);
      if (r.ready) onReady(r);
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

/**
 * Talking to one MPS control daemon through its front end: `nvidia-cuda-mps-control` reads commands
 * on stdin and prints the daemon's answers, with the daemon found through CUDA_MPS_PIPE_DIRECTORY.
 * The commands and their answers are those of driver 580 (`nvidia-cuda-mps-control -h`, and
 * ../shared/gpu/h100-driver-580 in the repository's research notes).
 */
import { execFile } from 'node:child_process';

/** Where one daemon lives: its pipe directory (the `control` socket, the servers' pipes) and its log directory. */
export interface DaemonDirs {
  readonly pipeDir: string;
  readonly logDir: string;
}

/** Environment that points the front end, the daemon and its clients at one daemon. */
export function daemonEnv(dirs: DaemonDirs, gpuUuids?: readonly string[]): NodeJS.ProcessEnv {
  return {
    // The agent's own (PATH, LD_LIBRARY_PATH to the driver's libraries), then the daemon's.
    ...process.env,
    CUDA_MPS_PIPE_DIRECTORY: dirs.pipeDir,
    CUDA_MPS_LOG_DIRECTORY: dirs.logDir,
    // The daemon sees only the share's GPUs, so they are devices 0..n-1 to it and to its clients.
    ...(gpuUuids ? { CUDA_VISIBLE_DEVICES: gpuUuids.join(',') } : {}),
  };
}

/**
 * Sends `commands` to the daemon of `dirs` and returns its answers (trimmed stdout). Rejects when the
 * front end fails (no daemon) or the daemon does not answer within `timeoutMs` (a wedged daemon).
 */
export function mpsCommand(bin: string, dirs: DaemonDirs, commands: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(bin, [], { env: daemonEnv(dirs), timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      if (err) {
        const why = err.killed ? `no answer within ${timeoutMs} ms` : String(stderr).trim() || err.message;
        reject(new Error(`${commands.join('; ')}: ${why}`));
      } else resolve(String(stdout).trim());
    });
    child.stdin?.end(commands.map((c) => `${c}\n`).join(''));
  });
}

/** The per-device memory limit command value: MiB, as the daemon takes it (`<n>M`). */
export function pinnedMemValue(bytes: number): string {
  return `${Math.max(1, Math.floor(bytes / 2 ** 20))}M`;
}

/**
 * The commands that give a freshly started daemon a share's limits: they bind every server it starts
 * from now on, and a client cannot raise them with its own variables (measured on an H100).
 */
export function limitCommands(devices: number, vramLimitBytes: number, threadPercentage: number): string[] {
  return [
    `set_default_active_thread_percentage ${threadPercentage}`,
    ...Array.from({ length: devices }, (_, i) => `set_default_device_pinned_mem_limit ${i} ${pinnedMemValue(vramLimitBytes)}`),
  ];
}

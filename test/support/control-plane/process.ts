/**
 * Child processes of the harness (etcd, kube-apiserver, kube-scheduler, ...): each in its own process
 * group with its output in a log file, stopped with SIGTERM then SIGKILL to the whole group, as envtest
 * does. Every started group is also killed when the test process exits, so a failed or aborted test
 * never leaves a server behind.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';

const live = new Set<number>();
let exitHookInstalled = false;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const pid of live) killGroup(pid, 'SIGKILL');
  });
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  readonly exited: Promise<number | string>;
  /** The last `lines` of its log, for error messages. */
  tail(lines?: number): string;
  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL to the group at once (a crash, for fault tests). */
  kill(): Promise<void>;
}

export function startProcess(
  name: string,
  command: string,
  args: readonly string[],
  logFile: string,
  env: NodeJS.ProcessEnv = process.env,
): ManagedProcess {
  installExitHook();
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, { detached: true, stdio: ['ignore', fd, fd], env });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`);
  const pid = child.pid;
  live.add(pid);
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      live.delete(pid);
      // The group may still hold grandchildren; make sure nothing of it survives.
      killGroup(pid, 'SIGKILL');
      resolve(code ?? signal ?? 'unknown');
    });
    child.on('error', () => resolve('spawn error'));
  });
  const tail = (lines = 30): string => {
    try {
      return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  };
  const stop = async (graceMs = 10_000): Promise<void> => {
    if (!live.has(pid)) return void (await exited);
    killGroup(pid, 'SIGTERM');
    const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const kill = async (): Promise<void> => {
    killGroup(pid, 'SIGKILL');
    await exited;
  };
  return { name, pid, logFile, exited, tail, stop, kill };
}

/** A port that was free a moment ago on 127.0.0.1 (listen on :0 and close, as envtest does). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** GET `url` (http or https, through `agent`) with a 2 s timeout: the status and the body. */
export function httpGet(url: string, agent?: http.Agent): Promise<{ status: number; body: string }> {
  const mod = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.get(url, { agent, timeout: 2_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)));
  });
}

export { waitFor } from '../poll';

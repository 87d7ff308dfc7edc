/**
 * Runs nvidia-smi's queries (their parsers are in nvidia-smi.ts). A failure rejects with what
 * nvidia-smi said: it prints why it cannot reach the driver on stdout and exits with a code of its own.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseComputeApps, parseComputeModes, SmiApp } from './nvidia-smi';

const run = promisify(execFile);

/** The arguments of each query the agent runs. */
export const SMI_QUERIES = {
  gpus: ['--query-gpu=index,uuid,name', '--format=csv,noheader'],
  apps: ['--query-compute-apps=pid,used_memory,gpu_uuid', '--format=csv,noheader,nounits'],
  pmon: ['pmon', '-c', '1', '-s', 'u'],
  modes: ['--query-gpu=uuid,compute_mode', '--format=csv,noheader'],
} as const;

export type SmiQuery = keyof typeof SMI_QUERIES;

/** stdout of one query; rejects naming the query, the exit code or timeout, and nvidia-smi's own words. */
export async function runSmi(bin: string, query: SmiQuery, timeoutMs: number): Promise<string> {
  try {
    return (await run(bin, [...SMI_QUERIES[query]], { timeout: timeoutMs })).stdout;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string; killed?: boolean; code?: number | string };
    const said = `${e.stdout ?? ''} ${e.stderr ?? ''}`.replace(/\s+/g, ' ').trim();
    const why = e.killed ? `no answer within ${timeoutMs} ms` : typeof e.code === 'number' ? `exit ${e.code}` : String(e.code ?? e.message);
    throw new Error(`${bin} ${SMI_QUERIES[query][0]} failed (${why})${said ? `: ${said}` : ''}`);
  }
}

/** The compute processes on the node's GPUs (the per-process query, fast enough to poll). */
export async function queryApps(bin: string, timeoutMs: number): Promise<SmiApp[]> {
  return parseComputeApps(await runSmi(bin, 'apps', timeoutMs));
}

/** Each GPU's compute mode by UUID (`Default`, `Exclusive_Process`, `Prohibited`). */
export async function queryComputeModes(bin: string, timeoutMs: number): Promise<Map<string, string>> {
  return parseComputeModes(await runSmi(bin, 'modes', timeoutMs));
}

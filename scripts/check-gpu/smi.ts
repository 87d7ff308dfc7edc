/**
 * What the GPU check asks nvidia-smi, parsed by the agent's own parsers (lib/runtime/agent/nvidia-smi.ts):
 * the GPUs, the compute processes, pmon's SM % per process, and where the tool is.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { parseComputeApps, parseGpus, parsePmon } from '../../lib/runtime/agent/nvidia-smi';

const run = promisify(execFile);
const TIMEOUT_MS = 20_000;

/** Where GPU images put the driver's tools without always having them on PATH. */
export const NVIDIA_BIN = '/usr/local/nvidia/bin';

/** An executable on PATH or in /usr/local/nvidia/bin by name, or undefined. */
export function findTool(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), NVIDIA_BIN];
  const dir = dirs.find((d) => existsSync(join(d, name)));
  return dir ? join(dir, name) : undefined;
}

/** A GPU as the check uses it: index, UUID, name, and what the details query gave (undefined where it failed). */
export interface CheckedGpu {
  readonly index: number;
  readonly uuid: string;
  readonly name: string;
  readonly minor: number;
  readonly driver?: string;
  readonly memoryMiB?: number;
  readonly computeMode?: string;
}

/** The GPUs nvidia-smi lists (the agent's query); rejects with why when it cannot run. */
export async function listGpus(nvidiaSmi: string): Promise<CheckedGpu[]> {
  const { stdout } = await run(nvidiaSmi, ['--query-gpu=index,uuid,name', '--format=csv,noheader'], { timeout: TIMEOUT_MS });
  const gpus = parseGpus(stdout);
  // Driver, memory, compute mode and minor number: a second query, whose failure loses only these.
  const details = await run(
    nvidiaSmi,
    ['--query-gpu=uuid,driver_version,memory.total,compute_mode,pci.bus_id', '--format=csv,noheader,nounits'],
    {
      timeout: TIMEOUT_MS,
    },
  ).then(
    (r) => r.stdout,
    () => '',
  );
  const byUuid = new Map(
    details
      .split('\n')
      .map((l) => l.split(',').map((f) => f.trim()))
      .filter((f) => f.length >= 5)
      .map(
        ([uuid, driver, mem, mode, bus]) => [uuid, { driver, memoryMiB: Number(mem), computeMode: mode, minor: deviceMinor(bus) }] as const,
      ),
  );
  return gpus.map((g) => {
    const d = byUuid.get(g.uuid);
    return { ...g, ...d, minor: d?.minor ?? g.index };
  });
}

/** The device minor the driver gave the GPU at `bus` (nvidia-smi's 8-digit domain form), from /proc; undefined where unreadable. */
function deviceMinor(bus: string): number | undefined {
  const id = bus.toLowerCase().replace(/^0000(?=[0-9a-f]{4}:)/, '');
  const info = (() => {
    try {
      return readFileSync(`/proc/driver/nvidia/gpus/${id}/information`, 'utf8');
    } catch {
      return '';
    }
  })();
  const m = /^Device Minor:\s*(\d+)/m.exec(info);
  return m ? Number(m[1]) : undefined;
}

/** Host pids of the GPUs' compute processes. */
export async function computeApps(nvidiaSmi: string): Promise<number[]> {
  const { stdout } = await run(nvidiaSmi, ['--query-compute-apps=pid,used_memory,gpu_uuid', '--format=csv,noheader,nounits'], {
    timeout: TIMEOUT_MS,
  });
  return parseComputeApps(stdout).map((a) => a.pid);
}

/** SM % per process pid from one pmon sample (an MPS server carries its clients' work). */
export async function serverSm(nvidiaSmi: string): Promise<Map<number, number>> {
  const { stdout } = await run(nvidiaSmi, ['pmon', '-c', '1', '-s', 'u'], { timeout: TIMEOUT_MS });
  return new Map(parsePmon(stdout).map((r) => [r.pid, Math.round(r.sm * 100)]));
}

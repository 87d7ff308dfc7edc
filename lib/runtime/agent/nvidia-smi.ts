/**
 * Parsers of nvidia-smi's machine-readable output. NVML has no maintained Node binding (the npm
 * packages that wrap it are unmaintained native addons), so the agent runs the CLI that the NVIDIA
 * container toolkit mounts into the pod, and parses its CSV and pmon tables by hand.
 */

/** One GPU: `--query-gpu=index,uuid,name --format=csv,noheader`. */
export interface SmiGpu {
  readonly index: number;
  readonly uuid: string;
  readonly name: string;
}

/** One compute process: `--query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits`. */
export interface SmiApp {
  readonly pid: number;
  /** Bytes (nvidia-smi reports MiB). */
  readonly usedBytes: number;
  readonly gpuUuid: string;
}

/** One pmon row (`nvidia-smi pmon -c 1 -s u`): SM utilisation of a process on a GPU index. */
export interface SmiPmon {
  readonly gpuIndex: number;
  readonly pid: number;
  /** 0..1; 0 when pmon prints `-` (no sample in the last interval). */
  readonly sm: number;
}

const MIB = 2 ** 20;
const csvRows = (text: string) => text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('No running'));

export function parseGpus(text: string): SmiGpu[] {
  return csvRows(text).map((line) => {
    const [index, uuid, ...name] = line.split(',').map((f) => f.trim());
    return { index: Number(index), uuid, name: name.join(',') };
  }).filter((g) => Number.isInteger(g.index) && g.uuid);
}

export function parseComputeApps(text: string): SmiApp[] {
  return csvRows(text).flatMap((line) => {
    const [pid, used, uuid] = line.split(',').map((f) => f.trim());
    const n = Number(pid);
    // `[N/A]` memory (some vGPU drivers) counts as 0 rather than dropping the process.
    const mib = Number(used);
    return Number.isInteger(n) && uuid ? [{ pid: n, usedBytes: Number.isFinite(mib) ? mib * MIB : 0, gpuUuid: uuid }] : [];
  });
}

/** pmon's table: `# gpu pid type sm mem ...` headers, then one row per process per GPU. */
export function parsePmon(text: string): SmiPmon[] {
  const lines = text.split('\n');
  const header = lines.find((l) => l.startsWith('#') && /\bpid\b/.test(l));
  const cols = header ? header.replace(/^#\s*/, '').trim().split(/\s+/) : ['gpu', 'pid', 'type', 'sm'];
  const at = (name: string) => cols.indexOf(name);
  const [gi, pi, si] = [at('gpu'), at('pid'), at('sm')];
  const out: SmiPmon[] = [];
  for (const line of lines) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const f = line.trim().split(/\s+/);
    const pid = Number(f[pi]);
    if (!Number.isInteger(pid)) continue; // `-` rows: a GPU with no process
    const sm = Number(f[si]);
    out.push({ gpuIndex: Number(f[gi]), pid, sm: Number.isFinite(sm) ? Math.min(sm, 100) / 100 : 0 });
  }
  return out;
}

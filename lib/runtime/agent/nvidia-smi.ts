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

/** `--query-gpu=uuid,compute_mode --format=csv,noheader` -> compute mode by UUID. */
export function parseComputeModes(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [uuid, mode] = line.split(',').map((x) => x.trim());
    if (uuid?.startsWith('GPU-') && mode) out.set(uuid, mode);
  }
  return out;
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
  /** 0..1; 0 when pmon prints `-` (no sample in the last interval, and always for an MPS client). */
  readonly sm: number;
  /** `C` (compute), `G`, `C+G`; `M+C` for an MPS client, whose work pmon credits to its MPS server. */
  readonly type: string;
  /** The process name, cut to pmon's column (`nvidia-cuda-mps` for the MPS server). */
  readonly command: string;
}

/** The MPS server's name as pmon and /proc/<pid>/comm show it: `nvidia-cuda-mps-server`, cut to 15 characters. */
export const MPS_SERVER_COMMAND = 'nvidia-cuda-mps';

/** Whether a pmon row is an MPS client: pmon shows `-` for its SM and credits its work to the server. */
export function isMpsClient(row: SmiPmon): boolean {
  return row.type.split('+').includes('M');
}

/** Whether a pmon row is an MPS server: the process that runs every client's work on the GPU. */
export function isMpsServer(row: Pick<SmiPmon, 'command'>): boolean {
  return row.command.startsWith(MPS_SERVER_COMMAND);
}

const MIB = 2 ** 20;
const csvRows = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('No running'));

export function parseGpus(text: string): SmiGpu[] {
  return csvRows(text)
    .map((line) => {
      const [index, uuid, ...name] = line.split(',').map((f) => f.trim());
      return { index: Number(index), uuid, name: name.join(',') };
    })
    .filter((g) => Number.isInteger(g.index) && g.uuid);
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
  const [gi, pi, si, ti, ci] = [at('gpu'), at('pid'), at('sm'), at('type'), at('command')];
  const out: SmiPmon[] = [];
  for (const line of lines) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const f = line.trim().split(/\s+/);
    const pid = Number(f[pi]);
    if (!Number.isInteger(pid)) continue; // `-` rows: a GPU with no process
    const sm = Number(f[si]);
    out.push({
      gpuIndex: Number(f[gi]),
      pid,
      sm: Number.isFinite(sm) ? Math.min(sm, 100) / 100 : 0,
      type: ti >= 0 ? (f[ti] ?? '') : '',
      command: ci >= 0 ? f.slice(ci).join(' ') : '',
    });
  }
  return out;
}

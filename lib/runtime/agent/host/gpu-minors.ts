/**
 * Each GPU's device minor, from the driver's own folder per GPU
 * (`/proc/driver/nvidia/gpus/<bus id>/information`: `GPU UUID:` and `Device Minor:`). The minor is
 * not the nvidia-smi index on many hosts (A100 and multi-socket machines among them), and
 * `/dev/nvidia<minor>` is the node a GPU's processes open.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** UUID -> device minor, from the text of one `information` file; undefined when either line is missing. */
export function parseGpuInformation(text: string): { uuid: string; minor: number } | undefined {
  const uuid = /^GPU UUID:\s*(\S+)/m.exec(text)?.[1];
  const minor = /^Device Minor:\s*(\d+)/m.exec(text)?.[1];
  return uuid && minor !== undefined ? { uuid, minor: Number(minor) } : undefined;
}

/** Every GPU's device minor by UUID, read from the driver's folder (empty when it cannot be read). */
export function readGpuMinors(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  let buses: string[];
  try {
    buses = readdirSync(dir);
  } catch {
    return out;
  }
  for (const bus of buses) {
    try {
      const info = parseGpuInformation(readFileSync(join(dir, bus, 'information'), 'utf8'));
      if (info) out.set(info.uuid, info.minor);
    } catch {
      /* a GPU that went away between the listing and the read */
    }
  }
  return out;
}

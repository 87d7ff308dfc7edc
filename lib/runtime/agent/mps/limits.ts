/**
 * Reading a share's limits back from its daemon and saying which ones differ: the defaults (what new
 * servers get) and each live server's own (what its new clients get), as driver 580 prints them
 * (`25.0`, `4096M`, `2G`; ../shared/gpu/h200-driver-580/README.md).
 */
import { pinnedMemValue } from './control';

/** The limits a share's daemon must hold. */
export interface ShareLimits {
  readonly devices: number;
  readonly vramLimitBytes: number;
  readonly threadPercentage: number;
}

/** One setting of a daemon that is not the share's. */
export interface LimitMismatch {
  /** The server pid, or undefined for the daemon's defaults. */
  readonly server?: number;
  /** `active_thread_percentage` or `device_pinned_mem_limit <dev>`. */
  readonly setting: string;
  readonly found: string;
  readonly expected: string;
  /** The command that puts it back. */
  readonly fix: string;
}

/** What a daemon refuses a caller that may not change its settings (printed with exit status 0). */
export const REFUSAL_PREFIX = 'Insufficient privileges';

const UNITS: Record<string, number> = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 };

/** Bytes of a pinned-memory limit as the daemon prints it (`4096M`, `2G`); undefined when unreadable. */
export function parseMemLimit(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT]?)B?$/i.exec(text.trim());
  return m ? Number(m[1]) * UNITS[m[2].toUpperCase()] : undefined;
}

/** The read-back of the defaults, then the server list (last, since it may print any number of lines). */
export function defaultsQuery(devices: number): string[] {
  return [
    'get_default_active_thread_percentage',
    ...Array.from({ length: devices }, (_, i) => `get_default_device_pinned_mem_limit ${i}`),
    'get_server_list',
  ];
}

/** The read-back of each listed server's own settings: one line per command, in order. */
export function serversQuery(devices: number, servers: readonly number[]): string[] {
  return servers.flatMap((s) => [
    `get_active_thread_percentage ${s}`,
    ...Array.from({ length: devices }, (_, i) => `get_device_pinned_mem_limit ${s} ${i}`),
  ]);
}

/** The servers a `defaultsQuery` answer lists. */
export function serversIn(answer: string, devices: number): number[] {
  return lines(answer)
    .slice(1 + devices)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

/**
 * The settings in the answers to `defaultsQuery` and `serversQuery` that are not `limits`. Throws
 * when an answer is missing (a daemon that answered part of the questions is not a daemon to trust).
 */
export function mismatches(limits: ShareLimits, defaults: string, servers: readonly number[], perServer: string): LimitMismatch[] {
  const d = lines(defaults);
  const s = lines(perServer);
  const per = 1 + limits.devices;
  if (d.length < per || s.length < servers.length * per)
    throw new Error(`the daemon answered ${d.length + s.length} of ${per * (1 + servers.length)} limit questions`);
  const out: LimitMismatch[] = [];
  const check = (block: readonly string[], server?: number) => {
    const pct = Number(block[0]);
    const prefix = server === undefined ? 'set_default_' : 'set_';
    const at = server === undefined ? '' : `${server} `;
    if (pct !== limits.threadPercentage)
      out.push({
        server,
        setting: 'active_thread_percentage',
        found: block[0],
        expected: String(limits.threadPercentage),
        fix: `${prefix}active_thread_percentage ${at}${limits.threadPercentage}`,
      });
    const want = pinnedMemValue(limits.vramLimitBytes);
    for (let dev = 0; dev < limits.devices; dev++) {
      const found = block[1 + dev];
      const bytes = parseMemLimit(found);
      if (bytes === undefined || Math.floor(bytes / 2 ** 20) !== parseMemLimit(want)! / 2 ** 20)
        out.push({
          server,
          setting: `device_pinned_mem_limit ${dev}`,
          found,
          expected: want,
          fix: `${prefix}device_pinned_mem_limit ${at}${dev} ${want}`,
        });
    }
  };
  check(d);
  servers.forEach((srv, i) => {
    const block = s.slice(i * per, (i + 1) * per);
    // A server that ended between the two questions has no settings left to hold.
    if (!block.some((l) => /not found/i.test(l))) check(block, srv);
  });
  return out;
}

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

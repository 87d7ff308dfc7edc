/** Figures and helpers the benchmark scripts share. */
import { readdirSync, readFileSync } from 'fs';
import { basename } from 'path';

/** Nearest-rank percentile `p` (0–100) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}

/** The middle value of `xs` (the upper one of the two middles for an even count); NaN when empty. */
export function median(xs: readonly number[]): number {
  return xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : NaN;
}

/**
 * CPU seconds (user + system) used so far by every process whose command line contains one of
 * `markers` (a control plane's temp dir, the controller bundle's path), keyed by a short name: the
 * executable with its `--config` file, or for node the script (the last .js or .ts argument: `-r`
 * preloads come first). Linux only (/proc); where a run is CPU-bound, the difference between two
 * readings says who spent it.
 */
export function cpuSecondsByProcess(markers: readonly string[]): Map<string, number> {
  const ticks = 100; // USER_HZ: 100 on every Linux ABI Node runs on.
  const out = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (!cmd.some((a) => markers.some((m) => a.includes(m)))) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / ticks;
      const exe = basename(cmd[0]);
      const config = cmd.find((a) => a.startsWith('--config='));
      const name =
        exe === 'node'
          ? basename([...cmd].reverse().find((a) => a.endsWith('.js') || a.endsWith('.ts')) ?? 'node')
          : config
            ? `${exe} ${basename(config)}`
            : exe;
      out.set(name, (out.get(name) ?? 0) + seconds);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return out;
}

/** CPU seconds per process between two readings of {@link cpuSecondsByProcess}, largest first. */
export function cpuDelta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  return Object.fromEntries(
    [...after].map(([k, v]) => [k, Math.round((v - (before.get(k) ?? 0)) * 10) / 10] as const).sort((a, b) => b[1] - a[1]),
  );
}

/** Seeded PRNG (mulberry32): tiny, fast, and the same stream on every platform. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The samples of metric `name` in Prometheus text exposition, each with its labels. */
export function metricSamples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  return [...text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm'))].map((m) => ({
    labels: Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => [k, v])),
    value: Number(m[2]),
  }));
}

/**
 * kube-apiserver's `apiserver_request_total` from its /metrics, summed by verb and resource
 * (`PATCH pods/status`, with the status code when it is an error: `GET pods 404`); the difference
 * between two readings says which requests a run made.
 */
export async function apiRequestCounts(cluster: {
  request(method: string, path: string): Promise<{ status: number; body: string }>;
}): Promise<Map<string, number>> {
  const res = await cluster.request('GET', '/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics: status ${res.status}`);
  const out = new Map<string, number>();
  for (const { labels: l, value } of metricSamples(res.body, 'apiserver_request_total')) {
    const code = Number(l.code);
    const key = `${l.verb} ${l.resource}${l.subresource ? `/${l.subresource}` : ''}${code >= 400 ? ` ${code}` : ''}`;
    out.set(key, (out.get(key) ?? 0) + value);
  }
  return out;
}

/** Requests per key between two readings of {@link apiRequestCounts}, most first, zeros left out. */
export function countDelta(before: Map<string, number>, after: Map<string, number>, min = 1): Record<string, number> {
  return Object.fromEntries(
    [...after]
      .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
      .filter(([, n]) => n >= min)
      .sort((a, b) => b[1] - a[1]),
  );
}

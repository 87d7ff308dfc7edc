/**
 * A real Prometheus (Debian's `prometheus` package) on 127.0.0.1 for the autoscaling suites: started
 * with a scrape config pointing at the given targets every second, always stopped by the caller. Without
 * prometheus on PATH the suite skips with one line saying how to enable it; under CI=true it fails.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, httpGet, ManagedProcess, startProcess, waitFor } from './control-plane/process';

const HOW = 'install it with `apt-get install -y prometheus` (Debian/Ubuntu; .ci/run does this) or put a prometheus binary on PATH';

/** Whether `prometheus` (or `promtool`, of the same package) is on PATH; logs one line (or throws under CI) when not. */
export function prometheusAvailable(file: string, binary: 'prometheus' | 'promtool' = 'prometheus'): boolean {
  try {
    execFileSync(binary, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    const msg = `${file}: needs ${binary} on PATH; ${HOW}`;
    if (process.env.CI) throw new Error(`${msg} (CI=true: the real-Prometheus suites may not skip)`);
    // eslint-disable-next-line no-console
    console.log(`skipped ${msg}`);
    return false;
  }
}

export interface RunningPrometheus {
  readonly url: string;
  readonly process: ManagedProcess;
  stop(): Promise<void>;
}

/**
 * Starts Prometheus scraping `targets` (host:port) every second, loading `ruleFiles` (file name to
 * content); resolves once it is ready.
 */
export async function startPrometheus(targets: string[], ruleFiles: Record<string, string> = {}): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'tf-prometheus-'));
  const port = await freePort();
  for (const [file, text] of Object.entries(ruleFiles)) writeFileSync(join(dir, file), text);
  const rules = Object.keys(ruleFiles).map((f) => JSON.stringify(join(dir, f)));
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      ...(rules.length > 0 ? [`rule_files: [${rules.join(', ')}]`] : []),
      'scrape_configs:',
      '  - job_name: tensor-fusion-node-agent',
      '    static_configs:',
      `      - targets: [${targets.map((t) => JSON.stringify(t)).join(', ')}]`,
      '',
    ].join('\n'),
  );
  const proc = startProcess(
    'prometheus',
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    join(dir, 'prometheus.log'),
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor('prometheus ready', async () => (await httpGet(`${url}/-/ready`)).status === 200, 30_000, 200, proc);
  } catch (err) {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    process: proc,
    async stop() {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

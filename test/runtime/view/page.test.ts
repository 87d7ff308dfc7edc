/**
 * The web view's routes on the ops server (GET only; every other method refused) and its page: pool
 * totals, a bar per GPU, the pods, the pending pods with the scheduler's words, quotas with their
 * percentages, every cluster-supplied text escaped.
 */
import { Registry } from 'prom-client';
import pino from 'pino';
import { OpsServer } from '../../../lib/runtime/serving/ops-server';
import type { PoolView } from '../../../lib/runtime/shared/pool-view';
import type { RuntimeContext } from '../../../lib/runtime/shared/runtime-context';
import { viewComponent } from '../../../lib/runtime/view/component';
import { viewPage } from '../../../lib/runtime/view/page';

const GiB = 2 ** 30;

const VIEW: PoolView = {
  pools: [
    {
      name: 'a',
      nodes: 1,
      gpus: 1,
      tflops: 312,
      vram: 80 * GiB,
      tflopsRequested: 78,
      vramRequested: 20 * GiB,
      tflopsLimit: 156,
      vramLimit: 20 * GiB,
      tflopsUsed: 12.5,
      vramUsed: 1.5 * GiB,
    },
  ],
  gpus: [
    {
      name: 'n1-0',
      node: 'n1',
      pool: 'a',
      model: 'A100',
      tflops: 312,
      vram: 80 * GiB,
      shares: [{ pod: 'train', namespace: 'ml', tflopsRequest: 78, tflopsLimit: 156, vramRequest: 20 * GiB, vramLimit: 20 * GiB }],
    },
  ],
  pods: [
    {
      namespace: 'ml',
      name: 'train',
      node: 'n1',
      pool: 'a',
      gpus: ['n1-0'],
      tflopsRequest: 78,
      tflopsLimit: 156,
      vramRequest: 20 * GiB,
      vramLimit: 20 * GiB,
      tflopsUsed: 12.5,
    },
  ],
  pending: [
    {
      namespace: 'ml',
      name: 'big',
      pool: 'a',
      gpuCount: 1,
      tflopsRequest: 500,
      vramRequest: GiB,
      reason: 'Unschedulable',
      message: 'pool "a" has <no> GPU & no room',
    },
  ],
  quotas: [
    {
      namespace: 'ml',
      name: 'team',
      used: { 'requests.tflops': 78_000, 'requests.vram': 20 * GiB, 'limits.tflops': 156_000, 'limits.vram': 20 * GiB, workers: 1 },
      hard: { 'requests.tflops': 312_000, workers: 4 },
    },
  ],
};

describe('viewPage', () => {
  const html = viewPage(VIEW, '2026-11-28T03:00:00.000Z');

  test("each pool's totals and its GPUs' bars", () => {
    expect(html).toContain(
      '<h2>pool a</h2><p class="totals">1 nodes · 1 GPUs · TFLOPS requested 78 of 312, limits 156, used 12.5 · VRAM requested 20Gi of 80Gi, limits 20Gi, used 1536Mi</p><svg',
    );
    expect(html).toContain('<title>ml/train: 78 TFLOPS requested, limit 156</title>');
  });

  test('the pods, the pending pods with the escaped message, the quotas with their percentages', () => {
    expect(html).toContain(
      '<tr><td>ml</td><td>train</td><td>n1</td><td>n1-0</td><td>78 / 156</td><td>12.5</td><td>20Gi / 20Gi</td><td></td></tr>',
    );
    expect(html).toContain('<td>Unschedulable</td><td>pool &quot;a&quot; has &lt;no&gt; GPU &amp; no room</td>');
    expect(html).not.toContain('<no>');
    expect(html).toContain(
      '<td>requests.tflops</td><td>78</td><td>312</td><td>25% <div class="meter"><div class="fill" style="width:25.0%"></div></div></td>',
    );
    expect(html).toContain('<td>workers</td><td>1</td><td>4</td><td>25% ');
    expect(html).not.toContain('limits.tflops');
  });

  test('an empty view says so', () => {
    const empty = viewPage({ pools: [], gpus: [], pods: [], pending: [], quotas: [] }, 'now');
    expect(empty).toContain('<p id="pending" class="none">none</p>');
  });
});

describe('the routes on the ops server', () => {
  const list = <T>(items: T[]) => ({ list: () => items, get: () => undefined, byIndex: () => [] });
  const ctx = (webView: boolean) =>
    ({
      env: { webView },
      logger: pino({ level: 'silent' }),
      caches: { pools: list([{ metadata: { name: 'a' } }]), gpuNodes: list([]), gpus: list([]), pods: list([]), quotas: list([]) },
    }) as unknown as RuntimeContext;
  let ops: OpsServer | undefined;
  afterEach(() => ops?.stop());

  async function serve(webView: boolean): Promise<string> {
    ops = new OpsServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      readiness: {},
      routes: viewComponent(ctx(webView), {}).routes,
    });
    await ops.start();
    return `http://127.0.0.1:${ops.port}`;
  }

  test('GET /view and /view.json; every other method is refused', async () => {
    const base = await serve(true);
    const page = await fetch(`${base}/view`);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain('<h2>pool a</h2>');
    expect(await (await fetch(`${base}/view.json`)).json()).toMatchObject({ pools: [{ name: 'a', gpus: 0 }], pending: [] });
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const r = await fetch(`${base}/view`, { method });
      expect([method, r.status, r.headers.get('allow')]).toEqual([method, 405, 'GET']);
    }
  });

  test('off: not served', async () => {
    const base = await serve(false);
    expect((await fetch(`${base}/view`)).status).toBe(404);
  });
});

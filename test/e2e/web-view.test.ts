/**
 * The controller's read-only web view in a real browser (Debian's headless Chromium driven by
 * playwright-core) on the real control plane, with the real kube-scheduler and the extender on KWOK
 * GPU nodes: the page shows every GPU, every pod holding a share, the pod the quota keeps pending with
 * the scheduler's reason, and the quota's numbers, as the cluster has them; a pod created while the
 * page is open appears without a reload; and in the screenshot each share's colour sits where its
 * request puts it on its GPU's bar.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium, BrowserContext, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { ALLOCATION_ANNOTATION } from '../../lib/model/metadata-keys';
import { API_VERSION } from '../../lib/model/group';
import { CONTROLLER_ENV, CONTROLLER_PATHS } from '../../lib/contract/env';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { FREE_COLOUR, namespaceColour } from '../../lib/runtime/shared/gpu-bars';
import { describeControlPlane, waitFor } from '../support/control-plane';
import type { Obj } from '../support/e2e';
import { a100Labels, controllerSuite, installController, kwokNode, localGpuPod, RunningController, writeYaml } from '../support/e2e';
import { eventually } from '../runtime/fixtures';

const CHROMIUM = '/usr/bin/chromium';
const FILE = 'test/e2e/web-view.test.ts';

/** Debian's chromium, or a skip line (a failure under CI=true, where the suites must run). */
function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  const msg = `${FILE}: needs ${CHROMIUM}; run \`apt-get install -y chromium\` (.ci/run does)`;
  if (process.env.CI) throw new Error(`${msg} (CI=true: the browser suite may not skip)`);
  // eslint-disable-next-line no-console
  console.log(`skipped ${msg}`);
  return false;
}

const { synth, user } = controllerSuite(90_000);

const POOL = 'view-pool';
/** The quota's namespace, and a second one whose shares get another colour. */
const NS = 'team-v';
const OTHER = 'web-v';
const NODES = ['v-0', 'v-1'];

function gpuPod(namespace: string, name: string, tflops: string): Obj {
  return localGpuPod({ name, namespace, pool: POOL, tflops, vram: '8Gi', cpu: '10m' });
}

/** A pixel's colour as `#rrggbb`. */
function colourAt(png: PNG, x: number, y: number): string {
  const i = (png.width * Math.round(y) + Math.round(x)) * 4;
  return `#${[0, 1, 2].map((c) => png.data[i + c].toString(16).padStart(2, '0')).join('')}`;
}

const sameColour = (a: string, b: string) =>
  [1, 3, 5].every((i) => Math.abs(parseInt(a.slice(i, i + 2), 16) - parseInt(b.slice(i, i + 2), 16)) <= 8);

if (!chromiumAvailable()) describe.skip('the web view in a browser', () => test('needs chromium', () => undefined));
else
  describeControlPlane('the web view in a browser', { controllerManager: true, kwok: true, users: [user] }, (cp) => {
    let ctl: RunningController | undefined;
    let browser: BrowserContext | undefined;
    let profile: string | undefined;
    let page: Page;
    const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
    const create = (doc: Obj) => cp().kubectlOk(['create', '-f', '-'], { input: JSON.stringify(doc) });
    const apply = (name: string, docs: Obj[]) => cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, name, docs)]);

    beforeAll(async () => {
      ctl = await installController(cp(), synth.controller, synth.dir, {
        replicas: 1,
        schedulers: true,
        env: { [CONTROLLER_ENV.webView]: 'true' },
      });
      await apply('view-nodes.yaml', [
        renderGpuPool(POOL, {}),
        ...NODES.map((name) => kwokNode({ name, cpu: '64', labels: a100Labels(POOL, 2) })),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: OTHER } },
        {
          apiVersion: API_VERSION,
          kind: 'GPUResourceQuota',
          metadata: { name: 'team-v-gpus', namespace: NS },
          spec: { total: { requests: { tflops: '200' }, maxWorkers: 10 } },
        },
      ]);
      await waitFor('controller ready', () => ctl!.replicas[0].ready(), 60_000, 200);
      await eventually(async () => expect((await get(['gpupool', POOL])).status).toMatchObject({ totalGPUs: 4 }), 60_000);
      profile = mkdtempSync(path.join(tmpdir(), 'tf-chromium-'));
      browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
        viewport: { width: 1280, height: 1400 },
      });
      page = browser.pages()[0] ?? (await browser.newPage());
    }, 120_000);

    afterAll(async () => {
      await browser?.close().catch(() => undefined);
      if (profile) rmSync(profile, { recursive: true, force: true });
      await ctl?.stop();
    });

    test('shows what the cluster holds, refreshes itself, and draws each share where its request puts it', async () => {
      await create(gpuPod(NS, 'a-train', '78'));
      await create(gpuPod(OTHER, 'b-serve', '156'));
      await eventually(async () => {
        const pods = (await get(['pods', '-A', '-l', 'app=gpu'])).items as Obj[];
        expect(pods.filter((p) => p.spec.nodeName)).toHaveLength(2);
      }, 30_000);
      // Past the quota (78 + 130 > 200): it waits, and the scheduler says why.
      await create(gpuPod(NS, 'c-big', '130'));
      await eventually(async () => {
        const cond = ((await get(['pod', '-n', NS, 'c-big'])).status.conditions as Obj[] | undefined)?.find(
          (c) => c.type === 'PodScheduled',
        );
        expect(cond?.message).toContain('would use 208 of 200 TFLOPS requested');
      }, 30_000);

      const url = `http://127.0.0.1:${ctl!.replicas[0].metricsPort}${CONTROLLER_PATHS.view}`;
      await page.goto(url);
      // A reload would drop this mark; the self-refresh keeps it.
      await page.evaluate(() => ((globalThis as any).loadedOnce = true));

      // Every GPU the cluster has, with the pool's capacity in the heading.
      const gpus = ((await get(['gpus'])).items as Obj[]).map((g) => g.metadata.name as string).sort();
      expect(gpus).toHaveLength(4);
      const svgText = await page.locator(`section[data-pool="${POOL}"] svg`).textContent();
      for (const g of gpus) expect(svgText).toContain(g);
      expect(await page.locator(`section[data-pool="${POOL}"] .totals`).textContent()).toContain(
        '2 nodes · 4 GPUs · TFLOPS requested 234 of 1248',
      );

      // Each pod holding a share, on the node and GPU its record names.
      const holders = ((await get(['pods', '-A', '-l', 'app=gpu'])).items as Obj[]).filter((p) => p.spec.nodeName);
      for (const p of holders) {
        const a = JSON.parse(p.metadata.annotations[ALLOCATION_ANNOTATION]);
        const row = page.locator('#pods tr', { hasText: p.metadata.name });
        expect(await row.locator('td').allTextContents()).toEqual(
          expect.arrayContaining([p.metadata.namespace, p.metadata.name, p.spec.nodeName, a.gpuIds.join(', ')]),
        );
      }

      // The pending pod with the scheduler's own reason and message.
      const cond = ((await get(['pod', '-n', NS, 'c-big'])).status.conditions as Obj[]).find((c) => c.type === 'PodScheduled')!;
      const pendingRow = await page.locator('#pending tr', { hasText: 'c-big' }).locator('td').allTextContents();
      expect(pendingRow).toEqual([NS, 'c-big', POOL, '1', '130', '8Gi', cond.reason, cond.message]);

      // The quota's numbers as its status reports them.
      await eventually(async () => {
        const q = await get(['gpuresourcequota', '-n', NS, 'team-v-gpus']);
        expect(q.status?.used?.requests?.tflops).toBe('78');
      }, 30_000);
      expect(await page.locator('#quotas tr', { hasText: 'requests.tflops' }).locator('td').allTextContents()).toEqual([
        NS,
        'team-v-gpus',
        'requests.tflops',
        '78',
        '200',
        '39% ',
      ]);

      // A pod created now appears without a reload.
      await create(gpuPod(NS, 'd-new', '10'));
      await page.locator('#pods tr', { hasText: 'd-new' }).waitFor({ timeout: 20_000 });
      expect(await page.evaluate(() => (globalThis as any).loadedOnce)).toBe(true);
      await page.locator('#quotas tr', { hasText: 'requests.tflops' }).getByText('88', { exact: true }).waitFor({ timeout: 20_000 });

      // Pixels: on the bar of every GPU holding shares, each share's colour where its request puts it, then free room.
      const shot = path.join(cp().dir, 'web-view.png');
      const png = PNG.sync.read(await page.screenshot({ path: shot }));
      const bound = ((await get(['pods', '-A', '-l', 'app=gpu'])).items as Obj[]).filter((p) => p.spec.nodeName);
      const allocation = (p: Obj) => JSON.parse(p.metadata.annotations[ALLOCATION_ANNOTATION]);
      const held = [...new Set(bound.flatMap((p) => allocation(p).gpuIds as string[]))].sort();
      expect(held.length).toBeGreaterThan(0);
      const expected: [string, string][] = [];
      const seen: [string, string][] = [];
      for (const gpu of held) {
        const shares = bound
          .filter((p) => allocation(p).gpuIds.includes(gpu))
          .map((p) => ({
            key: `${p.metadata.namespace}/${p.metadata.name}`,
            ns: p.metadata.namespace,
            tflops: allocation(p).tflopsRequest,
          }))
          .sort((a, b) => (a.key < b.key ? -1 : 1));
        // The first share's segment (its tooltip names it) gives the bar's row and left end.
        const box = await page
          .locator('svg g', { has: page.locator('title', { hasText: `${shares[0].key}: ` }) })
          .filter({ hasText: 'TFLOPS requested' })
          .locator('rect')
          .boundingBox();
        expect(box).not.toBeNull();
        const y = box!.y + 3; // above the white labels inside the segments
        const colours = [...shares.map((s) => namespaceColour(s.ns)), FREE_COLOUR];
        // The bar's ends, measured in the picture: the first pixel of a share's colour and the last of the free room.
        let x0 = -1;
        let x2 = -1;
        for (let x = 0; x < png.width; x++) {
          const c = colourAt(png, x, y);
          if (x0 < 0 && colours.slice(0, -1).some((k) => sameColour(c, k))) x0 = x;
          if (sameColour(c, FREE_COLOUR)) x2 = x;
        }
        expect([gpu, x0 > 0, x2 > x0, Math.abs(box!.x - x0) <= 2]).toEqual([gpu, true, true, true]);
        const width = x2 - x0 + 1;
        let at = 0;
        const look = (label: string, x: number, colour: string) => {
          const c = colourAt(png, x, y);
          expected.push([`${gpu} ${label} at x=${Math.round(x)}`, colour]);
          seen.push([`${gpu} ${label} at x=${Math.round(x)}`, sameColour(c, colour) ? colour : c]);
        };
        for (const [i, s] of shares.entries()) {
          const [from, to] = [x0 + (at / 312) * width, x0 + ((at + s.tflops) / 312) * width];
          at += s.tflops;
          // Inside the segment near both of its ends and in the middle, and just past its end the next colour.
          for (const x of [from + 3, (from + to) / 2, to - 3]) look(s.key, x, colours[i]);
          look(`after ${s.key}`, to + 3, colours[i + 1]);
        }
      }
      expect(seen).toEqual(expected);
      writeFileSync(path.join(cp().dir, 'web-view.html'), await page.content());
    });
  });

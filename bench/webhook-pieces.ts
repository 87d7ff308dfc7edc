/**
 * The webhook's deciding path piece by piece: the same admission reviews (pods that all differ, then
 * replicas of one template) fed to one piece at a time in one process, with the API double's caches,
 * and per piece the bytes each young (scavenge) collection promoted, read from V8's
 * `--trace-gc-nvp` lines. A piece whose objects outlive two young collections shows here long before
 * it shows as full collections under load (see bench/README.md, `bench:webhook`).
 *
 * `npx ts-node --transpile-only bench/webhook-pieces.ts [--reviews=20000]`: re-runs itself in a child
 * with `--trace-gc-nvp` and prints one line per piece and mode, then one JSON line.
 *
 * `--survivors=PIECE`: that piece alone, pods all different, under V8's sampling heap profiler keeping
 * only objects that outlived a young collection: bytes per review by allocating function, the
 * innermost three frames of this repository's code, the `--rows=15` largest after the sum. `--allocated=PIECE`:
 * the same for every allocation, whether it outlived one or not.
 */
import type { HeapProfiler } from 'node:inspector';
import { Session } from 'node:inspector/promises';
import { spawnSync } from 'node:child_process';
import { HttpCluster, keepAliveAgent } from '../lib/runtime/kube/http-cluster';
import { createCa, issueServingCert } from '../lib/runtime/serving/certificates';
import { createViewInformers, InformerView } from '../lib/runtime/webhook/cluster-view';
import { admitPod } from '../lib/runtime/webhook/admit';
import { decodeGpuAnnotations, resolveWorkloadSettings } from '../lib/annotations';
import { resolvePodSettings } from '../lib/runtime/shared/resolve-pod';
import { DecisionCache, decisionKey } from '../lib/runtime/webhook/decision-cache';
import { AdmissionReview, answerReview, parseReview, responseOf } from '../lib/runtime/webhook/review';
import { intFlag, stringFlag } from './flags';
import { reviewBody, startBenchApi, startBenchWebhook } from './webhook-review';

const REVIEWS = intFlag('reviews', 20_000);
/** The piece whose allocations are sampled, and whether only those that outlived a young collection. */
const SAMPLED = stringFlag('survivors') ?? stringFlag('allocated');
const SURVIVORS_ONLY = stringFlag('survivors') !== undefined;
const ROWS = intFlag('rows', 15);
const WARMUP = 5_000;
const template = reviewBody();
const body = (id: string, distinct: boolean) => template.replace('[<id>]', id).replace('[<pod>]', distinct ? id : 'template');

async function child(): Promise<void> {
  const api = await startBenchApi(0);
  const cluster = new HttpCluster({ server: api.url, agent: keepAliveAgent(api.url), userAgent: 'bench-webhook-pieces' });
  const tls = issueServingCert(createCa(), ['127.0.0.1']);
  const webhook = startBenchWebhook(cluster, 'tensor-fusion-system', tls);
  await webhook.whenReady();
  const view = new InformerView(cluster, createViewInformers(cluster));
  for (const i of view.informerList()) i.start();
  await Promise.all(view.informerList().map((i) => i.waitForSync()));
  const decode = (b: string) => parseReview(JSON.parse(b)) as AdmissionReview;
  const fixed = responseOf(await admitPod(decode(body('fixed', true)).request!, view));
  const cache = new DecisionCache();
  const cached = new DecisionCache();
  let sink = 0;
  const pieces: Record<string, (b: string) => Promise<unknown> | unknown> = {
    body: (b) => (sink += b.length),
    decode: (b) => decode(b),
    key: (b) => (sink += decisionKey(decode(b).request!).length),
    // resolve's two halves, each after decode.
    decodeAnnotations: (b) => decodeGpuAnnotations(decode(b).request!.object!.metadata.annotations ?? {}, { containers: ['python'] }),
    resolveSettings: (b) => {
      const decoded = decodeGpuAnnotations(decode(b).request!.object!.metadata.annotations ?? {}, { containers: ['python'] });
      return resolveWorkloadSettings(decoded.settings, undefined, view.pool('bench-pool')!.spec);
    },
    resolve: (b) => resolvePodSettings(decode(b).request!.object!.metadata.annotations ?? {}, 'default', view, ['python']),
    decide: (b) => admitPod(decode(b).request!, view),
    answer: async (b) => {
      const r = decode(b);
      sink += JSON.stringify(answerReview(r, responseOf(await admitPod(r.request!, view)))).length;
    },
    cache: (b) => cache.answer(decode(b).request!, async () => ({ ...fixed })),
    'cache+decide+answer': async (b) => {
      const r = decode(b);
      const answer = await cached.answer(r.request!, async () => responseOf(await admitPod(r.request!, view)));
      sink += JSON.stringify(answerReview(r, answer)).length;
    },
    handle: async (b) => (sink += JSON.stringify(await webhook.handle(decode(b))).length),
  };
  if (SAMPLED !== undefined) {
    const piece = pieces[SAMPLED];
    if (!piece) throw new Error(`got piece "${SAMPLED}", expected one of ${Object.keys(pieces).join(', ')}`);
    for (let i = 0; i < WARMUP; i++) await piece(body(`w-${i}`, true));
    console.log(
      await sampledAllocations(async () => {
        for (let i = 0; i < REVIEWS; i++) await piece(body(`s-${i}`, true));
      }),
    );
    await webhook.close();
    process.exit(0);
  }
  for (const mode of ['distinct', 'replicas']) {
    for (const [name, piece] of Object.entries(pieces)) {
      for (let i = 0; i < WARMUP; i++) await piece(body(`w-${name}-${i}`, mode === 'distinct'));
      (global as { gc?: () => void }).gc?.();
      console.log(`### start ${name} ${mode}`);
      const t = performance.now();
      for (let i = 0; i < REVIEWS; i++) await piece(body(`${name}-${mode}-${i}`, mode === 'distinct'));
      console.log(`### end ${name} ${mode} ${(((performance.now() - t) * 1000) / REVIEWS).toFixed(1)}`);
    }
  }
  console.log(`### sink ${sink}`);
  await webhook.close();
  process.exit(0);
}

/**
 * What `run` allocated, by allocating stack, from V8's sampling heap profiler; with SURVIVORS_ONLY,
 * told to drop the samples of objects a young collection freed and keep those a full one freed later.
 */
async function sampledAllocations(run: () => Promise<void>): Promise<string> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: !SURVIVORS_ONLY,
  });
  await run();
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  const bySite = new Map<string, number>();
  const walk = (n: HeapProfiler.SamplingHeapProfileNode, frames: string[]) => {
    const own = /\/(lib|bench)\//.test(n.callFrame.url);
    const here = own
      ? [
          ...frames,
          `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(lib|bench)\//, '$1/')}:${n.callFrame.lineNumber + 1}`,
        ]
      : frames;
    if (n.selfSize > 0) {
      const site = here.slice(-3).reverse().join(' < ') || '(outside lib/ and bench/)';
      bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, here);
  };
  walk(profile.head, []);
  const rows = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, ROWS);
  rows.unshift(['(all)', [...bySite.values()].reduce((a, b) => a + b, 0)]);
  return rows.map(([site, bytes]) => `${String(Math.round(bytes / REVIEWS)).padStart(6)} B/review  ${site}`).join('\n');
}

/** Promoted KB per scavenge between each piece's markers. */
function summarize(trace: string): Array<{ piece: string; mode: string; scavenges: number; promotedKB: number; usPerReview: number }> {
  const rows = [];
  let scavenges = 0;
  let promoted = 0;
  for (const line of trace.split('\n')) {
    if (line.startsWith('### start')) [scavenges, promoted] = [0, 0];
    else if (line.startsWith('### end')) {
      const [, , piece, mode, us] = line.split(' ');
      rows.push({
        piece,
        mode,
        scavenges,
        promotedKB: scavenges ? Math.round(promoted / scavenges / 102.4) / 10 : 0,
        usPerReview: Number(us),
      });
    } else if (line.includes(' gc=s ')) {
      scavenges++;
      promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    }
  }
  return rows;
}

function main(): void {
  if (SAMPLED !== undefined) {
    const sampled = spawnSync(
      process.execPath,
      ['-r', require.resolve('ts-node/register/transpile-only'), __filename, '--child', ...process.argv.slice(2)],
      {
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    process.exit(sampled.status ?? 1);
  }
  const run = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      '--trace-gc-nvp',
      '-r',
      require.resolve('ts-node/register/transpile-only'),
      __filename,
      '--child',
      ...process.argv.slice(2),
    ],
    { encoding: 'utf8', maxBuffer: 1 << 30 },
  );
  if (run.status !== 0) throw new Error(`child failed (${run.status}):\n${run.stderr}\n${run.stdout.slice(-2000)}`);
  const rows = summarize(run.stdout);
  for (const r of rows)
    console.log(
      `${r.mode.padEnd(9)} ${r.piece.padEnd(20)} ${String(r.scavenges).padStart(4)} scavenges  ${r.promotedKB.toFixed(1).padStart(8)} KB promoted each  ${r.usPerReview} µs/review`,
    );
  console.log(JSON.stringify({ reviews: REVIEWS, pieces: rows }));
}

if (process.argv.includes('--child')) void child();
else main();

/**
 * The web view's page: per pool a heading with its totals and each GPU as a bar of its shares (the
 * SVG of shared/gpu-bars.ts), then the pods holding shares, the pending GPU pods with the scheduler's
 * words, and each quota's used against hard with a percentage bar. Every name and message is escaped.
 * The page refreshes itself: every {@link VIEW_REFRESH_MS} it fetches itself again and swaps in the
 * new `<main>`, so nothing flickers and the scroll position stays.
 */
import { formatBytes } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import { escapeXml as esc, gpuBarsSvg } from '../shared/gpu-bars';
import type { PoolSummary, PoolView } from '../shared/pool-view';
import { QUOTA_RESOURCES, showAmount } from '../shared/quota';

/** How often the open page fetches itself again. */
export const VIEW_REFRESH_MS = 3_000;

const GiB = 2 ** 30;
/** Whole units as Kubernetes writes them (`24Gi`), else GiB to one decimal (what the agent measures). */
const bytes = (b: number) => (Number.isInteger(b) && formatBytes(b) !== String(b) ? formatBytes(b) : `${(b / GiB).toFixed(1)}Gi`);
const tflops = (t: number) => formatTflops(Math.round(t * 100) / 100);
const cells = (values: readonly string[], tag = 'td') => `<tr>${values.map((v) => `<${tag}>${v}</${tag}>`).join('')}</tr>`;
const used = (v: number | undefined, show: (n: number) => string) => (v === undefined ? '' : show(v));

function totals(p: PoolSummary): string {
  const use = (v: number | undefined, show: (n: number) => string) => (v === undefined ? '' : `, used ${show(v)}`);
  return (
    `${p.nodes} nodes · ${p.gpus} GPUs · TFLOPS requested ${tflops(p.tflopsRequested)} of ${tflops(p.tflops)}, ` +
    `limits ${tflops(p.tflopsLimit)}${use(p.tflopsUsed, tflops)} · VRAM requested ${bytes(p.vramRequested)} of ${bytes(p.vram)}, ` +
    `limits ${bytes(p.vramLimit)}${use(p.vramUsed, bytes)}`
  );
}

function table(id: string, head: readonly string[], rows: readonly string[][]): string {
  if (rows.length === 0) return `<p id="${id}" class="none">none</p>`;
  return `<table id="${id}"><thead>${cells(head, 'th')}</thead><tbody>${rows.map((r) => cells(r)).join('')}</tbody></table>`;
}

/** The `<main>` of the page: what the refresh swaps in. */
export function viewMain(view: PoolView, now: string): string {
  const pools = view.pools.map(
    (p) =>
      `<section class="pool" data-pool="${esc(p.name)}"><h2>pool ${esc(p.name)}</h2><p class="totals">${esc(totals(p))}</p>` +
      gpuBarsSvg(view.gpus.filter((g) => g.pool === p.name)) +
      '</section>',
  );
  const pods = view.pods.map((p) => [
    esc(p.namespace),
    esc(p.name),
    esc(p.node),
    esc(p.gpus.join(', ')),
    `${tflops(p.tflopsRequest)} / ${tflops(p.tflopsLimit)}`,
    used(p.tflopsUsed, tflops),
    `${bytes(p.vramRequest)} / ${bytes(p.vramLimit)}`,
    used(p.vramUsed, bytes),
  ]);
  const pending = view.pending.map((p) => [
    esc(p.namespace),
    esc(p.name),
    esc(p.pool),
    String(p.gpuCount),
    tflops(p.tflopsRequest),
    bytes(p.vramRequest),
    esc(p.reason ?? ''),
    esc(p.message ?? ''),
  ]);
  const quotas = view.quotas.flatMap((q) =>
    QUOTA_RESOURCES.flatMap((r) => {
      const hard = q.hard[r];
      if (hard === undefined) return [];
      const percent = hard > 0 ? (q.used[r] / hard) * 100 : q.used[r] > 0 ? 100 : 0;
      const bar = `<div class="meter"><div class="${percent >= 100 ? 'full' : 'fill'}" style="width:${Math.min(percent, 100).toFixed(1)}%"></div></div>`;
      return [[esc(q.namespace), esc(q.name), r, showAmount(r, q.used[r]), showAmount(r, hard), `${percent.toFixed(0)}% ${bar}`]];
    }),
  );
  return [
    `<main data-updated="${esc(now)}">`,
    `<h1>TensorFusion pools</h1><p class="updated">read-only · as of ${esc(now)} · refreshes every ${VIEW_REFRESH_MS / 1000} s</p>`,
    ...pools,
    '<h2>Pods holding shares</h2>',
    table(
      'pods',
      ['namespace', 'pod', 'node', 'GPUs', 'TFLOPS request / limit per GPU', 'used', 'VRAM request / limit per GPU', 'used'],
      pods,
    ),
    '<h2>Pending GPU pods</h2>',
    table('pending', ['namespace', 'pod', 'pool', 'GPUs', 'TFLOPS', 'VRAM', 'reason', 'message'], pending),
    '<h2>Quotas</h2>',
    table('quotas', ['namespace', 'quota', 'resource', 'used', 'hard', ''], quotas),
    '</main>',
  ].join('\n');
}

const STYLE = `body{font-family:sans-serif;font-size:13px;margin:16px;color:#222}
table{border-collapse:collapse;margin-bottom:12px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left}
.totals,.updated{color:#555}.meter{display:inline-block;width:120px;height:10px;background:#e6e6e6;vertical-align:middle}
.meter div{height:10px}.fill{background:#4e79a7}.full{background:#e15759}`;

/** Fetches the page again and swaps in its `<main>`; a failed fetch keeps what is shown. */
const SCRIPT = `setInterval(async()=>{try{const r=await fetch(location.href,{cache:'no-store'});if(!r.ok)return;
const d=new DOMParser().parseFromString(await r.text(),'text/html');const m=d.querySelector('main');
if(m)document.querySelector('main').replaceWith(m)}catch(e){}},${VIEW_REFRESH_MS});`;

/** The whole page. */
export function viewPage(view: PoolView, now: string): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><title>TensorFusion pools</title>',
    `<style>${STYLE}</style></head><body>`,
    viewMain(view, now),
    `<script>${SCRIPT}</script>`,
    '</body></html>',
  ].join('\n');
}

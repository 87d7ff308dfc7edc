/**
 * GPUs drawn as bars split into their shares, as one SVG document: what `kubectl tf plan --svg` writes
 * and what the controller's web view shows. Each GPU is a row under its pool and node: a TFLOPS bar
 * (each share's request as a segment coloured by namespace, the free room in grey, the share's limit
 * as a bracket above it, what the share uses as a dark line inside it) over a thinner VRAM bar.
 *
 * Written by hand: the picture is a few hundred rectangles and labels, and the SVG libraries for Node
 * (svg.js with svgdom, D3 with jsdom) need a DOM for that.
 */
import { fnv1a } from './fnv1a';

/** One share on one GPU, in per-GPU amounts as an allocation records them (TFLOPS, bytes). */
export interface ShareSegment {
  readonly pod: string;
  readonly namespace: string;
  readonly tflopsRequest: number;
  readonly tflopsLimit: number;
  readonly vramRequest: number;
  readonly vramLimit: number;
  /** What the pod uses on this GPU, when the agent's metrics are read. */
  readonly tflopsUsed?: number;
  readonly vramUsed?: number;
}

/** One GPU and the shares it holds; capacity in TFLOPS and bytes. */
export interface GpuBar {
  readonly name: string;
  readonly node: string;
  readonly pool: string;
  readonly model: string;
  readonly tflops: number;
  readonly vram: number;
  readonly shares: readonly ShareSegment[];
}

export interface GpuBarsOptions {
  /** A line above the bars, e.g. what was planned. */
  readonly title?: string;
  /** Width of the whole picture in pixels. @default 960 */
  readonly width?: number;
}

/** Colours for namespaces, picked by hash, dark enough for white labels (Tableau 10, less its grey). */
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#59a14f', '#b07aa1', '#76b7b2', '#9c755f', '#edc948', '#ff9da7'];
/** The free room's colour; the web view's browser test looks for it. */
export const FREE_COLOUR = '#e6e6e6';
const LABEL_WIDTH = 230;
const ROW = 40;
const TFLOPS_BAR = 18;
const VRAM_BAR = 8;
const HEADING = 26;
/** Average width of a character of the 11 px sans-serif labels, to decide whether a label fits. */
const CHAR_PX = 6.2;

/** The colour of a namespace, stable across runs (FNV-1a over its name). */
export function namespaceColour(namespace: string): string {
  return PALETTE[(fnv1a(namespace) >>> 0) % PALETTE.length];
}

/**
 * The characters XML 1.0 forbids in a document: controls but tab and newlines, U+FFFE, U+FFFF, and a
 * surrogate without its other half (which cutting a label can leave).
 */
export const XML_FORBIDDEN =
  // eslint-disable-next-line no-control-regex -- the control characters are what it finds
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Text and attribute values are escaped: pod and node names come from the cluster or a file. A
 * character XML forbids becomes U+FFFD, so the document stays well-formed whatever the name.
 */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ENTITIES[c]).replace(XML_FORBIDDEN, '\uFFFD');
}

const GIB = 1024 ** 3;
const num = (n: number) => (Math.round(n * 10) / 10).toString();
const gib = (bytes: number) => `${num(bytes / GIB)} GiB`;

/** `label` cut to what `px` pixels hold, or nothing when not even three characters fit. */
function fitted(label: string, px: number): string | undefined {
  const chars = Math.floor((px - 6) / CHAR_PX);
  if (chars < 3) return undefined;
  return label.length <= chars ? label : `${label.slice(0, chars - 1)}…`;
}

/** One bar of `capacity` split into `parts` (amounts with a colour and a tooltip), then free room. */
function bar(
  x: number,
  y: number,
  w: number,
  h: number,
  capacity: number,
  parts: { amount: number; colour: string; tip: string; label?: string }[],
  freeTip: string,
): string[] {
  const out: string[] = [];
  let at = 0;
  for (const p of parts) {
    const px = (Math.min(p.amount, Math.max(capacity - at, 0)) / capacity) * w;
    const left = x + (at / capacity) * w;
    at += p.amount;
    if (px <= 0) continue;
    const text = p.label !== undefined ? fitted(p.label, px) : undefined;
    out.push(
      `<g><title>${escapeXml(p.tip)}</title><rect x="${left.toFixed(1)}" y="${y}" width="${px.toFixed(1)}" height="${h}" fill="${p.colour}" stroke="#fff" stroke-width="1"/>` +
        (text ? `<text x="${(left + 3).toFixed(1)}" y="${y + h - 5}" fill="#fff">${escapeXml(text)}</text>` : '') +
        '</g>',
    );
  }
  const free = Math.max(capacity - at, 0);
  if (free > 0) {
    const left = x + (Math.min(at, capacity) / capacity) * w;
    out.push(
      `<g><title>${escapeXml(freeTip)}</title><rect x="${left.toFixed(1)}" y="${y}" width="${((free / capacity) * w).toFixed(1)}" height="${h}" fill="${FREE_COLOUR}"/></g>`,
    );
  }
  return out;
}

/** The rows of one GPU: its label, its TFLOPS bar with limits and use, its VRAM bar. */
function gpuRow(g: GpuBar, y: number, barWidth: number): string[] {
  const x = LABEL_WIDTH;
  const tflopsUsed = g.shares.reduce((s, sh) => s + sh.tflopsRequest, 0);
  const vramUsed = g.shares.reduce((s, sh) => s + sh.vramRequest, 0);
  const who = (s: ShareSegment) => `${s.namespace}/${s.pod}`;
  const out = [
    `<text x="8" y="${y + 13}" font-weight="bold">${escapeXml(fitted(g.name, LABEL_WIDTH - 12) ?? '')}</text>`,
    `<text x="8" y="${y + 26}" fill="#555">${escapeXml(fitted(`${g.model} · ${num(tflopsUsed)}/${num(g.tflops)} TFLOPS · ${num(vramUsed / GIB)}/${gib(g.vram)}`, LABEL_WIDTH - 12) ?? '')}</text>`,
    ...bar(
      x,
      y,
      barWidth,
      TFLOPS_BAR,
      g.tflops,
      g.shares.map((s) => ({
        amount: s.tflopsRequest,
        colour: namespaceColour(s.namespace),
        label: s.pod,
        tip: `${who(s)}: ${num(s.tflopsRequest)} TFLOPS requested, limit ${num(s.tflopsLimit)}${s.tflopsUsed !== undefined ? `, using ${num(s.tflopsUsed)}` : ''}`,
      })),
      `free: ${num(Math.max(g.tflops - tflopsUsed, 0))} of ${num(g.tflops)} TFLOPS`,
    ),
    ...bar(
      x,
      y + TFLOPS_BAR + 2,
      barWidth,
      VRAM_BAR,
      g.vram,
      g.shares.map((s) => ({
        amount: s.vramRequest,
        colour: namespaceColour(s.namespace),
        tip: `${who(s)}: ${gib(s.vramRequest)} VRAM requested, limit ${gib(s.vramLimit)}${s.vramUsed !== undefined ? `, using ${gib(s.vramUsed)}` : ''}`,
      })),
      `free: ${gib(Math.max(g.vram - vramUsed, 0))} of ${gib(g.vram)} VRAM`,
    ),
  ];
  // Limits above the request as a bracket over the bar (oversold limits may pass the GPU's end: clipped).
  let at = 0;
  for (const s of g.shares) {
    const start = x + (at / g.tflops) * barWidth;
    at += s.tflopsRequest;
    if (s.tflopsLimit > s.tflopsRequest) {
      const end = Math.min(start + (s.tflopsLimit / g.tflops) * barWidth, x + barWidth);
      out.push(
        `<path d="M${start.toFixed(1)} ${y - 1} V${y - 4} H${end.toFixed(1)} V${y - 1}" fill="none" stroke="${namespaceColour(s.namespace)}" stroke-width="1"/>`,
      );
    }
    if (s.tflopsUsed !== undefined && s.tflopsUsed > 0) {
      const end = Math.min(start + (s.tflopsUsed / g.tflops) * barWidth, x + barWidth);
      out.push(`<rect x="${start.toFixed(1)}" y="${y + TFLOPS_BAR - 3}" width="${(end - start).toFixed(1)}" height="3" fill="#222"/>`);
    }
  }
  return out;
}

/**
 * The GPUs as one SVG document, grouped by pool then node, GPUs in the order given; a legend of
 * the namespaces' colours on top.
 * @example writeFileSync('plan.svg', gpuBarsSvg(view.gpus, { title: 'planned: 40 of 42 pods fit' }))
 */
export function gpuBarsSvg(bars: readonly GpuBar[], opts: GpuBarsOptions = {}): string {
  const width = opts.width ?? 960;
  const barWidth = width - LABEL_WIDTH - 12;
  const body: string[] = [];
  let y = 8;
  if (opts.title) {
    body.push(`<text x="8" y="${y + 14}" font-size="14" font-weight="bold">${escapeXml(opts.title)}</text>`);
    y += HEADING;
  }
  const namespaces = [...new Set(bars.flatMap((b) => b.shares.map((s) => s.namespace)))].sort();
  if (namespaces.length > 0) {
    let x = 8;
    for (const ns of namespaces) {
      body.push(
        `<rect x="${x}" y="${y}" width="12" height="12" fill="${namespaceColour(ns)}"/><text x="${x + 16}" y="${y + 10}">${escapeXml(ns)}</text>`,
      );
      x += 28 + ns.length * CHAR_PX;
      if (x > width - 120) {
        x = 8;
        y += 16;
      }
    }
    body.push(`<rect x="${x}" y="${y}" width="12" height="12" fill="${FREE_COLOUR}"/><text x="${x + 16}" y="${y + 10}">free</text>`);
    y += 24;
  }
  let pool: string | undefined;
  let node: string | undefined;
  for (const g of bars) {
    if (g.pool !== pool) {
      pool = g.pool;
      node = undefined;
      body.push(`<text x="8" y="${y + 16}" font-size="14" font-weight="bold">pool ${escapeXml(g.pool)}</text>`);
      y += HEADING;
    }
    if (g.node !== node) {
      node = g.node;
      body.push(`<text x="8" y="${y + 12}" fill="#333">node ${escapeXml(g.node)}</text>`);
      y += 18;
    }
    body.push(...gpuRow(g, y + 4, barWidth));
    y += ROW;
  }
  const height = y + 8;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    ...body,
    '</svg>',
  ].join('\n');
}

/**
 * `kubectl tf top pools|gpus|pods`: the pool view (lib/runtime/shared/pool-view.ts, what the web view
 * shows too) as rows: capacity, reserved (requests), limits and, when usage was read, what is used.
 */
import { formatBytes } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import type { ShareSegment } from '../shared/gpu-bars';
import { PodUsageMap, poolView } from '../shared/pool-view';
import { ClusterObjects, fixedCaches } from './cluster-objects';

export const TOP_KINDS = ['pools', 'gpus', 'pods'] as const;
export type TopKind = (typeof TOP_KINDS)[number];

/** Rows for the table, and the same facts as data for `-o json|yaml`. */
export interface TopRows {
  readonly headers: readonly string[];
  readonly rows: readonly (readonly string[])[];
  readonly data: unknown;
}

const pct = (part: number, whole: number) => (whole > 0 ? ` (${Math.round((100 * part) / whole)}%)` : '');
const t = (n: number | undefined) => (n === undefined ? '-' : formatTflops(Math.round(n * 100) / 100));
const b = (n: number | undefined) => (n === undefined ? '-' : formatBytes(Math.round(n)));

/** The rows of `kind`; pods and the GPUs' shares only of `namespace` when given. */
export function topRows(kind: TopKind, objects: ClusterObjects, usage?: PodUsageMap, namespace?: string): TopRows {
  const view = poolView(fixedCaches(objects), usage);
  const used = (n: number | undefined) => (usage ? t(n) : '-');
  const usedBytes = (n: number | undefined) => (usage ? b(n) : '-');
  if (kind === 'pools') {
    return {
      headers: ['pool', 'nodes', 'gpus', 'tflops', 'requested', 'limits', 'used', 'vram', 'vram-requested', 'vram-used'],
      rows: view.pools.map((p) => [
        p.name,
        String(p.nodes),
        String(p.gpus),
        t(p.tflops),
        `${t(p.tflopsRequested)}${pct(p.tflopsRequested, p.tflops)}`,
        t(p.tflopsLimit),
        used(p.tflopsUsed),
        b(p.vram),
        `${b(p.vramRequested)}${pct(p.vramRequested, p.vram)}`,
        usedBytes(p.vramUsed),
      ]),
      data: view.pools,
    };
  }
  if (kind === 'gpus') {
    const gpus = view.gpus.map((g) => ({ ...g, shares: g.shares.filter((s) => namespace === undefined || s.namespace === namespace) }));
    const sum = (xs: readonly ShareSegment[], k: 'tflopsRequest' | 'tflopsLimit' | 'tflopsUsed' | 'vramRequest' | 'vramUsed') =>
      xs.reduce((s, x) => s + (x[k] ?? 0), 0);
    const anyUsed = (xs: readonly { tflopsUsed?: number }[]) => (usage ? xs.some((x) => x.tflopsUsed !== undefined) : false);
    return {
      headers: ['gpu', 'node', 'pool', 'model', 'shares', 'tflops', 'requested', 'limits', 'used', 'vram', 'vram-requested', 'vram-used'],
      rows: gpus.map((g) => [
        g.name,
        g.node,
        g.pool,
        g.model,
        String(g.shares.length),
        t(g.tflops),
        `${t(sum(g.shares, 'tflopsRequest'))}${pct(sum(g.shares, 'tflopsRequest'), g.tflops)}`,
        t(sum(g.shares, 'tflopsLimit')),
        anyUsed(g.shares) ? t(sum(g.shares, 'tflopsUsed')) : '-',
        b(g.vram),
        `${b(sum(g.shares, 'vramRequest'))}${pct(sum(g.shares, 'vramRequest'), g.vram)}`,
        anyUsed(g.shares) || g.shares.some((s) => s.vramUsed !== undefined) ? b(sum(g.shares, 'vramUsed')) : '-',
      ]),
      data: gpus,
    };
  }
  const pods = view.pods.filter((p) => namespace === undefined || p.namespace === namespace);
  const pending = view.pending.filter((p) => namespace === undefined || p.namespace === namespace);
  return {
    headers: [
      'namespace',
      'pod',
      'node',
      'gpus',
      'tflops-request',
      'tflops-limit',
      'tflops-used',
      'vram-request',
      'vram-limit',
      'vram-used',
    ],
    rows: [
      ...pods.map((p) => [
        p.namespace,
        p.name,
        p.node,
        p.gpus.join(','),
        t(p.tflopsRequest),
        t(p.tflopsLimit),
        used(p.tflopsUsed),
        b(p.vramRequest),
        b(p.vramLimit),
        usedBytes(p.vramUsed),
      ]),
      ...pending.map((p) => [p.namespace, p.name, '<pending>', `${p.gpuCount}`, t(p.tflopsRequest), '-', '-', b(p.vramRequest), '-', '-']),
    ],
    data: { pods, pending },
  };
}

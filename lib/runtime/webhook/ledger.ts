/**
 * The allocation ledger of one GPUPool: a ConfigMap (`tf-alloc-<pool>` in the controller's namespace)
 * listing every allocation of the pool, written with its resourceVersion as precondition. It is what
 * makes admissions on several webhook replicas race-free (see index.ts):
 *
 * - one committer per pool per replica: requests queue up and are placed as a batch on an Allocator
 *   that mirrors the ledger, then the whole batch is written in one conditional update (group commit);
 * - a 409 means another replica (or the leader releasing) wrote first: re-read, rebuild, place again;
 * - a request that does not fit is re-checked once against a fresh read before it is refused, so a
 *   replica never denies because of a release it has not seen yet.
 *
 * Size: one entry is about 150 bytes with its key, so a pool holds some 6,000 live allocations within
 * the 1 MiB ConfigMap limit.
 */
import { createHash } from 'node:crypto';
import { Allocation, AllocateResult, AllocationRequest, Allocator, NodeSpec, PoolConfig } from '../../scheduler';
import { ALLOCATION_LEDGER_LABEL, LEDGER_CONTENDED_ANNOTATION } from '../../labels';
import { escapePathComponent } from 'fast-json-patch';
import { ApiError, Cluster, JsonPatchOp, K8sObject, isConflict, isNotFound } from '../cluster';
import { WEBHOOK_RESOURCES } from './resources';

/** One allocation as the ledger keeps it. */
export interface LedgerEntry {
  readonly allocation: Allocation;
  /** Wall-clock ms when it was placed (for the never-appeared grace period). */
  readonly createdAt: number;
  /** Namespace of the pod it was made for. */
  readonly namespace: string;
}

/** The pool's nodes and settings as currently known; `version` changes whenever they do. */
export interface PoolTopology {
  version(): number;
  nodes(pool: string): NodeSpec[];
  config(pool: string): PoolConfig;
}

interface ConfigMap extends K8sObject {
  data?: Record<string, string>;
}

type Op =
  | { kind: 'reserve'; request: AllocationRequest; namespace: string; dryRun: boolean; resolve: (r: AllocateResult) => void; reject: (e: unknown) => void }
  | { kind: 'release'; ids: readonly string[]; resolve: (n: number) => void; reject: (e: unknown) => void }
  | { kind: 'restore'; entries: readonly LedgerEntry[]; resolve: (n: number) => void; reject: (e: unknown) => void }
  | { kind: 'refresh'; resolve: (n: number) => void; reject: (e: unknown) => void };

/** How long a contention mark makes writers pause after each write. */
const CONTENDED_MS = 10_000;

const KEY_CHARS = /^[-._a-zA-Z0-9]{1,200}$/;

/** ConfigMap data key of an allocation id (ids are admission uids, which already fit). */
export function ledgerKey(id: string): string {
  return KEY_CHARS.test(id) ? id : `h-${createHash('sha256').update(id).digest('hex').slice(0, 40)}`;
}

/** ConfigMap name of a pool's ledger. */
export function ledgerName(pool: string): string {
  return `tf-alloc-${pool}`;
}

/**
 * One ledger value: a JSON array, about half the size of the allocation object, since every write and
 * read carries the whole ledger. The pool is the ledger's; the id is the data key unless the key had
 * to be hashed, in which case it is the last element.
 * `[node, gpuIds, tflopsRequest, tflopsLimit, vramRequest, vramLimit, qos, createdAt, namespace, cpu, memory, id?]`
 */
export function encodeEntry(e: LedgerEntry): string {
  const a = e.allocation;
  const row: unknown[] = [a.node, a.gpuIds, a.tflopsRequest, a.tflopsLimit, a.vramRequest, a.vramLimit, a.qos, e.createdAt, e.namespace, a.cpu, a.memory];
  if (ledgerKey(a.id) !== a.id) row.push(a.id);
  return JSON.stringify(row);
}

/** Reads a ledger value back; undefined when it is not one (the ConfigMap was edited by hand). */
export function decodeEntry(key: string, text: string, pool: string): LedgerEntry | undefined {
  try {
    const row = JSON.parse(text);
    if (!Array.isArray(row) || row.length < 11 || typeof row[0] !== 'string' || !Array.isArray(row[1])) return undefined;
    const [node, gpuIds, tflopsRequest, tflopsLimit, vramRequest, vramLimit, qos, createdAt, namespace, cpu, memory, id] = row;
    return {
      allocation: { id: typeof id === 'string' ? id : key, pool, node, gpuIds, tflopsRequest, tflopsLimit, vramRequest, vramLimit, cpu, memory, qos },
      createdAt: Number(createdAt) || 0,
      namespace: String(namespace ?? ''),
    };
  } catch {
    return undefined;
  }
}

export interface PoolLedgerOptions {
  cluster: Cluster;
  /** Namespace of the ledger ConfigMaps (the controller's). */
  namespace: string;
  pool: string;
  topology: PoolTopology;
  /** @default Date.now */
  now?: () => number;
  /** Conditional writes tried per batch before the batch fails. @default 20 */
  maxAttempts?: number;
}

/** Thrown when a batch lost the race more than `maxAttempts` times in a row. */
export class LedgerBusyError extends Error {
  constructor(pool: string) {
    super(`allocation ledger of pool ${JSON.stringify(pool)} is busy; retry`);
    this.name = 'LedgerBusyError';
  }
}

export class PoolLedger {
  private entries = new Map<string, LedgerEntry>();
  private allocator = new Allocator();
  private rv?: string;
  private hasData = false;
  private contendedUntil = 0;
  private loaded = false;
  private topologyVersion = -1;
  private queue: Op[] = [];
  private draining = false;
  private readonly now: () => number;

  constructor(private readonly opts: PoolLedgerOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Places a request; a dry run is placed on the mirror and taken back, and nothing is written. */
  reserve(request: AllocationRequest, namespace: string, dryRun = false): Promise<AllocateResult> {
    return new Promise((resolve, reject) => this.enqueue({ kind: 'reserve', request, namespace, dryRun, resolve, reject }));
  }

  /** Removes allocations; resolves with how many were present. */
  release(ids: readonly string[]): Promise<number> {
    return new Promise((resolve, reject) => this.enqueue({ kind: 'release', ids, resolve, reject }));
  }

  /** Adds allocations found on pods but missing from the ledger (restore after loss); resolves with how many. */
  restore(entries: readonly LedgerEntry[]): Promise<number> {
    return new Promise((resolve, reject) => this.enqueue({ kind: 'restore', entries, resolve, reject }));
  }

  /** The ledger entry of an allocation id, as last read or written by this replica. */
  entry(id: string): LedgerEntry | undefined {
    return this.entries.get(id);
  }

  /** Every entry, as last read or written by this replica. */
  list(): LedgerEntry[] {
    return [...this.entries.values()];
  }

  /** Re-reads the ledger (queued behind pending writes); the leader does before collecting. */
  async refresh(): Promise<void> {
    await new Promise<number>((resolve, reject) => this.enqueue({ kind: 'refresh', resolve, reject }));
  }

  private enqueue(op: Op): void {
    this.queue.push(op);
    if (!this.draining) void this.drain();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0);
        try {
          const wrote = await this.commit(batch);
          // A committer that writes back to back starves the other replicas: their read + write never
          // fits between two of its writes. While the ledger is marked contended, pause about one
          // write's duration after each write (requests gather into the next batch meanwhile).
          if (wrote > 0 && this.queue.length > 0 && this.now() < this.contendedUntil) {
            await new Promise((r) => setTimeout(r, Math.min(50, wrote)));
          }
        } catch (err) {
          // The mirror may hold placements that were never written: start from a fresh read.
          this.loaded = false;
          for (const op of batch) op.reject(err);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  private async load(): Promise<void> {
    const cm = await this.opts.cluster.get<ConfigMap>(WEBHOOK_RESOURCES.configmaps, { namespace: this.opts.namespace, name: ledgerName(this.opts.pool) });
    this.entries = new Map();
    for (const [key, text] of Object.entries(cm?.data ?? {})) {
      const e = decodeEntry(key, text, this.opts.pool);
      if (e) this.entries.set(e.allocation.id, e);
    }
    this.observe(cm);
    this.loaded = true;
    this.rebuildMirror();
  }

  private rebuildMirror(): void {
    const { topology, pool } = this.opts;
    this.topologyVersion = topology.version();
    const allocator = new Allocator({ pools: { [pool]: topology.config(pool) } });
    for (const spec of topology.nodes(pool)) {
      try {
        allocator.addNode(spec);
      } catch {
        // A node with inconsistent GPU objects takes no shares until the controller fixes them.
      }
    }
    allocator.rebuild([...this.entries.values()].map((e) => e.allocation));
    this.allocator = allocator;
  }

  /** Places and writes a batch; returns how long the successful write took in ms (0: nothing written). */
  private async commit(batch: Op[]): Promise<number> {
    const attempts = this.opts.maxAttempts ?? 20;
    let freshRead = false;
    let conflicts = 0;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (!this.loaded || (!freshRead && batch.some((op) => op.kind === 'refresh'))) {
        await this.load();
        freshRead = true;
      } else if (this.topologyVersion !== this.opts.topology.version()) {
        this.rebuildMirror();
      }
      const next = new Map(this.entries);
      const results = new Map<Op, AllocateResult | number>();
      const failed = new Map<Op, unknown>();
      let changed = false;
      let refused = false;
      for (const op of batch) {
        if (op.kind === 'reserve') {
          const have = next.get(op.request.id);
          if (have) {
            results.set(op, { ok: true, allocation: have.allocation });
            continue;
          }
          let r: AllocateResult;
          try {
            r = this.allocator.allocate(op.request);
          } catch (err) {
            // One malformed request must not fail the batch it arrived with.
            failed.set(op, err);
            continue;
          }
          results.set(op, r);
          if (!r.ok) refused = true;
          else if (op.dryRun) this.allocator.release(op.request.id);
          else {
            next.set(op.request.id, { allocation: r.allocation, createdAt: this.now(), namespace: op.namespace });
            changed = true;
          }
        } else if (op.kind === 'release') {
          let n = 0;
          for (const id of op.ids) {
            if (next.delete(id)) {
              this.allocator.release(id);
              n++;
            }
          }
          results.set(op, n);
          changed ||= n > 0;
        } else if (op.kind === 'refresh') {
          results.set(op, 0);
        } else {
          const fresh = op.entries.filter((e) => !next.has(e.allocation.id));
          const restored = this.allocator.rebuild([...next.values(), ...fresh].map((e) => e.allocation));
          const skipped = new Set(restored.skipped.map((s) => s.id));
          let n = 0;
          for (const e of fresh) {
            if (!skipped.has(e.allocation.id)) {
              next.set(e.allocation.id, e);
              n++;
            }
          }
          results.set(op, n);
          changed ||= n > 0;
        }
      }
      if (refused && !freshRead) {
        // Someone may have released since our last read: decide refusals on fresh data only.
        await this.load();
        freshRead = true;
        attempt--;
        continue;
      }
      let wroteMs = 0;
      if (changed) {
        const started = performance.now();
        try {
          await this.write(next);
          wroteMs = Math.max(1, performance.now() - started);
        } catch (err) {
          if (!isConflict(err)) {
            this.loaded = false;
            throw err;
          }
          if (++conflicts === 2) await this.markContended();
          // Replicas that collided would collide again in lock-step: back off a random few ms.
          await new Promise((r) => setTimeout(r, Math.random() * Math.min(64, 2 ** attempt)));
          await this.load();
          freshRead = true;
          continue;
        }
      }
      this.entries = next;
      for (const op of batch) {
        const r = results.get(op);
        if (failed.has(op)) op.reject(failed.get(op));
        else if (op.kind === 'reserve') op.resolve(r as AllocateResult);
        else op.resolve(r as number);
      }
      return wroteMs;
    }
    this.loaded = false;
    throw new LedgerBusyError(this.opts.pool);
  }

  /**
   * Writes the difference to the ledger: a JSON patch whose first op tests the resourceVersion we
   * read (so it is conditional, and small: only added and removed entries travel), or a create when
   * the ledger does not exist yet.
   */
  private async write(next: Map<string, LedgerEntry>): Promise<void> {
    const { cluster, namespace, pool } = this.opts;
    const rt = WEBHOOK_RESOURCES.configmaps;
    const name = ledgerName(pool);
    let written: ConfigMap;
    try {
      if (this.rv === undefined) {
        const data: Record<string, string> = {};
        for (const e of next.values()) data[ledgerKey(e.allocation.id)] = encodeEntry(e);
        written = await cluster.create<ConfigMap>(rt, {
          apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels: { [ALLOCATION_LEDGER_LABEL]: pool } }, data,
        });
      } else {
        const ops: JsonPatchOp[] = [{ op: 'test', path: '/metadata/resourceVersion', value: this.rv }];
        if (!this.hasData) ops.push({ op: 'add', path: '/data', value: {} });
        for (const id of this.entries.keys()) {
          if (!next.has(id)) ops.push({ op: 'remove', path: `/data/${escapePathComponent(ledgerKey(id))}` });
        }
        for (const [id, e] of next) {
          if (!this.entries.has(id)) ops.push({ op: 'add', path: `/data/${escapePathComponent(ledgerKey(id))}`, value: encodeEntry(e) });
        }
        written = await cluster.jsonPatch<ConfigMap>(rt, { namespace, name }, ops);
      }
    } catch (err) {
      // A failed `test` (422), a lost create race (409) or a deleted ledger (404): re-read and retry.
      if (isNotFound(err) || (err instanceof ApiError && err.code === 422)) throw new ApiError(409, 'Conflict', 'ledger changed');
      throw err;
    }
    this.observe(written);
  }

  private observe(cm: ConfigMap | undefined): void {
    this.rv = cm?.metadata.resourceVersion;
    this.hasData = cm?.data !== undefined;
    this.contendedUntil = Number(cm?.metadata.annotations?.[LEDGER_CONTENDED_ANNOTATION]) || 0;
  }

  /** Tells the other replicas we keep losing: an unconditional write, so it always lands. */
  private async markContended(): Promise<void> {
    const until = String(this.now() + CONTENDED_MS);
    try {
      await this.opts.cluster.mergePatch(WEBHOOK_RESOURCES.configmaps, { namespace: this.opts.namespace, name: ledgerName(this.opts.pool) },
        { metadata: { annotations: { [LEDGER_CONTENDED_ANNOTATION]: until } } });
    } catch {
      // Best effort: the retry loop goes on either way.
    }
  }
}

/**
 * The double's etcd: objects per resource, one global resourceVersion counter, and a bounded
 * history of changes that watches replay from. Compaction drops history, which makes older
 * resourceVersions answer 410 Gone.
 */
export type Obj = Record<string, any> & { metadata: Record<string, any> };

export interface Change {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: string;
  /** The object's key in its resource table (`ns/name` or `name`). */
  key: string;
  object: Obj;
  /** The object before the change (undefined for ADDED). */
  previous?: Obj;
}

export class Store {
  /** Current global resourceVersion. */
  rv = 0;
  /** History before (and at) this resourceVersion is gone. */
  compactedRv = 0;
  private readonly objects = new Map<string, Map<string, Obj>>();
  /** Revision of each resource's latest change. */
  private readonly lastChanges = new Map<string, number>();
  private history: Change[] = [];
  private readonly listeners = new Set<(c: Change) => void>();

  constructor(private readonly historyLimit = 10_000) {}

  private table(resource: string): Map<string, Obj> {
    let t = this.objects.get(resource);
    if (!t) this.objects.set(resource, (t = new Map()));
    return t;
  }

  get(resource: string, key: string): Obj | undefined {
    return this.table(resource).get(key);
  }

  /** All objects of a resource, sorted by key (stable order for paging). */
  all(resource: string): Obj[] {
    return [...this.table(resource).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
  }

  /** Revision of the latest change to `resource` (0: none yet). */
  lastChange(resource: string): number {
    return this.lastChanges.get(resource) ?? 0;
  }

  count(resource: string): number {
    return this.table(resource).size;
  }

  /** Writes (or deletes, with `object` undefined) and records the change; returns the stamped object. */
  commit(resource: string, key: string, type: Change['type'], object: Obj): Obj {
    const t = this.table(resource);
    const previous = t.get(key);
    this.rv++;
    const stamped = { ...object, metadata: { ...object.metadata, resourceVersion: String(this.rv) } };
    if (type === 'DELETED') t.delete(key);
    else t.set(key, stamped);
    const change: Change = { rv: this.rv, type, resource, key, object: stamped, previous };
    this.lastChanges.set(resource, this.rv);
    this.history.push(change);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compactedRv = dropped[dropped.length - 1].rv;
    }
    for (const l of this.listeners) l(change);
    return stamped;
  }

  /** Changes of `resource` after `rv`, or undefined when that history has been compacted away. */
  since(resource: string, rv: number): Change[] | undefined {
    if (rv < this.compactedRv) return undefined;
    return this.history.filter((c) => c.rv > rv && c.resource === resource);
  }

  /**
   * Objects of `resource` as they were at revision `rv` (sorted by key), rebuilt by undoing newer
   * changes; undefined when that revision has been compacted, as etcd answers.
   */
  snapshot(resource: string, rv: number): Obj[] | undefined {
    if (rv < this.compactedRv || rv > this.rv) return undefined;
    const table = new Map(this.table(resource));
    for (let i = this.history.length - 1; i >= 0 && this.history[i].rv > rv; i--) {
      const c = this.history[i];
      if (c.resource !== resource) continue;
      if (c.previous) table.set(c.key, c.previous);
      else table.delete(c.key);
    }
    return [...table.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
  }

  /** Forgets all history up to now, as etcd compaction does. */
  compact(): void {
    this.history = [];
    this.compactedRv = this.rv;
  }

  subscribe(listener: (c: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

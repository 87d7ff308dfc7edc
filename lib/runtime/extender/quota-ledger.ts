/**
 * What each namespace's GPU shares add up to in the extender's state, kept as shares come and go, so
 * that a quota check costs one lookup. Held and reserved shares both count: a reservation is a share
 * about to be bound, and two pods filtered before either binds must not both pass a quota that has
 * room for one.
 */
import { addUsage, NO_USAGE, QuotaAmounts } from '../shared/quota';

export class QuotaLedger {
  private readonly entries = new Map<string, { namespace: string; usage: QuotaAmounts }>();
  private readonly totals = new Map<string, QuotaAmounts>();

  /** Counts `usage` for `namespace` under `key`, replacing what the key counted before. */
  set(key: string, namespace: string, usage: QuotaAmounts): void {
    this.delete(key);
    this.entries.set(key, { namespace, usage });
    this.totals.set(namespace, addUsage(this.used(namespace), usage));
  }

  delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    const left = addUsage(this.used(e.namespace), e.usage, -1);
    if (left.workers <= 0) this.totals.delete(e.namespace);
    else this.totals.set(e.namespace, left);
  }

  /** What the namespace's shares add up to now. */
  used(namespace: string): QuotaAmounts {
    return this.totals.get(namespace) ?? NO_USAGE;
  }
}

/**
 * A Map whose entries are also counted in a {@link QuotaLedger}: every set, delete and clear goes
 * through it, so the counts cannot drift from the map. `usageOf` says what an entry counts for (none
 * when its namespace is unknown).
 */
export class CountedMap<V> extends Map<string, V> {
  constructor(
    private readonly ledger: QuotaLedger,
    private readonly prefix: string,
    private readonly usageOf: (key: string, value: V) => { namespace: string; usage: QuotaAmounts } | undefined,
  ) {
    super();
  }

  override set(key: string, value: V): this {
    super.set(key, value);
    // Called by Map's own constructor before the fields exist (never with entries here).
    if (!this.ledger) return this;
    const counted = this.usageOf(key, value);
    if (counted) this.ledger.set(this.prefix + key, counted.namespace, counted.usage);
    else this.ledger.delete(this.prefix + key);
    return this;
  }

  override delete(key: string): boolean {
    this.ledger.delete(this.prefix + key);
    return super.delete(key);
  }

  override clear(): void {
    for (const key of this.keys()) this.ledger.delete(this.prefix + key);
    super.clear();
  }
}

/**
 * Answers for pods decided a moment ago. The replicas of a ReplicaSet or a Job reach the webhook as
 * one and the same object (the API server names a `generateName` pod and gives it a uid and a
 * creation time only after admission), and a scale-up sends them by the thousand: each template is
 * decided once while the caches a decision reads stay as they are. Any event of those caches starts
 * over, so a cached answer is always the one the handler would give now.
 */
import { fnv1a } from '../shared/fnv1a';
import type { AdmissionRequest, Answer } from './review';

/** Enough for the templates of a burst; they are few. */
export const DECISION_CACHE_ENTRIES = 128;
/** Slots of the table of keys seen once, while pods come all different (a power of two). */
const SEEN_SLOTS = 4096;
/** Larger requests are decided every time: bounds the memory to entries × this. */
export const DECISION_CACHE_MAX_KEY_CHARS = 32 * 1024;

/**
 * The key of what a decision reads of a request: the operation, whether it is a dry run, the kind,
 * the namespace and the object. Its managedFields are left out: the API server stamps them with the second of the request,
 * and nothing is decided from them.
 *
 * They are left out by a rest pattern, not by a copy that sets them to undefined: in V8 (Node 20),
 * `{ ...metadata, managedFields: undefined }` (a spread, then a key it did not bring: see "Objects that
 * outlive young collections" in docs/runtime/webhook.md) made objects that outlived young-generation
 * collections, so under load the webhook paused for full collections; this form promotes nothing
 * (figures: bench/README.md, `bench:webhook`).
 */
export function decisionKey(req: AdmissionRequest): string {
  const o = req.object;
  let object: unknown = o;
  if (o && typeof o.metadata === 'object' && o.metadata !== null) {
    const { managedFields: _stamped, ...metadata } = o.metadata;
    object = { ...o, metadata };
  }
  // A dry run creates nothing (a DRA pod's template): its answer must not stand for a real create's.
  return JSON.stringify([
    req.operation,
    req.dryRun === true,
    req.kind?.group,
    req.kind?.version,
    req.kind?.kind,
    req.subResource,
    req.namespace,
    object,
  ]);
}

/** A key's hash as a non-zero integer (0 marks an empty slot). */
const keyHash = (key: string): number => fnv1a(key) | 1;

export class DecisionCache {
  private readonly entries = new Map<string, Answer>();
  private generation = 0;
  /** Answers kept since the last hit. Past twice maxEntries (each dropped unused), pods are coming all different. */
  private missesSinceHit = 0;
  /** While pods come all different: hashes of keys seen once, in slots by hash. */
  private readonly seen = new Int32Array(SEEN_SLOTS);

  constructor(
    private readonly maxEntries = DECISION_CACHE_ENTRIES,
    private readonly maxKeyChars = DECISION_CACHE_MAX_KEY_CHARS,
  ) {}

  /** What decisions read has changed: every answer is decided again. */
  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The answer for `req`, from the cache or from `decide`. An answer decided while the caches changed
   * is returned but not kept; a failure is not kept either.
   *
   * When twice maxEntries answers were kept with no hit since (each dropped unused), pods are coming all different (Jobs,
   * pods with per-instance labels), and an answer is kept only for a key seen before: otherwise each
   * kept key and answer (some 3 kB) outlives two young collections before it is dropped, and under
   * load the webhook promoted about 1 MB per young collection and paused for full ones (figures:
   * bench/README.md, `bench:webhook`). A hit ends this, so the replicas of a template are decided at
   * most twice.
   */
  async answer(req: AdmissionRequest, decide: () => Promise<Answer>): Promise<Answer> {
    const key = decisionKey(req);
    const hit = this.entries.get(key);
    if (hit) {
      this.missesSinceHit = 0;
      return hit;
    }
    const generation = this.generation;
    const answer = await decide();
    if (generation === this.generation && key.length <= this.maxKeyChars && this.worthKeeping(key)) {
      this.missesSinceHit++;
      // Oldest first: Map keeps insertion order.
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, answer);
    }
    return answer;
  }

  /** Whether to keep the answer for `key`: always, unless pods are coming all different and `key` is new. */
  private worthKeeping(key: string): boolean {
    if (this.missesSinceHit < 2 * this.maxEntries) return true;
    const h = keyHash(key);
    const slot = h & (SEEN_SLOTS - 1);
    if (this.seen[slot] === h) return true;
    this.seen[slot] = h;
    return false;
  }
}

/**
 * The one write admission makes: a DRA pool's pod names a ResourceClaimTemplate, which must exist in
 * its namespace before the pod does, or kube-controller-manager cannot make the pod's claim and the
 * pod waits with no word from us. The template is created blindly: its name is a hash of its spec
 * (lib/runtime/shared/dra/claim-template.ts), so AlreadyExists means the same template is there.
 * A burst of pods of one shape makes one create, not one each: pods created one by one (not as one
 * template's replicas, which the decision cache answers once) would otherwise queue a write per pod
 * behind admission's timeout, and the API server times the webhook out (seen with 1,000 pods at once).
 */
import { isConflict, type Cluster, type K8sObject } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';
import type { Decision } from './review';

/**
 * How long a template known to exist is trusted without a write. One deleted by hand in that time is
 * made again by the first pod after it; the pods admitted meanwhile wait for their claims until then.
 */
export const CLAIM_TEMPLATE_TRUST_MS = 30_000;
/** Past this many templates known, the ones no longer trusted are forgotten. */
const KNOWN_MAX = 1024;

export class ClaimTemplates {
  /** When each template (`ns/name`) was last seen to exist. */
  private readonly known = new Map<string, number>();
  /** Creates under way, shared by the pods that need the same template meanwhile. */
  private readonly creating = new Map<string, Promise<void>>();

  constructor(
    private readonly cluster: Cluster,
    private readonly now: () => number = Date.now,
    private readonly trustMs = CLAIM_TEMPLATE_TRUST_MS,
  ) {}

  /**
   * The decision once its object exists: unchanged when created, already there or known to be (or on
   * a dry run, which must write nothing).
   * @throws Error naming the template and the cause when it cannot be created: the pod is refused.
   */
  async ensure(decision: Decision, dryRun: boolean): Promise<Decision> {
    if (!decision.allowed || !decision.claimTemplate || dryRun) return decision;
    const t = decision.claimTemplate;
    const key = `${t.metadata.namespace}/${t.metadata.name}`;
    const seen = this.known.get(key);
    if (seen !== undefined && this.now() - seen < this.trustMs) return decision;
    let create = this.creating.get(key);
    if (!create) {
      create = this.create(key, t).finally(() => this.creating.delete(key));
      this.creating.set(key, create);
    }
    await create;
    return decision;
  }

  private async create(key: string, t: K8sObject): Promise<void> {
    try {
      await this.cluster.create(RESOURCES.resourceclaimtemplates, t);
    } catch (err) {
      // Thrown, not denied: a refusal would be kept by the decision cache for the replicas that follow.
      // 409 on a create is AlreadyExists: an earlier pod of the same shape made it.
      if (!isConflict(err))
        throw new Error(
          `the pod's ResourceClaimTemplate ${key}, through which its GPU pool delivers the share (DRA), ` +
            `could not be created (${err instanceof Error ? err.message : String(err)}); the pod is refused rather than left waiting for a claim that cannot be made: create it again`,
        );
    }
    if (this.known.size >= KNOWN_MAX) for (const [k, at] of this.known) if (this.now() - at >= this.trustMs) this.known.delete(k);
    this.known.set(key, this.now());
  }
}

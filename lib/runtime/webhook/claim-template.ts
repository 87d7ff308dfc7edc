/**
 * The one write admission makes: a DRA pool's pod names a ResourceClaimTemplate, which must exist in
 * its namespace before the pod does, or kube-controller-manager cannot make the pod's claim and the
 * pod waits with no word from us. The template is created blindly: its name is a hash of its spec
 * (lib/runtime/shared/dra/claim-template.ts), so AlreadyExists means the same template is there.
 */
import { isConflict, type Cluster } from '../kube/cluster';
import { RESOURCES } from '../kube/resources';
import type { Decision } from './review';

/**
 * The decision once its object exists: unchanged when created or already there (or on a dry run,
 * which must write nothing).
 * @throws Error naming the template and the cause when it cannot be created: the pod is refused.
 */
export async function ensureClaimTemplate(cluster: Cluster, decision: Decision, dryRun: boolean): Promise<Decision> {
  if (!decision.allowed || !decision.claimTemplate || dryRun) return decision;
  const t = decision.claimTemplate;
  try {
    await cluster.create(RESOURCES.resourceclaimtemplates, t);
  } catch (err) {
    // 409 on a create is AlreadyExists: an earlier replica of the same shape made it.
    if (isConflict(err)) return decision;
    // Thrown, not denied: a refusal would be kept by the decision cache for the replicas that follow.
    throw new Error(
      `the pod's ResourceClaimTemplate ${t.metadata.namespace}/${t.metadata.name}, through which its GPU pool delivers the share (DRA), ` +
        `could not be created (${err instanceof Error ? err.message : String(err)}); the pod is refused rather than left waiting for a claim that cannot be made: create it again`,
    );
  }
  return decision;
}

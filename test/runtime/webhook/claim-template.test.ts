/**
 * The webhook's template writes (lib/runtime/webhook/claim-template.ts): one create for the pods that
 * need a template at once, none while it is known to exist, a create again once that knowledge is
 * old (a template deleted by hand is made again), and a failed create remembered by nobody.
 */
import { ClaimTemplates, CLAIM_TEMPLATE_TRUST_MS } from '../../../lib/runtime/webhook/claim-template';
import { ApiError, type Cluster, type K8sObject } from '../../../lib/runtime/kube/cluster';
import { allow } from '../../../lib/runtime/webhook/review';

const template = (name: string): K8sObject => ({
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceClaimTemplate',
  metadata: { name, namespace: 'apps' },
});

function setUp(fail: () => Error | undefined = () => undefined) {
  const created: string[] = [];
  let release: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  const cluster = {
    create: async (_rt: unknown, o: K8sObject) => {
      created.push(o.metadata.name!);
      await gate;
      const err = fail();
      if (err) throw err;
      return o;
    },
  } as unknown as Cluster;
  let now = 1_000;
  const templates = new ClaimTemplates(cluster, () => now);
  return {
    templates,
    created,
    hold: () => (gate = new Promise((r) => (release = r))),
    release: () => release(),
    advance: (ms: number) => (now += ms),
  };
}

test('pods that need one template at once share one create; then none while it is known, and one again once that is old', async () => {
  const t = setUp();
  t.hold();
  const decision = allow([], undefined, template('tf-a'));
  const waiting = Array.from({ length: 5 }, () => t.templates.ensure(decision, false));
  t.release();
  expect(await Promise.all(waiting)).toEqual(Array(5).fill(decision));
  expect(t.created).toEqual(['tf-a']);
  t.advance(CLAIM_TEMPLATE_TRUST_MS - 1);
  await t.templates.ensure(decision, false);
  expect(t.created).toEqual(['tf-a']);
  t.advance(1);
  await t.templates.ensure(decision, false);
  expect(t.created).toEqual(['tf-a', 'tf-a']);
  // Another template, a dry run and a refusal write nothing more than their own.
  await t.templates.ensure(allow([], undefined, template('tf-b')), true);
  await t.templates.ensure({ ...allow([], undefined, template('tf-c')), allowed: false } as never, false);
  expect(t.created).toEqual(['tf-a', 'tf-a']);
});

test('AlreadyExists counts as made; any other failure refuses the pods waiting on it, and the next pod tries again', async () => {
  let err: Error | undefined = new ApiError(409, 'AlreadyExists', 'it is there');
  const t = setUp(() => err);
  const decision = allow([], undefined, template('tf-a'));
  await t.templates.ensure(decision, false);
  t.advance(CLAIM_TEMPLATE_TRUST_MS);
  err = new ApiError(500, 'InternalError', 'boom');
  await expect(t.templates.ensure(decision, false)).rejects.toThrow(
    "the pod's ResourceClaimTemplate apps/tf-a, through which its GPU pool delivers the share (DRA), could not be created (500 InternalError: boom); the pod is refused rather than left waiting for a claim that cannot be made: create it again",
  );
  err = undefined;
  await t.templates.ensure(decision, false);
  expect(t.created).toEqual(['tf-a', 'tf-a', 'tf-a']);
});

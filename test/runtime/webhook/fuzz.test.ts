/**
 * Property tests over arbitrary annotation maps: the webhook never fails internally, every patch it
 * returns applies cleanly to the pod (RFC 6902, validated by fast-json-patch), a local pod it admits
 * carries a share the extender can read, running it again on the patched pod is a no-op, and no
 * admission writes anything to the API server.
 */
import fc from 'fast-check';
import { GPU_WORKLOAD_ANNOTATIONS } from '../../../lib/annotations';
import { SCHEDULER_NAME } from '../../../lib/contract/object-names';
import { shareOf } from '../../../lib/runtime/shared/share';
import { annotationKey } from '../../support/annotations';
import { patched, pod, post, review, useWebhookSuite, writes } from './fixtures';

const suite = useWebhookSuite([
  {
    name: 'pool-a',
    nodes: 4,
    gpusPerNode: 4,
    isDefault: true,
    taints: [{ key: 'tensor-fusion.ai/x~y/z', value: 'v', effect: 'NoSchedule' }],
  },
  { name: 'pool-b', nodes: 1, gpusPerNode: 1 },
]);

const KEYS = GPU_WORKLOAD_ANNOTATIONS.map((s) => s.key);
const VALUES = [
  'true',
  'false',
  '0',
  '1',
  '2',
  '-1',
  '129',
  '10',
  '0.5',
  '500m',
  '1500m',
  '4Gi',
  '1e3',
  '1e-3',
  '0.5Ki',
  '',
  ' ',
  'pool-a',
  'pool-b',
  'python',
  'sidecar',
  'python,sidecar',
  'medium',
  'critical',
  'A100',
  'H100',
  'a/b',
  '~0',
  'ñ',
  '{"id":"x"}',
];

const noise = fc.dictionary(
  fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...KEYS) },
    { weight: 1, arbitrary: fc.string().map(annotationKey) },
    { weight: 1, arbitrary: fc.string() },
  ),
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...VALUES) },
    { weight: 1, arbitrary: fc.string() },
    { weight: 1, arbitrary: fc.fullUnicodeString({ maxLength: 8 }) },
  ),
  { maxKeys: 3 },
);

/** A valid share half of the time, with up to three arbitrary entries on top half of the time. */
const annotationMap = fc.tuple(fc.boolean(), fc.boolean(), noise, fc.boolean()).map(([valid, local, extra, quiet]) => ({
  ...(valid ? { [KEYS[4]]: '10', [KEYS[6]]: '1Gi', [KEYS[11]]: String(local) } : {}),
  ...(quiet ? {} : extra),
}));

const podShape = fc.record({
  annotations: annotationMap,
  containers: fc.constantFrom(['python'], ['python', 'sidecar'], ['a~b', 'c/d']),
  dryRun: fc.boolean(),
  named: fc.boolean(),
});

const stats = { allowed: 0, denied: 0, marked: 0 };

async function check(
  shape: { annotations: Record<string, string>; containers: string[]; dryRun: boolean; named: boolean },
  viaHttps: boolean,
): Promise<void> {
  const p = pod({ name: shape.named ? 'fuzz' : undefined, annotations: shape.annotations, containers: shape.containers });
  const r = review(p, { dryRun: shape.dryRun });
  const answer = viaHttps ? (await post(suite.webhook.port(), suite.agent, r)).body : await suite.webhook.handle(r);
  const res = answer.response;
  expect(res.uid).toBe(r.request!.uid);
  if (!res.allowed) {
    stats.denied++;
    expect(res.status.code).toBe(403);
    expect(res.status.message).toMatch(/: got .+, expected /);
    return;
  }
  stats.allowed++;
  const admitted = patched(p, answer);
  if ((admitted.spec as { schedulerName?: string }).schedulerName === SCHEDULER_NAME) {
    stats.marked++;
    expect(shareOf(admitted)).toBeDefined();
  }
  // The API server reinvokes with the same request uid.
  const again = await suite.webhook.handle(review(admitted, { dryRun: shape.dryRun, uid: r.request!.uid }));
  expect(again.response!.allowed).toBe(true);
  expect(again.response!.patch).toBeUndefined();
}

it('never errors, and every patch applies and is idempotent (direct handler)', async () => {
  await fc.assert(
    fc.asyncProperty(podShape, (s) => check(s, false)),
    { numRuns: 400 },
  );
});

it('never errors over HTTPS either', async () => {
  await fc.assert(
    fc.asyncProperty(podShape, (s) => check(s, true)),
    { numRuns: 100 },
  );
});

it('explored both outcomes and marked local pods, writing nothing to the API server', () => {
  expect(stats.allowed).toBeGreaterThan(20);
  expect(stats.denied).toBeGreaterThan(50);
  expect(stats.marked).toBeGreaterThan(10);
  expect(writes(suite.double)).toEqual([]);
});

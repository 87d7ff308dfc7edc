/**
 * The decision cache: replicas of one template are decided once, anything a decision reads that
 * changes decides them again, and over the webhook a pool's change reaches the next identical pod.
 */
import { API_VERSION } from '../../../lib/model/group';
import { DEFAULT_POOL_ANNOTATION } from '../../../lib/model/metadata-keys';
import { DecisionCache, decisionKey } from '../../../lib/runtime/webhook/decision-cache';
import type { AdmissionRequest, Answer } from '../../../lib/runtime/webhook/review';
import { shareOf } from '../../../lib/runtime/shared/share';
import { ann } from '../../support/annotations';
import { waitFor } from '../../support/control-plane/process';
import { patched, pod, post, review, useWebhookSuite } from './fixtures';

const request = (
  object = pod({ annotations: { 'tensor-fusion.ai/tflops-request': '10' } }),
  extra: Partial<AdmissionRequest> = {},
): AdmissionRequest => ({ ...review(object).request!, ...extra });

/** A decide function that counts its calls and answers with the count. */
function counting(): { decide: () => Promise<Answer>; calls: () => number } {
  let n = 0;
  return { decide: async () => ({ allowed: true, warnings: [`call ${++n}`] }), calls: () => n };
}

describe('decisionKey', () => {
  it('is the same for the replicas of one template, whatever their uid and managedFields time', () => {
    const a = pod({ annotations: { 'tensor-fusion.ai/tflops-request': '10' } });
    const b = structuredClone(a);
    b.metadata.managedFields = [{ manager: 'kube-controller-manager', operation: 'Update', time: '2026-11-26T10:00:01Z' }];
    expect(decisionKey(request(a, { uid: 'one' }))).toBe(decisionKey(request(b, { uid: 'two' })));
  });

  it.each<[string, (r: AdmissionRequest) => void]>([
    [
      'an annotation',
      (r) => {
        r.object!.metadata.annotations!['tensor-fusion.ai/tflops-request'] = '11';
      },
    ],
    [
      'a label',
      (r) => {
        r.object!.metadata.labels = { ...r.object!.metadata.labels, app: 'other' };
      },
    ],
    [
      'the namespace',
      (r) => {
        r.namespace = 'other';
      },
    ],
    [
      'the operation',
      (r) => {
        r.operation = 'UPDATE';
      },
    ],
    [
      'the subresource',
      (r) => {
        r.subResource = 'status';
      },
    ],
    [
      'the kind',
      (r) => {
        r.kind = { group: '', version: 'v1', kind: 'Binding' };
      },
    ],
  ])('differs when %s differs', (_what, change) => {
    const r = request();
    const changed = structuredClone(r);
    change(changed);
    expect(decisionKey(changed)).not.toBe(decisionKey(r));
  });
});

describe('DecisionCache', () => {
  it('decides a template once and answers its replicas from the cache', async () => {
    const cache = new DecisionCache();
    const { decide, calls } = counting();
    const first = await cache.answer(request(undefined, { uid: 'a' }), decide);
    const second = await cache.answer(request(undefined, { uid: 'b' }), decide);
    expect(calls()).toBe(1);
    expect(second).toBe(first);
  });

  it('decides again after invalidate()', async () => {
    const cache = new DecisionCache();
    const { decide, calls } = counting();
    await cache.answer(request(), decide);
    cache.invalidate();
    expect(await cache.answer(request(), decide)).toEqual({ allowed: true, warnings: ['call 2'] });
    expect(calls()).toBe(2);
  });

  it('does not keep an answer decided while the caches changed', async () => {
    const cache = new DecisionCache();
    const { decide, calls } = counting();
    await cache.answer(request(), async () => {
      cache.invalidate();
      return decide();
    });
    await cache.answer(request(), decide);
    expect(calls()).toBe(2);
  });

  it('does not keep a failure', async () => {
    const cache = new DecisionCache();
    const { decide, calls } = counting();
    await expect(
      cache.answer(request(), async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await cache.answer(request(), decide);
    expect(calls()).toBe(1);
  });

  it('keeps at most maxEntries, dropping the oldest', async () => {
    const cache = new DecisionCache(2);
    const { decide, calls } = counting();
    const ns = (n: string) => request(undefined, { namespace: n });
    for (const n of ['a', 'b', 'c']) await cache.answer(ns(n), decide);
    expect(cache.size).toBe(2);
    await cache.answer(ns('c'), decide);
    await cache.answer(ns('b'), decide);
    expect(calls()).toBe(3);
    await cache.answer(ns('a'), decide);
    expect(calls()).toBe(4);
  });

  it('while pods come all different, keeps an answer only for a pod seen before, until a hit', async () => {
    const cache = new DecisionCache(2);
    const { decide, calls } = counting();
    const ns = (n: string) => request(undefined, { namespace: n });
    // Twice maxEntries kept with no hit: pods are coming all different.
    for (const n of ['a', 'b', 'c', 'd']) await cache.answer(ns(n), decide);
    await cache.answer(ns('e'), decide);
    expect(cache.size).toBe(2);
    // e was seen once: its second answer is kept and serves the third.
    await cache.answer(ns('e'), decide);
    expect(await cache.answer(ns('e'), decide)).toEqual({ allowed: true, warnings: ['call 6'] });
    expect(calls()).toBe(6);
    // The hit ended it: a new pod is kept at once again.
    await cache.answer(ns('g'), decide);
    await cache.answer(ns('g'), decide);
    expect(calls()).toBe(7);
  });

  it('decides a request larger than maxKeyChars every time', async () => {
    const r = request();
    const cache = new DecisionCache(8, decisionKey(r).length - 1);
    const { decide, calls } = counting();
    await cache.answer(r, decide);
    await cache.answer(r, decide);
    expect(calls()).toBe(2);
    expect(cache.size).toBe(0);
  });
});

describe('over the webhook', () => {
  const suite = useWebhookSuite([
    { name: 'pool-a', nodes: 1, gpusPerNode: 1, isDefault: true },
    { name: 'pool-b', nodes: 1, gpusPerNode: 1 },
  ]);
  const template = () => pod({ annotations: ann({ 'is-local-gpu': 'true', 'tflops-request': '10', 'vram-request': '1Gi' }) });
  const poolOf = async (uid: string) => {
    const answer = await post(suite.webhook.port(), suite.agent, review(template(), { uid }));
    expect(answer.body.response.uid).toBe(uid);
    return shareOf(patched(template(), answer.body))?.pool;
  };

  it('answers each replica with its own uid, and the next one after a GPUPool change with the new default pool', async () => {
    expect(await poolOf('r1')).toBe('pool-a');
    expect(await poolOf('r2')).toBe('pool-a');
    const pools = suite.double.listObjects('gpupools') as { metadata: { name: string; annotations?: Record<string, string> } }[];
    for (const p of pools) {
      suite.double.put('gpupools', {
        ...p,
        apiVersion: API_VERSION,
        kind: 'GPUPool',
        metadata: { ...p.metadata, annotations: { [DEFAULT_POOL_ANNOTATION]: String(p.metadata.name === 'pool-b') } },
      });
    }
    let n = 0;
    await waitFor('the webhook to see pool-b as the default', async () => (await poolOf(`r${3 + n++}`)) === 'pool-b', 5_000, 20);
  });
});

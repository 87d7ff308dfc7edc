/**
 * 1,000 simultaneous admissions against a pool with room for exactly 500 shares: exactly 500 are
 * admitted, no GPU holds more than it has, and every admitted pod's allocation is in the ledger.
 * Once with one webhook, once with two replicas sharing the API server (their ledgers race).
 */
import type * as https from 'node:https';
import type { ApiServerDouble } from '../support/api-server';
import type { WebhookHandle } from '../../lib/runtime/webhook/start';
import { allocationOf, client, GiB, ledgerEntries, patched, pod, post, review, seedPool, startDouble, startTestWebhook, usageByGpu } from './fixtures';

const ann = { 'tensor-fusion.ai/is-local-gpu': 'true', 'tensor-fusion.ai/tflops-request': '2', 'tensor-fusion.ai/vram-request': '1Gi', 'tensor-fusion.ai/generate-workload': 'false', 'tensor-fusion.ai/workload': 'race' };

let double: ApiServerDouble;
let agent: https.Agent;

beforeEach(async () => {
  double = await startDouble();
  // 5 nodes x 2 GPUs x 100 TFLOPS, 2 TFLOPS each: 50 per GPU, 500 in all (VRAM allows 80 per GPU).
  seedPool(double, { name: 'pool-a', nodes: 5, gpusPerNode: 2, tflops: 100, vram: 80 * GiB, isDefault: true });
  double.put('tensorfusionworkloads', { apiVersion: 'tensor-fusion.ai/v1', kind: 'TensorFusionWorkload', metadata: { name: 'race', namespace: 'default' }, spec: {} });
  agent = client(undefined, 256);
});

afterEach(async () => {
  agent.destroy();
  await double.stop();
});

async function race(webhooks: WebhookHandle[]): Promise<void> {
  const answers = await Promise.all(Array.from({ length: 1000 }, async (_, i) => {
    const p = pod({ name: `p-${i}`, annotations: ann });
    const r = review(p);
    const a = await post(webhooks[i % webhooks.length].port(), agent, r);
    return { p, a };
  }));
  expect(answers.every(({ a }) => a.status === 200)).toBe(true);
  const allowed = answers.filter(({ a }) => a.body.response.allowed);
  const denied = answers.filter(({ a }) => !a.body.response.allowed);
  expect(allowed).toHaveLength(500);
  expect(denied).toHaveLength(500);
  // Refusals are capacity refusals, not errors.
  for (const { a } of denied) expect(a.body.response.status.message).toMatch(/^tensor-fusion\.ai\/gpupool: got "pool-a", expected a GPUPool with room for 1 GPU/);

  const entries = ledgerEntries(double, 'pool-a');
  expect(entries).toHaveLength(500);
  const usage = usageByGpu(entries);
  expect(usage.size).toBe(10);
  const over = [...usage.values()].filter((u) => u.tflops > 100 + 1e-9 || u.vram > 80 * GiB);
  expect(over).toEqual([]);
  expect([...usage.values()].every((u) => u.count === 50)).toBe(true);
  // The pods' recorded allocations are exactly the ledger's.
  const recorded = allowed.map(({ p, a }) => allocationOf(patched(p, a.body))!.id).sort();
  expect(recorded).toEqual(entries.map((e) => e.allocation.id).sort());
}

it('one webhook: exactly 500 of 1,000 admitted, no GPU over-committed', async () => {
  const webhook = await startTestWebhook(double);
  try {
    await race([webhook]);
  } finally {
    await webhook.close();
  }
});

it('two webhook replicas on one API server: still exactly 500, no GPU over-committed', async () => {
  const a = await startTestWebhook(double, { name: 'replica-a' });
  const b = await startTestWebhook(double, { name: 'replica-b' });
  try {
    await race([a, b]);
    // Both replicas really wrote the ledger, so the race between them was exercised.
    const writers = new Set(double.requests.filter((q) => q.method === 'PUT' || q.method === 'POST').filter((q) => q.path.includes('configmaps')).map((q) => q.userAgent));
    expect(writers).toEqual(new Set(['replica-a', 'replica-b']));
    expect(double.requests.some((q) => q.path.includes('configmaps') && q.status === 409)).toBe(true);
  } finally {
    await a.close();
    await b.close();
  }
});

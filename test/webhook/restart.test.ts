/**
 * Restart safety: a webhook killed in the middle of a burst and a fresh one taking over lose no
 * allocation of a created pod and double none; allocations whose pod never appeared are collected;
 * a lost ledger is rebuilt from the pods' annotations; finished and deleted pods release their share.
 */
import type * as https from 'node:https';
import type { ApiServerDouble } from '../support/api-server';
import type { K8sObject } from '../../lib/runtime/cluster';
import type { WebhookHandle } from '../../lib/runtime/webhook/start';
import {
  allocationOf, client, eventually, GiB, ledgerEntries, NS, patched, pod, post, review, seedPool, startDouble, startTestWebhook, usageByGpu,
} from './fixtures';

const ann = { 'tensor-fusion.ai/is-local-gpu': 'true', 'tensor-fusion.ai/tflops-request': '2', 'tensor-fusion.ai/vram-request': '1Gi', 'tensor-fusion.ai/generate-workload': 'false', 'tensor-fusion.ai/workload': 'w' };

let double: ApiServerDouble;
let agent: https.Agent;
const created: K8sObject[] = [];

/** What the API server does: send the review, apply the patch, store the pod (unless `reject`). */
async function createPod(webhook: WebhookHandle, name: string, reject = false): Promise<'created' | 'denied' | 'failed' | 'rejected'> {
  const p = pod({ name, annotations: ann });
  let answer;
  try {
    answer = await post(webhook.port(), agent, review(p));
  } catch {
    return 'failed';
  }
  if (answer.status !== 200) return 'failed';
  if (!answer.body.response.allowed) return 'denied';
  if (reject) return 'rejected';
  const stored = double.put('pods', { ...patched(p, answer.body), status: { phase: 'Running' } });
  created.push(stored);
  return 'created';
}

function check(): void {
  const entries = ledgerEntries(double, 'pool-a');
  const ids = entries.map((e) => e.allocation.id);
  expect(new Set(ids).size).toBe(ids.length);
  const live = double.listObjects('pods').filter((p) => p.status?.phase === 'Running');
  const podIds = live.map((p) => allocationOf(p)!.id);
  expect(new Set(podIds).size).toBe(podIds.length);
  // Nothing lost: every running pod's allocation is in the ledger.
  expect(podIds.filter((id) => !ids.includes(id))).toEqual([]);
  // Nothing doubled: no GPU holds more than it has.
  for (const u of usageByGpu(entries).values()) expect(u.tflops).toBeLessThanOrEqual(100);
}

beforeAll(async () => {
  double = await startDouble();
  // 3 nodes x 2 GPUs x 100 TFLOPS at 2 TFLOPS each: room for 300.
  seedPool(double, { name: 'pool-a', nodes: 3, gpusPerNode: 2, tflops: 100, vram: 80 * GiB, isDefault: true });
  double.put('tensorfusionworkloads', { apiVersion: 'tensor-fusion.ai/v1', kind: 'TensorFusionWorkload', metadata: { name: 'w', namespace: 'default' }, spec: {} });
  agent = client(undefined, 64);
});

afterAll(async () => {
  agent.destroy();
  await double.stop();
});

it('survives a kill mid-burst: the successor loses nothing, doubles nothing, and collects the orphans', async () => {
  const a = await startTestWebhook(double, { name: 'first', drainMs: 0 });
  let answered = 0;
  const burst = Array.from({ length: 150 }, (_, i) => createPod(a, `a-${i}`, i % 10 === 0).finally(() => {
    answered++;
  }));
  await eventually(() => answered >= 40);
  await a.close(); // killed: in-flight reviews fail, their ledger writes may or may not have landed
  const outcomes = await Promise.all(burst);
  expect(outcomes.filter((o) => o === 'created').length).toBeGreaterThan(0);
  check();

  const b = await startTestWebhook(double, { name: 'second', graceMs: 60_000 });
  try {
    const more = await Promise.all(Array.from({ length: 400 }, (_, i) => createPod(b, `b-${i}`, i % 25 === 0)));
    expect(more).toContain('denied'); // the pool filled up
    check();
    const running = double.listObjects('pods').length;
    expect(running).toBeLessThanOrEqual(300);

    // Within the grace period nothing is collected, not even the rejected pods' allocations.
    expect((await b.sweep()).released).toBe(0);
    const withOrphans = ledgerEntries(double, 'pool-a').length;
    expect(withOrphans).toBeGreaterThan(running);
  } finally {
    await b.close();
  }

  // After the grace period the orphans go, and exactly the running pods' allocations stay.
  const c = await startTestWebhook(double, { name: 'third', graceMs: 0 });
  try {
    const r = await c.sweep();
    expect(r.restored).toBe(0);
    const ids = ledgerEntries(double, 'pool-a').map((e) => e.allocation.id).sort();
    expect(ids).toEqual(double.listObjects('pods').map((p) => allocationOf(p)!.id).sort());
    check();
  } finally {
    await c.close();
  }
});

it('rebuilds a lost ledger from the pods, and then refuses what no longer fits', async () => {
  const before = ledgerEntries(double, 'pool-a').map((e) => e.allocation).sort((x, y) => (x.id < y.id ? -1 : 1));
  double.remove('configmaps', 'tf-alloc-pool-a', NS);
  const d = await startTestWebhook(double, { name: 'fourth', graceMs: 0 });
  try {
    const r = await d.sweep();
    expect(r.restored).toBe(before.length);
    const after = ledgerEntries(double, 'pool-a').map((e) => e.allocation).sort((x, y) => (x.id < y.id ? -1 : 1));
    expect(after).toEqual(before);
    // Fill the rest of the pool: exactly the free room is granted, on top of the restored state.
    const free = 300 - before.length;
    const outcomes = await Promise.all(Array.from({ length: free + 20 }, (_, i) => createPod(d, `d-${i}`)));
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(free);
    check();
  } finally {
    await d.close();
  }
});

it('releases the share of a pod that finished or was deleted', async () => {
  const e = await startTestWebhook(double, { name: 'fifth', graceMs: 60_000 });
  try {
    const [first, second] = double.listObjects('pods');
    const total = ledgerEntries(double, 'pool-a').length;
    double.put('pods', { ...first, status: { phase: 'Succeeded' } });
    double.remove('pods', second.metadata.name, second.metadata.namespace);
    await eventually(() => ledgerEntries(double, 'pool-a').length === total - 2);
    const ids = ledgerEntries(double, 'pool-a').map((x) => x.allocation.id);
    expect(ids).not.toContain(allocationOf(first)!.id);
    expect(ids).not.toContain(allocationOf(second)!.id);
    // The freed room is usable again.
    expect(await createPod(e, 'after-release')).toBe('created');
  } finally {
    await e.close();
  }
});

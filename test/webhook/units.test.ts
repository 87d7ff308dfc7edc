/** The webhook's pure parts: MPS limits, owner naming, patch building, collection planning, env, usage. */
import { applyPatch, deepClone } from 'fast-json-patch';
import { ALLOCATION_ANNOTATION } from '../../lib/labels';
import type { K8sObject } from '../../lib/runtime/cluster';
import { mpsMemoryLimit, mpsThreadPercentage } from '../../lib/runtime/webhook/env';
import { planCollection } from '../../lib/runtime/webhook/lifecycle';
import { decodeEntry, encodeEntry, ledgerKey } from '../../lib/runtime/webhook/ledger';
import { topOwnerName } from '../../lib/runtime/webhook/owner';
import { podPatch } from '../../lib/runtime/webhook/patch';
import { serviceDnsNames } from '../../lib/names';
import { usageFromAllocations } from '../../lib/runtime/webhook/usage';
import type { Allocation } from '../../lib/scheduler';

const GiB = 2 ** 30;

describe('MPS limits', () => {
  it('gives each visible device the VRAM limit in whole MiB', () => {
    expect(mpsMemoryLimit(1, 4 * GiB)).toBe('0=4096M');
    expect(mpsMemoryLimit(3, 1.5 * GiB)).toBe('0=1536M,1=1536M,2=1536M');
    expect(mpsMemoryLimit(1, 1000)).toBe('0=1M');
    expect(mpsMemoryLimit(1, 2 ** 20 + 2 ** 19)).toBe('0=1M');
  });

  it('turns the TFLOPS limit into a whole percentage of the GPU, 1 to 100', () => {
    expect(mpsThreadPercentage(31.2, 312)).toBe('10');
    expect(mpsThreadPercentage(20, 312)).toBe('7');
    expect(mpsThreadPercentage(0.001, 312)).toBe('1');
    expect(mpsThreadPercentage(1000, 312)).toBe('100');
    expect(mpsThreadPercentage(10, 0)).toBe('100');
  });
});

describe('workload naming after the top owner', () => {
  const p = (metadata: Record<string, unknown>): K8sObject => ({ metadata } as K8sObject);
  it.each([
    ['a Deployment through its ReplicaSet', p({ labels: { 'pod-template-hash': '7c9f' }, ownerReferences: [{ kind: 'ReplicaSet', name: 'web-7c9f', controller: true }] }), 'web'],
    ['a ReplicaSet without the hash label', p({ ownerReferences: [{ kind: 'ReplicaSet', name: 'web-7c9f', controller: true }] }), 'web-7c9f'],
    ['a CronJob through its Job', p({ ownerReferences: [{ kind: 'Job', name: 'nightly-29012345', controller: true }] }), 'nightly'],
    ['a plain Job', p({ ownerReferences: [{ kind: 'Job', name: 'train-7', controller: true }] }), 'train-7'],
    ['a StatefulSet', p({ ownerReferences: [{ kind: 'StatefulSet', name: 'db', controller: true }] }), 'db'],
    ['the controller among several owners', p({ ownerReferences: [{ kind: 'Foo', name: 'x' }, { kind: 'StatefulSet', name: 'db', controller: true }] }), 'db'],
    ['a bare named pod', p({ name: 'solo' }), 'solo'],
    ['a bare pod with generateName', p({ generateName: 'job-' }), 'job'],
  ])('names %s', (_what, pod, name) => {
    expect(topOwnerName(pod)).toBe(name);
  });

  it('has no name for a pod with neither name nor owner', () => {
    expect(topOwnerName(p({}))).toBeUndefined();
  });
});

describe('pod patches', () => {
  const pod = (): K8sObject => ({
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: 'p', labels: { 'a/b': '1' } },
    spec: { containers: [{ name: 'c', env: [{ name: 'X', value: 'old' }, { name: 'Y', valueFrom: { fieldRef: { fieldPath: 'x' } } }] }], tolerations: [{ key: 'k', operator: 'Exists' }] },
  });

  it('escapes / and ~ in map keys and touches only what differs', () => {
    const m = {
      annotations: { 'x~y/z': 'v' },
      labels: { 'a/b': '1', 'c/d': '2' },
      env: new Map([['c', [{ name: 'X', value: 'new' }, { name: 'Y', value: 'plain' }, { name: 'Z', value: 'z' }]]]),
      tolerations: [{ key: 'k', operator: 'Exists' }, { key: 'tensor-fusion.ai/t', operator: 'Equal', value: 'v', effect: 'NoSchedule' }],
    };
    const ops = podPatch(pod(), m);
    expect(ops).toEqual([
      { op: 'add', path: '/metadata/annotations', value: { 'x~y/z': 'v' } },
      { op: 'add', path: '/metadata/labels/c~1d', value: '2' },
      { op: 'add', path: '/spec/tolerations/-', value: { key: 'tensor-fusion.ai/t', operator: 'Equal', value: 'v', effect: 'NoSchedule' } },
      { op: 'replace', path: '/spec/containers/0/env/0', value: { name: 'X', value: 'new' } },
      { op: 'replace', path: '/spec/containers/0/env/1', value: { name: 'Y', value: 'plain' } },
      { op: 'add', path: '/spec/containers/0/env/-', value: { name: 'Z', value: 'z' } },
    ]);
    const out = applyPatch(deepClone(pod()), ops as never, true, false).newDocument;
    expect(podPatch(out, m)).toEqual([]);
    expect(podPatch(out, { annotations: { 'x~y/z': 'w' } })).toEqual([{ op: 'add', path: '/metadata/annotations/x~0y~1z', value: 'w' }]);
  });
});

describe('collection plan', () => {
  const alloc = (id: string, pool = 'p'): Allocation => ({ id, pool, node: 'n', gpuIds: ['g'], tflopsRequest: 1, tflopsLimit: 1, vramRequest: 1, vramLimit: 1, cpu: 0, memory: 0, qos: 'medium' });
  const entry = (id: string, createdAt: number) => ({ allocation: alloc(id), createdAt, namespace: 'ns' });
  const podWith = (id: string, phase = 'Running', deleting = false): K8sObject => ({
    metadata: { name: id, namespace: 'ns', annotations: { [ALLOCATION_ANNOTATION]: JSON.stringify(alloc(id)) }, ...(deleting ? { deletionTimestamp: 'now' } : {}) },
    status: { phase },
  });

  it('keeps backed and young entries, releases finished, deleted and expired ones, restores missing ones', () => {
    const seen = new Set(['gone']);
    const plan = planCollection(
      [entry('running', 0), entry('young', 950), entry('old', 0), entry('done', 990), entry('failed', 990), entry('deleting', 990), entry('gone', 990)],
      [podWith('running'), podWith('done', 'Succeeded'), podWith('failed', 'Failed'), podWith('deleting', 'Running', true), podWith('unknown-to-ledger')],
      1000, 100, seen,
    );
    expect(plan.release.get('p')!.sort()).toEqual(['deleting', 'done', 'failed', 'gone', 'old']);
    expect(plan.restore.get('p')!.map((e) => e.allocation.id)).toEqual(['unknown-to-ledger']);
    expect(seen.has('running')).toBe(true);
  });
});

describe('ledger entries', () => {
  const allocation = { id: 'u-1', pool: 'p', node: 'n1', gpuIds: ['n1-gpu-0', 'n1-gpu-1'], tflopsRequest: 1.5, tflopsLimit: 3, vramRequest: GiB, vramLimit: 2 * GiB, cpu: 0, memory: 0, qos: 'high' as const };

  it('round-trip compactly, keeping a hashed id inside the value', () => {
    const e = { allocation, createdAt: 1700000000000, namespace: 'ml' };
    const text = encodeEntry(e);
    expect(text).toBe('["n1",["n1-gpu-0","n1-gpu-1"],1.5,3,1073741824,2147483648,"high",1700000000000,"ml",0,0]');
    expect(decodeEntry('u-1', text, 'p')).toEqual(e);
    const odd = { ...e, allocation: { ...allocation, id: 'a/b' } };
    expect(decodeEntry(ledgerKey('a/b'), encodeEntry(odd), 'p')).toEqual(odd);
  });

  it('ignores values that are not entries', () => {
    expect(decodeEntry('k', 'not json', 'p')).toBeUndefined();
    expect(decodeEntry('k', '{"id":"k"}', 'p')).toBeUndefined();
    expect(decodeEntry('k', '[1,2]', 'p')).toBeUndefined();
  });
});

describe('ledger keys', () => {
  it('keeps admission uids and hashes anything a ConfigMap key cannot hold', () => {
    expect(ledgerKey('0f6c3a1e-7b8f-4b3e-9d2a-1c2b3d4e5f60')).toBe('0f6c3a1e-7b8f-4b3e-9d2a-1c2b3d4e5f60');
    expect(ledgerKey('a/b')).toMatch(/^h-[0-9a-f]{40}$/);
    expect(ledgerKey('a/b')).not.toBe(ledgerKey('a:b'));
  });
});

describe('webhook service', () => {
  it('lists the Service DNS names the certificate covers', () => {
    expect(serviceDnsNames('hook', 'sys')).toEqual(['hook', 'hook.sys', 'hook.sys.svc', 'hook.sys.svc.cluster.local']);
  });
});

describe('usage for the status reconcilers', () => {
  it('sums the requests of active pods per GPU', () => {
    const a = (id: string, gpuIds: string[], t: number) => JSON.stringify({ id, pool: 'p', node: 'n', gpuIds, tflopsRequest: t, vramRequest: GiB });
    const pods = [
      { metadata: { annotations: { [ALLOCATION_ANNOTATION]: a('1', ['g0', 'g1'], 10) } }, status: { phase: 'Running' } },
      { metadata: { annotations: { [ALLOCATION_ANNOTATION]: a('2', ['g0'], 5) } }, status: { phase: 'Pending' } },
      { metadata: { annotations: { [ALLOCATION_ANNOTATION]: a('3', ['g0'], 50) } }, status: { phase: 'Succeeded' } },
      { metadata: { annotations: {} } },
    ] as K8sObject[];
    expect(usageFromAllocations(pods)).toEqual(new Map([['g0', { tflops: 15, vram: 2 * GiB, pods: 2 }], ['g1', { tflops: 10, vram: GiB, pods: 1 }]]));
  });
});

/** What an allocated claim holds of our GPUs: the one reading of its results. */
import { claimPodUid, slimClaim, usageFromClaims } from '../../../../lib/runtime/shared/dra/claim-results';
import type { K8sObject } from '../../../../lib/runtime/kube/cluster';

const GI = 2 ** 30;
const result = (device: string, tflops: string, memory: string, driver = 'gpu.tensor-fusion.ai') => ({
  request: 'gpu',
  driver,
  pool: 'n1',
  device,
  shareID: 'x',
  consumedCapacity: { tflops, memory },
});
const claim = (name: string, results: object[], extra: Partial<K8sObject['metadata']> = {}) =>
  ({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: { name, namespace: 'ml', uid: `c-${name}`, managedFields: [{ manager: 'kube-scheduler' }], ...extra },
    spec: { devices: { requests: [{ name: 'gpu' }] } },
    status: { allocation: { devices: { results } } },
  }) as K8sObject;

test('usage per GPU object: what each claim consumed, one share per result, other drivers and unknown devices left out', () => {
  const usage = usageFromClaims([
    claim('a', [result('gpu-0', '10', '5Gi'), result('gpu-1', '10', '5Gi')]),
    claim('b', [result('gpu-0', '20', '4500Mi'), result('gpu-0', '99', '1Gi', 'nic.example.com'), result('mig-0', '1', '1Gi')]),
    claim('pending', []),
  ]);
  expect(usage).toEqual(
    new Map([
      ['n1-gpu-0', { tflops: 30, vram: 5 * GI + 4500 * 2 ** 20, pods: 2 }],
      ['n1-gpu-1', { tflops: 10, vram: 5 * GI, pods: 1 }],
    ]),
  );
});

test("a claim's pod: its Pod owner, else the one pod it is reserved for", () => {
  const owned = claim('a', [], { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'uid-p', controller: true }] });
  expect(claimPodUid(owned)).toBe('uid-p');
  const reserved = { ...claim('b', []), status: { reservedFor: [{ resource: 'pods', name: 'q', uid: 'uid-q' }] } } as K8sObject;
  expect(claimPodUid(reserved)).toBe('uid-q');
  expect(claimPodUid(claim('c', []))).toBeUndefined();
});

test('the cached claim keeps its identity, Pod owner, reservations and our results only', () => {
  const full = {
    ...claim('a', [result('gpu-0', '10', '5Gi'), result('x', '1', '1Gi', 'nic.example.com')], {
      resourceVersion: '7',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'uid-p', controller: true }],
    }),
  };
  (full.status as { reservedFor?: object[] }).reservedFor = [{ resource: 'pods', name: 'p', uid: 'uid-p' }];
  expect(slimClaim(full)).toEqual({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceClaim',
    metadata: {
      name: 'a',
      namespace: 'ml',
      uid: 'c-a',
      resourceVersion: '7',
      deletionTimestamp: undefined,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'uid-p', controller: true }],
    },
    status: {
      allocation: { devices: { results: [result('gpu-0', '10', '5Gi')] } },
      reservedFor: [{ resource: 'pods', name: 'p', uid: 'uid-p' }],
    },
  });
});

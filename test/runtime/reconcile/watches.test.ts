/**
 * The reconcilers' declared watches, wired to recording caches and a recording queue: which keys an
 * event on each kind enqueues, and which wait for the pod-status delay.
 */
import { ANNOTATION } from '../../../lib/annotations';
import { GENERATED_WORKLOAD_LABEL, GPU_IDS_ANNOTATION, MANAGED_BY_LABEL, WORKLOAD_LABEL } from '../../../lib/model/metadata-keys';
import type { InformerHandlers } from '../../../lib/runtime/kube/informer';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { CACHE_NAMES, CacheName } from '../../../lib/runtime/shared/caches';
import { nodeWatches } from '../../../lib/runtime/reconcile/gpu-node';
import { encodeKey, parseKey, nodeKey, poolKey, workloadKey } from '../../../lib/runtime/reconcile/queue-keys';
import { poolWatches } from '../../../lib/runtime/reconcile/pool-status';
import { EventSources, primaryKeys, wireWatches } from '../../../lib/runtime/reconcile/watches';
import { workloadWatches } from '../../../lib/runtime/reconcile/workload';

const DECLARED = [nodeWatches, poolWatches, workloadWatches];
const DELAY = 1000;

const obj = (
  name: string,
  extra: {
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    spec?: unknown;
    status?: unknown;
  } = {},
): K8sObject =>
  ({
    metadata: { name, namespace: extra.namespace, labels: extra.labels, annotations: extra.annotations },
    spec: extra.spec,
    status: extra.status,
  }) as K8sObject;

/** Caches holding `objects` (by name; `namespace/name` when namespaced) that record the handlers registered on them. */
function sources(objects: Partial<Record<CacheName, K8sObject[]>>): {
  caches: EventSources;
  handlers: Record<string, InformerHandlers<K8sObject>[]>;
} {
  const handlers: Record<string, InformerHandlers<K8sObject>[]> = {};
  const caches = Object.fromEntries(
    CACHE_NAMES.map((c) => {
      const list = objects[c] ?? [];
      const key = (o: K8sObject) => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name);
      return [
        c,
        {
          list: () => list,
          get: (k: string) => list.find((o) => key(o) === k),
          byIndex: () => {
            throw new Error('no watch reads an index');
          },
          on: (h: InformerHandlers<K8sObject>) => {
            (handlers[c] ??= []).push(h);
          },
        },
      ];
    }),
  ) as unknown as EventSources;
  return { caches, handlers };
}

function wired(objects: Partial<Record<CacheName, K8sObject[]>> = {}) {
  const { caches, handlers } = sources(objects);
  const added: string[] = [];
  const later: string[] = [];
  wireWatches(caches, DECLARED, { add: (k) => added.push(k), addAfter: (k, ms) => later.push(`${k}@${ms}`) }, DELAY);
  const emit = (c: CacheName, fn: (h: InformerHandlers<K8sObject>) => void) => {
    expect(handlers[c]).toHaveLength(1);
    handlers[c].forEach(fn);
  };
  return { caches, added, later, emit };
}

describe('queue keys', () => {
  test.each([nodeKey('n1'), poolKey('pool-a'), workloadKey('ml', 'w1')])('%o survives its string form', (k) => {
    expect(parseKey(encodeKey(k))).toEqual(k);
  });

  test('the string forms are the ones the queue has always held', () => {
    expect([nodeKey('n1'), poolKey('a'), workloadKey('ml', 'w1')].map(encodeKey)).toEqual(['node/n1', 'pool/a', 'workload/ml/w1']);
  });

  test.each(['', 'node', 'node/', 'pod/x', 'workload/ml', 'workload/ml/', 'workload//w'])('%j is no key', (s) => {
    expect(parseKey(s)).toBeUndefined();
  });
});

describe('declared watches', () => {
  const nodes = [obj('n1'), obj('n2')];
  const generated = obj('g', { namespace: 'ml', labels: { [GENERATED_WORKLOAD_LABEL]: 'true' } });
  const handMade = obj('h', { namespace: 'ml' });

  test('at start every node, pool and workload is enqueued once', () => {
    const { caches } = wired({ nodes, pools: [obj('a')], workloads: [generated, handMade] });
    expect(primaryKeys(caches, DECLARED).map(encodeKey)).toEqual(['node/n1', 'node/n2', 'pool/a', 'workload/ml/g', 'workload/ml/h']);
  });

  test('a pool added reaches itself, every node and the generated workloads', () => {
    const { added, emit } = wired({ nodes, workloads: [generated, handMade] });
    emit('pools', (h) => h.add?.(obj('a')));
    expect(added).toEqual(['pool/a', 'node/n1', 'node/n2', 'workload/ml/g']);
  });

  test('a status-only pool update reaches the pool alone; a spec or annotation change reaches the rest', () => {
    const { added, emit } = wired({ nodes, workloads: [generated] });
    emit('pools', (h) => h.update?.(obj('a', { spec: { x: 1 } }), obj('a', { spec: { x: 1 }, status: { phase: 'Running' } })));
    expect(added).toEqual(['pool/a']);
    added.length = 0;
    emit('pools', (h) => h.update?.(obj('a', { spec: { x: 1 } }), obj('a', { spec: { x: 2 } })));
    expect(added).toEqual(['pool/a', 'node/n1', 'node/n2', 'workload/ml/g']);
    added.length = 0;
    emit('pools', (h) => h.update?.(obj('a'), obj('a', { annotations: { k: 'v' } })));
    expect(added).toEqual(['pool/a', 'node/n1', 'node/n2', 'workload/ml/g']);
  });

  test('a GPUNode moving between pools reaches its node and both pools', () => {
    const { added, emit } = wired();
    emit('gpuNodes', (h) =>
      h.update?.(obj('n1', { labels: { [MANAGED_BY_LABEL]: 'a' } }), obj('n1', { labels: { [MANAGED_BY_LABEL]: 'b' } })),
    );
    expect(added).toEqual(['node/n1', 'pool/a', 'node/n1', 'pool/b']);
  });

  test("a GPU reaches its node and its GPUNode's pool; one without owner label reaches nothing", () => {
    const { added, emit } = wired({ gpuNodes: [obj('n1', { labels: { [MANAGED_BY_LABEL]: 'a' } })] });
    emit('gpus', (h) => h.delete?.(obj('n1-gpu-0', { labels: { [MANAGED_BY_LABEL]: 'n1' } })));
    emit('gpus', (h) => h.add?.(obj('stray')));
    expect(added).toEqual(['node/n1', 'pool/a']);
  });

  test('a pod reaches its node (when it holds GPUs) and its workload after the delay, before and after an update', () => {
    const { added, later, emit } = wired();
    const waiting = obj('p', { namespace: 'ml', labels: { [WORKLOAD_LABEL]: 'w1' } });
    const bound = {
      ...obj('p', { namespace: 'ml', labels: { [WORKLOAD_LABEL]: 'w2' }, annotations: { [GPU_IDS_ANNOTATION]: 'n1-gpu-0' } }),
      spec: { nodeName: 'n1' },
    } as K8sObject;
    emit('pods', (h) => h.update?.(waiting, bound));
    expect(added).toEqual([]);
    expect(later).toEqual(['workload/ml/w1@1000', 'node/n1@1000', 'workload/ml/w2@1000']);
  });

  test('a profile reaches the workloads of the pods in its namespace that name it', () => {
    const naming = (name: string, ns: string, w: string) =>
      obj(name, { namespace: ns, labels: { [WORKLOAD_LABEL]: w }, annotations: { [ANNOTATION.workloadProfile]: 'fast' } });
    const { added, emit } = wired({
      pods: [naming('p1', 'ml', 'w1'), naming('p2', 'other', 'w2'), obj('p3', { namespace: 'ml', labels: { [WORKLOAD_LABEL]: 'w3' } })],
    });
    emit('profiles', (h) => h.add?.(obj('fast', { namespace: 'ml' })));
    expect(added).toEqual(['workload/ml/w1']);
  });

  test('a node or workload event reaches its own key', () => {
    const { added, emit } = wired();
    emit('nodes', (h) => h.delete?.(obj('n1')));
    emit('workloads', (h) => h.update?.(handMade, handMade));
    expect(added).toEqual(['node/n1', 'workload/ml/h']);
  });
});

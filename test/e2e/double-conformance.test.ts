/**
 * The API-server double (test/support/api-server) against the real kube-apiserver: every scenario
 * runs against both, and both must give the answers written here, which are what the real server
 * (v1.36) answered: status codes, reasons, messages, and the fields our code reads. A difference
 * names the target, so a drift of the double (or a new Kubernetes) shows where it is.
 */
import * as path from 'node:path';
import type { HttpCluster } from '../../lib/runtime/kube/http-cluster';
import { RESOURCES, ResourceType, resourceType } from '../../lib/runtime/kube/resources';
import { ApiServerDouble, clusterFor, startApiServer } from '../support/api-server';
import { describeControlPlane, waitFor } from '../support/control-plane';
import { poolObj } from '../runtime/fixtures';

type Obj = Record<string, any>;

const CONFIGMAPS = resourceType('v1', 'configmaps', 'ConfigMap');
const CM = '/api/v1/namespaces/default/configmaps';
const PODS = '/api/v1/namespaces/default/pods';
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/default/leases';
const POOLS = '/apis/tensor-fusion.ai/v1/gpupools';
const TFW = '/apis/tensor-fusion.ai/v1/namespaces/default/tensorfusionworkloads';
const APPLY = 'application/apply-patch+yaml';
const MERGE = 'application/merge-patch+json';
const MiB = 1024 * 1024;

interface Target {
  name: 'real' | 'double';
  c: HttpCluster;
  /** etcd compaction plus an API server restart (the real watch cache serves old pages until then). */
  compactAndRestart(): Promise<void>;
}

interface Answer {
  status: number;
  body: Obj;
}

async function call(
  t: Target,
  method: string,
  url: string,
  body?: unknown,
  ct?: string,
  query: Record<string, string | number | boolean> = {},
): Promise<Answer> {
  const r = await t.c.request(method, url, query, body, ct);
  let parsed: Obj;
  try {
    parsed = JSON.parse(r.body);
  } catch {
    parsed = { raw: r.body };
  }
  return { status: r.status, body: parsed };
}

/** A step as compared: the status, and a Status's reason and message, or what `pick` reads. */
function seen(step: string, a: Answer, pick: (b: Obj) => Obj = () => ({})): Obj {
  const b = a.body;
  if (b.kind === 'Status' && b.status === 'Failure') return { step, code: a.status, reason: b.reason, message: b.message };
  return { step, code: a.status, ...pick(b) };
}

/** Watch events of `rt` in namespace default from now on, as `TYPE name detail`, until `stop`. */
async function record(t: Target, rt: ResourceType, labelSelector: string, detail: (o: Obj) => string) {
  const list = await t.c.list(rt, { namespace: 'default', labelSelector });
  const events: string[] = [];
  const ac = new AbortController();
  const done = t.c.watch(rt, { namespace: 'default', labelSelector, resourceVersion: list.resourceVersion, signal: ac.signal }, (e) => {
    events.push(`${e.type} ${e.object.metadata.name} ${detail(e.object as Obj)}`);
  });
  return {
    events,
    async stop(last: string): Promise<string[]> {
      await waitFor(`watch event "${last}"`, async () => events.includes(last), 20_000, 50);
      ac.abort();
      await done;
      return events;
    },
  };
}

const cm = (name: string, extra: Obj = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, ...extra });
const lease = (name: string, spec: Obj) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec });
const pod = (name: string, spec: Obj = {}, meta: Obj = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { conformance: 'deletion' }, ...meta },
  spec: { containers: [{ name: 'main', image: 'example.io/app:1' }], ...spec },
});
const tfw = (name: string, spec?: Obj, meta: Obj = {}) => ({
  apiVersion: 'tensor-fusion.ai/v1',
  kind: 'TensorFusionWorkload',
  metadata: { name, ...meta },
  ...(spec ? { spec } : {}),
});

describeControlPlane('the API-server double answers as the real kube-apiserver', {}, (cp) => {
  let api: ApiServerDouble;
  const targets: Target[] = [];

  beforeAll(async () => {
    await cp().kubectlOk(['apply', '--server-side', '-f', path.resolve(__dirname, '../../crds')]);
    await cp().kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
    api = await startApiServer({ resources: [CONFIGMAPS] });
    targets.push(
      {
        name: 'real',
        c: cp().cluster(),
        compactAndRestart: async () => {
          await cp().compactEtcd();
          await cp().restartApiServer();
        },
      },
      { name: 'double', c: clusterFor(api), compactAndRestart: () => api.restart({ compact: true }) },
    );
  }, 90_000);
  afterAll(() => api?.stop());

  /** Runs `scenario` on the real server, then on the double; each must see `expected`. */
  async function conforms(scenario: (t: Target) => Promise<Obj[]>, expected: Obj[]): Promise<void> {
    for (const t of targets) expect({ target: t.name, steps: await scenario(t) }).toEqual({ target: t.name, steps: expected });
  }

  test('size limits: 413 over 3 MiB, 422 for ConfigMap data and annotations, 500 from etcd and its client', async () => {
    const pool = (name: string, blob: number) => {
      const p = poolObj(name, 'a') as Obj;
      p.spec.componentConfig = { worker: { podTemplate: { blob: 'x'.repeat(blob) } } };
      return p;
    };
    // The size in the gRPC message is of the encoded etcd request, which the double only estimates.
    const grpcSize = (s: Obj) => ({ ...s, message: s.message.replace(/\(\d+ vs\. /, '(N vs. ') });
    await conforms(
      async (t) => [
        seen('data of exactly 1 MiB (keys do not count)', await call(t, 'POST', CM, cm('size-ok', { data: { a: 'x'.repeat(MiB) } }))),
        seen('data over 1 MiB', await call(t, 'POST', CM, cm('size-data', { data: { a: 'x'.repeat(600_000), b: 'y'.repeat(600_000) } }))),
        seen(
          'binaryData over 1 MiB',
          await call(t, 'POST', CM, cm('size-binary', { binaryData: { a: Buffer.alloc(MiB + 1).toString('base64') } })),
        ),
        seen('body over 3 MiB', await call(t, 'POST', CM, cm('size-body', { data: { a: 'x'.repeat(3 * MiB + 1) } }))),
        seen(
          'annotations over 256 KiB',
          await call(t, 'POST', POOLS, {
            ...poolObj('size-annotations', 'a'),
            metadata: { name: 'size-annotations', annotations: { a: 'x'.repeat(256 * 1024 + 1) } },
          }),
        ),
        seen('a 1.4 MiB custom resource', await call(t, 'POST', POOLS, pool('size-1400k', 1.4 * MiB))),
        seen('a 1.6 MiB custom resource', await call(t, 'POST', POOLS, pool('size-1600k', 1.6 * MiB))),
        seen('a 1.6 MiB Lease', await call(t, 'POST', LEASES, lease('size-1600k', { holderIdentity: 'z'.repeat(1.6 * MiB) }))),
        grpcSize(seen('a 2.1 MiB custom resource', await call(t, 'POST', POOLS, pool('size-2100k', 2.1 * MiB)))),
      ],
      [
        { step: 'data of exactly 1 MiB (keys do not count)', code: 201 },
        {
          step: 'data over 1 MiB',
          code: 422,
          reason: 'Invalid',
          message: 'ConfigMap "size-data" is invalid: []: Too long: may not be more than 1048576 bytes',
        },
        {
          step: 'binaryData over 1 MiB',
          code: 422,
          reason: 'Invalid',
          message: 'ConfigMap "size-binary" is invalid: []: Too long: may not be more than 1048576 bytes',
        },
        { step: 'body over 3 MiB', code: 413, reason: 'RequestEntityTooLarge', message: 'Request entity too large: limit is 3145728' },
        {
          step: 'annotations over 256 KiB',
          code: 422,
          reason: 'Invalid',
          message:
            'GPUPool.tensor-fusion.ai "size-annotations" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes',
        },
        { step: 'a 1.4 MiB custom resource', code: 201 },
        { step: 'a 1.6 MiB custom resource', code: 500, reason: undefined, message: 'etcdserver: request is too large' },
        { step: 'a 1.6 MiB Lease', code: 500, reason: undefined, message: 'etcdserver: request is too large' },
        {
          step: 'a 2.1 MiB custom resource',
          code: 500,
          reason: undefined,
          message: 'rpc error: code = ResourceExhausted desc = trying to send message larger than max (N vs. 2097152)',
        },
      ],
    );
  }, 120_000);

  test('pod deletion is graceful for bound pods: marked, shortened only, removed by a grace-0 delete', async () => {
    const grace = (b: Obj) => ({ grace: b.metadata.deletionGracePeriodSeconds, generation: b.metadata.generation });
    await conforms(
      async (t) => {
        const w = await record(t, RESOURCES.pods, 'conformance=deletion', (o) => `grace=${o.metadata.deletionGracePeriodSeconds}`);
        const steps: Obj[] = [];
        const step = async (name: string, a: Promise<Answer>, pick: (b: Obj) => Obj = grace) => {
          steps.push(seen(name, await a, pick));
        };
        const at = (Date.now() + 30_000) / 1000;
        await step('create a bound pod', call(t, 'POST', PODS, pod('del-bound', { nodeName: 'node-a' })), () => ({}));
        const first = await call(t, 'DELETE', `${PODS}/del-bound`);
        steps.push(
          seen('delete it', first, (b) => ({
            ...grace(b),
            deletionTimestampIn30s: Math.abs(Date.parse(b.metadata.deletionTimestamp) / 1000 - at) <= 3,
          })),
        );
        await step('delete again: unchanged', call(t, 'DELETE', `${PODS}/del-bound`), (b) => ({
          ...grace(b),
          sameRv: b.metadata.resourceVersion === first.body.metadata.resourceVersion,
        }));
        await step('delete with a shorter grace', call(t, 'DELETE', `${PODS}/del-bound`, undefined, undefined, { gracePeriodSeconds: 10 }));
        await step(
          'delete with a longer grace: unchanged',
          call(t, 'DELETE', `${PODS}/del-bound`, undefined, undefined, { gracePeriodSeconds: 20 }),
        );
        await step('still there', call(t, 'GET', `${PODS}/del-bound`));
        await step(
          'the kubelet deletes it with grace 0',
          call(t, 'DELETE', `${PODS}/del-bound`, undefined, undefined, { gracePeriodSeconds: 0 }),
        );
        await step('gone', call(t, 'GET', `${PODS}/del-bound`));
        await step('create an unbound pod', call(t, 'POST', PODS, pod('del-unbound')), () => ({}));
        await step('delete it: at once', call(t, 'DELETE', `${PODS}/del-unbound`));
        await step('unbound gone', call(t, 'GET', `${PODS}/del-unbound`));
        await step(
          'create a bound pod with terminationGracePeriodSeconds 7',
          call(t, 'POST', PODS, pod('del-seven', { nodeName: 'node-a', terminationGracePeriodSeconds: 7 })),
          () => ({}),
        );
        await step('delete it: grace 7', call(t, 'DELETE', `${PODS}/del-seven`));
        await step('create a bound pod that will succeed', call(t, 'POST', PODS, pod('del-done', { nodeName: 'node-a' })), () => ({}));
        await step('it succeeded', call(t, 'PATCH', `${PODS}/del-done/status`, { status: { phase: 'Succeeded' } }, MERGE), (b) => ({
          phase: b.status.phase,
        }));
        await step('delete the finished pod: at once', call(t, 'DELETE', `${PODS}/del-done`));
        await step(
          'create a bound pod with a finalizer',
          call(t, 'POST', PODS, pod('del-held', { nodeName: 'node-a' }, { finalizers: ['example.com/hold'] })),
          () => ({}),
        );
        await step('delete it with grace 0: held', call(t, 'DELETE', `${PODS}/del-held`, undefined, undefined, { gracePeriodSeconds: 0 }));
        await step('drop the finalizer', call(t, 'PATCH', `${PODS}/del-held`, { metadata: { finalizers: null } }, MERGE), () => ({}));
        await step('held pod gone', call(t, 'GET', `${PODS}/del-held`));
        await step(
          'create a bound pod for a negative grace',
          call(t, 'POST', PODS, pod('del-negative', { nodeName: 'node-a' })),
          () => ({}),
        );
        await step(
          'delete it with grace -1: 1 s',
          call(t, 'DELETE', `${PODS}/del-negative`, undefined, undefined, { gracePeriodSeconds: -1 }),
        );
        steps.push({ step: 'watch', events: await w.stop('MODIFIED del-negative grace=1') });
        return steps;
      },
      [
        { step: 'create a bound pod', code: 201 },
        { step: 'delete it', code: 200, grace: 30, generation: 2, deletionTimestampIn30s: true },
        { step: 'delete again: unchanged', code: 200, grace: 30, generation: 2, sameRv: true },
        { step: 'delete with a shorter grace', code: 200, grace: 10, generation: 2 },
        { step: 'delete with a longer grace: unchanged', code: 200, grace: 10, generation: 2 },
        { step: 'still there', code: 200, grace: 10, generation: 2 },
        { step: 'the kubelet deletes it with grace 0', code: 200, grace: 0, generation: 2 },
        { step: 'gone', code: 404, reason: 'NotFound', message: 'pods "del-bound" not found' },
        { step: 'create an unbound pod', code: 201 },
        { step: 'delete it: at once', code: 200, grace: 0, generation: 2 },
        { step: 'unbound gone', code: 404, reason: 'NotFound', message: 'pods "del-unbound" not found' },
        { step: 'create a bound pod with terminationGracePeriodSeconds 7', code: 201 },
        { step: 'delete it: grace 7', code: 200, grace: 7, generation: 2 },
        { step: 'create a bound pod that will succeed', code: 201 },
        { step: 'it succeeded', code: 200, phase: 'Succeeded' },
        { step: 'delete the finished pod: at once', code: 200, grace: 0, generation: 2 },
        { step: 'create a bound pod with a finalizer', code: 201 },
        { step: 'delete it with grace 0: held', code: 200, grace: 0, generation: 2 },
        { step: 'drop the finalizer', code: 200 },
        { step: 'held pod gone', code: 404, reason: 'NotFound', message: 'pods "del-held" not found' },
        { step: 'create a bound pod for a negative grace', code: 201 },
        { step: 'delete it with grace -1: 1 s', code: 200, grace: 1, generation: 2 },
        {
          step: 'watch',
          events: [
            'ADDED del-bound grace=undefined',
            'MODIFIED del-bound grace=30',
            'MODIFIED del-bound grace=10',
            'MODIFIED del-bound grace=0',
            'DELETED del-bound grace=0',
            'ADDED del-unbound grace=undefined',
            'MODIFIED del-unbound grace=0',
            'DELETED del-unbound grace=0',
            'ADDED del-seven grace=undefined',
            'MODIFIED del-seven grace=7',
            'ADDED del-done grace=undefined',
            'MODIFIED del-done grace=undefined',
            'MODIFIED del-done grace=0',
            'DELETED del-done grace=0',
            'ADDED del-held grace=undefined',
            'MODIFIED del-held grace=0',
            'DELETED del-held grace=0',
            'ADDED del-negative grace=undefined',
            'MODIFIED del-negative grace=1',
          ],
        },
      ],
    );
  }, 120_000);

  /** What an apply step shows: the fields our code reads and who owns what (time/apiVersion aside). */
  const owned = (b: Obj) => ({
    labels: b.metadata.labels,
    owners: b.metadata.ownerReferences?.map((o: Obj) => o.uid),
    finalizers: b.metadata.finalizers,
    spec: b.spec,
    status: b.status,
    managed: (b.metadata.managedFields ?? [])
      .map((m: Obj) => ({ manager: m.manager, operation: m.operation, subresource: m.subresource, fields: m.fieldsV1 }))
      .sort((x: Obj, y: Obj) =>
        JSON.stringify([x.manager, x.operation, x.subresource ?? '']).localeCompare(
          JSON.stringify([y.manager, y.operation, y.subresource ?? '']),
        ),
      ),
  });
  const byApply = (manager: string, force = false) => ({ fieldManager: manager, ...(force ? { force: true } : {}) });
  const conflictCauses = (b: Obj) => b.details?.causes;

  test('server-side apply: field ownership, conflicts in the real wording, force, removal of dropped fields', async () => {
    await conforms(async (t) => {
      const steps: Obj[] = [];
      const step = async (name: string, a: Promise<Answer>, pick: (b: Obj) => Obj = owned) => {
        const r = await a;
        steps.push({ ...seen(name, r, pick), ...(r.status === 409 ? { causes: conflictCauses(r.body) } : {}) });
      };
      const w = `${TFW}/ssa-w`;
      await step('a applies', call(t, 'PATCH', w, tfw('ssa-w', { replicas: 1, qos: 'low' }, { labels: { x: '1' } }), APPLY, byApply('a')));
      await step('b applies a field a owns', call(t, 'PATCH', w, tfw('ssa-w', { replicas: 2 }), APPLY, byApply('b')));
      await step(
        'b applies three fields a owns',
        call(t, 'PATCH', w, tfw('ssa-w', { replicas: 2, qos: 'high' }, { labels: { x: '2' } }), APPLY, byApply('b')),
      );
      await step('b forces', call(t, 'PATCH', w, tfw('ssa-w', { replicas: 2 }), APPLY, byApply('b', true)));
      await step(
        'a applies its old configuration',
        call(t, 'PATCH', w, tfw('ssa-w', { replicas: 1, qos: 'low' }, { labels: { x: '1' } }), APPLY, byApply('a')),
      );
      await step(
        'a leaves replicas out: b keeps it',
        call(t, 'PATCH', w, tfw('ssa-w', { qos: 'low' }, { labels: { x: '1' } }), APPLY, byApply('a')),
      );
      await step('c merge-patches gpuCount', call(t, 'PATCH', w, { spec: { gpuCount: 2 } }, MERGE, { fieldManager: 'c' }));
      await step(
        'a applies gpuCount',
        call(t, 'PATCH', w, tfw('ssa-w', { qos: 'low', gpuCount: 3 }, { labels: { x: '1' } }), APPLY, byApply('a')),
      );
      await step('b applies the same qos: shared', call(t, 'PATCH', w, tfw('ssa-w', { replicas: 2, qos: 'low' }), APPLY, byApply('b')));
      await step('a leaves qos and its label out', call(t, 'PATCH', w, tfw('ssa-w', {}), APPLY, byApply('a')));
      await step('b leaves qos out: removed', call(t, 'PATCH', w, tfw('ssa-w', { replicas: 2 }), APPLY, byApply('b')));
      await step('apply without fieldManager', call(t, 'PATCH', w, tfw('ssa-w', { replicas: 2 }), APPLY), () => ({}));
      await step(
        'apply with a stale resourceVersion',
        call(t, 'PATCH', w, tfw('ssa-w', { replicas: 2 }, { resourceVersion: '1' }), APPLY, byApply('b')),
      );

      const res = { requests: { tflops: '1', vram: '1Gi' }, limits: { tflops: '1', vram: '1Gi' } };
      const affinity = (key: string) => ({
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'Exists' }] }] },
      });
      const v = `${TFW}/ssa-v`;
      await step(
        'e applies nested maps and a list',
        call(t, 'PATCH', v, tfw('ssa-v', { resources: res, nodeAffinity: affinity('a') }), APPLY, byApply('e')),
      );
      await step(
        'f applies another list: lists are atomic',
        call(t, 'PATCH', v, tfw('ssa-v', { nodeAffinity: affinity('b') }), APPLY, byApply('f')),
      );
      await step(
        'e leaves resources out: the emptied maps go too',
        call(t, 'PATCH', v, tfw('ssa-v', { nodeAffinity: affinity('a') }), APPLY, byApply('e')),
      );

      const owner = (uid: string) => ({ apiVersion: 'tensor-fusion.ai/v1', kind: 'GPUPool', name: `pool-${uid}`, uid });
      const o = `${TFW}/ssa-o`;
      await step(
        'g applies an owner and a finalizer',
        call(
          t,
          'PATCH',
          o,
          tfw('ssa-o', { replicas: 1 }, { ownerReferences: [owner('u1')], finalizers: ['example.com/a'] }),
          APPLY,
          byApply('g'),
        ),
      );
      await step(
        'h adds its own: owners are keyed by uid',
        call(t, 'PATCH', o, tfw('ssa-o', {}, { ownerReferences: [owner('u2')], finalizers: ['example.com/b'] }), APPLY, byApply('h')),
      );
      await step(
        "h changes g's owner",
        call(t, 'PATCH', o, tfw('ssa-o', {}, { ownerReferences: [{ ...owner('u1'), name: 'other' }] }), APPLY, byApply('h')),
      );
      await step(
        'g swaps its owner and drops its finalizer',
        call(t, 'PATCH', o, tfw('ssa-o', { replicas: 1 }, { ownerReferences: [owner('u3')], finalizers: [] }), APPLY, byApply('g')),
      );
      const cur = (await call(t, 'GET', o)).body;
      await step(
        'd updates replicas and drops the finalizers',
        call(t, 'PUT', o, { ...cur, metadata: { ...cur.metadata, finalizers: undefined }, spec: { ...cur.spec, replicas: 5 } }, undefined, {
          fieldManager: 'd',
        }),
      );
      await step(
        'g applies replicas again',
        call(t, 'PATCH', o, tfw('ssa-o', { replicas: 1 }, { ownerReferences: [owner('u3')] }), APPLY, byApply('g')),
      );
      const status = (phase: string) => ({ ...tfw('ssa-o'), status: { phase, workerCount: 1 } });
      await step('g applies status', call(t, 'PATCH', `${o}/status`, status('Running'), APPLY, byApply('g')));
      await step('d merge-patches status', call(t, 'PATCH', `${o}/status`, { status: { phase: 'Failed' } }, MERGE, { fieldManager: 'd' }));
      await step('g applies status again', call(t, 'PATCH', `${o}/status`, status('Running'), APPLY, byApply('g')));

      const p = `${TFW}/ssa-p`;
      await step(
        'd creates with POST',
        call(t, 'POST', TFW, tfw('ssa-p', { replicas: 1, resources: res }, { labels: { a: 'b' } }), undefined, { fieldManager: 'd' }),
      );
      await step('g applies over it', call(t, 'PATCH', p, tfw('ssa-p', { replicas: 2 }), APPLY, byApply('g')));
      await step(
        'g forces, with resources at the same values',
        call(t, 'PATCH', p, tfw('ssa-p', { replicas: 2, resources: res }), APPLY, byApply('g', true)),
      );
      await step(
        'd removes resources with a merge patch',
        call(t, 'PATCH', p, { spec: { resources: null } }, MERGE, { fieldManager: 'd' }),
      );
      await call(t, 'PATCH', o, { metadata: { finalizers: null } }, MERGE);
      return steps;
    }, SSA_EXPECTED);
  }, 120_000);

  test('Leases: int32/string/MicroTime decoding and validation with the real messages', async () => {
    await conforms(async (t) => {
      const steps: Obj[] = [];
      const step = async (name: string, a: Promise<Answer>) => {
        steps.push(seen(name, await a, (b) => ({ spec: b.spec })));
      };
      const post = (name: string, spec: Obj) => call(t, 'POST', LEASES, lease(name, spec));
      await step('leaseDurationSeconds 0', post('lease-a', { leaseDurationSeconds: 0 }));
      await step('leaseTransitions -1', post('lease-b', { leaseTransitions: -1 }));
      await step('both', post('lease-c', { leaseDurationSeconds: -5, leaseTransitions: -1 }));
      await step('any holderIdentity', post('lease-d', { holderIdentity: 'a b/c_D!', leaseDurationSeconds: 15 }));
      await step('renewTime in milliseconds (Date#toISOString)', post('lease-e', { renewTime: '2026-01-01T00:00:00.123Z' }));
      await step('renewTime in seconds', post('lease-e', { renewTime: '2026-01-01T00:00:00Z' }));
      await step('renewTime in nanoseconds', post('lease-e', { renewTime: '2026-01-01T00:00:00.123456789Z' }));
      await step('renewTime not a time', post('lease-e', { renewTime: 'yesterday' }));
      await step('renewTime with extra text', post('lease-e', { renewTime: '2026-01-01T00:00:00.123456Zabc' }));
      await step('renewTime in month 13', post('lease-e', { renewTime: '2026-13-01T00:00:00.123456Z' }));
      await step('renewTime with a short month', post('lease-e', { renewTime: '2026-1-01T00:00:00.123456Z' }));
      await step('renewTime a number', post('lease-e', { renewTime: 5 }));
      await step('holderIdentity a number, then a string duration', post('lease-e', { holderIdentity: 5, leaseDurationSeconds: 'x' }));
      await step('leaseDurationSeconds 1.5', post('lease-e', { leaseDurationSeconds: 1.5 }));
      await step('leaseDurationSeconds over int32', post('lease-e', { leaseDurationSeconds: 3_000_000_000 }));
      await step('leaseDurationSeconds true', post('lease-e', { leaseDurationSeconds: true }));
      await step(
        'MicroTimes with an offset come back in UTC',
        post('lease-f', { renewTime: '2026-01-01T00:00:00.123456Z', acquireTime: '2026-01-01T01:00:00.000000+01:00' }),
      );
      await step('a name that is no DNS subdomain', post('Lease_F', {}));
      const cur = (await call(t, 'GET', `${LEASES}/lease-d`)).body;
      await step(
        'update to leaseDurationSeconds 0',
        call(t, 'PUT', `${LEASES}/lease-d`, { ...cur, spec: { ...cur.spec, leaseDurationSeconds: 0 } }),
      );
      await step(
        'merge-patch to leaseDurationSeconds 0',
        call(t, 'PATCH', `${LEASES}/lease-d`, { spec: { leaseDurationSeconds: 0 } }, MERGE),
      );
      await step(
        'update without resourceVersion',
        call(t, 'PUT', `${LEASES}/lease-d`, { ...cur, metadata: { name: 'lease-d' }, spec: { holderIdentity: 'z' } }),
      );
      await step(
        'apply a bad renewTime',
        call(t, 'PATCH', `${LEASES}/lease-d`, lease('lease-d', { renewTime: 'yesterday' }), APPLY, { fieldManager: 'x', force: true }),
      );
      // The real message quotes the whole patched object as Go encodes it; only its tail is compared.
      const bad = await call(t, 'PATCH', `${LEASES}/lease-d`, { spec: { renewTime: '2026-01-01T00:00:00.123Z' } }, MERGE);
      const m = seen('merge-patch a renewTime in milliseconds', bad);
      steps.push({ ...m, message: m.message.startsWith(' "" is invalid: patch: Invalid value: "{') && m.message.replace(/^.*}": /s, '') });
      return steps;
    }, LEASES_EXPECTED);
  }, 60_000);

  test('messages of NotFound, AlreadyExists, Conflict, Invalid, and the bodies of DELETE', async () => {
    await conforms(async (t) => {
      const steps: Obj[] = [];
      const step = async (name: string, a: Promise<Answer>) => {
        const r = await a;
        steps.push(
          seen(name, r, (b) =>
            b.kind === 'Status'
              ? { status: b.status, details: { ...b.details, uid: typeof b.details?.uid } }
              : { kind: b.kind, deleting: !!b.metadata?.deletionTimestamp },
          ),
        );
      };
      await step('a ConfigMap', call(t, 'POST', CM, cm('basic-cm')));
      await step('again', call(t, 'POST', CM, cm('basic-cm')));
      await step(
        'stale update',
        call(t, 'PUT', `${CM}/basic-cm`, cm('basic-cm', { metadata: { name: 'basic-cm', resourceVersion: '5' } })),
      );
      await step('unconditional update (allowed for ConfigMaps)', call(t, 'PUT', `${CM}/basic-cm`, cm('basic-cm', { data: { a: 'b' } })));
      await step('no name', call(t, 'POST', CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} }));
      await step('a bad name', call(t, 'POST', CM, cm('Basic_CM')));
      await step(
        'a failing JSON-patch test',
        call(t, 'PATCH', `${CM}/basic-cm`, [{ op: 'test', path: '/metadata/resourceVersion', value: '0' }], 'application/json-patch+json'),
      );
      await step('delete it', call(t, 'DELETE', `${CM}/basic-cm`));
      await step('get it', call(t, 'GET', `${CM}/basic-cm`));
      await step(
        'a ConfigMap with a finalizer',
        call(t, 'POST', CM, cm('basic-held', { metadata: { name: 'basic-held', finalizers: ['example.com/hold'] } })),
      );
      await step('delete it: marked', call(t, 'DELETE', `${CM}/basic-held`));
      await call(t, 'PATCH', `${CM}/basic-held`, { metadata: { finalizers: null } }, MERGE);
      await step(
        'a GPU',
        call(t, 'POST', '/apis/tensor-fusion.ai/v1/gpus', {
          apiVersion: 'tensor-fusion.ai/v1',
          kind: 'GPU',
          metadata: { name: 'basic-gpu' },
        }),
      );
      await step(
        'the GPU again',
        call(t, 'POST', '/apis/tensor-fusion.ai/v1/gpus', {
          apiVersion: 'tensor-fusion.ai/v1',
          kind: 'GPU',
          metadata: { name: 'basic-gpu' },
        }),
      );
      await step(
        'a GPU with a bad name',
        call(t, 'POST', '/apis/tensor-fusion.ai/v1/gpus', {
          apiVersion: 'tensor-fusion.ai/v1',
          kind: 'GPU',
          metadata: { name: 'Basic_GPU' },
        }),
      );
      const gpu = (await call(t, 'GET', '/apis/tensor-fusion.ai/v1/gpus/basic-gpu')).body;
      await step(
        'update the GPU without resourceVersion',
        call(t, 'PUT', '/apis/tensor-fusion.ai/v1/gpus/basic-gpu', { ...gpu, metadata: { name: 'basic-gpu' } }),
      );
      await step('delete the GPU', call(t, 'DELETE', '/apis/tensor-fusion.ai/v1/gpus/basic-gpu'));
      await step('get the GPU', call(t, 'GET', '/apis/tensor-fusion.ai/v1/gpus/basic-gpu'));
      await step('a Lease', call(t, 'POST', LEASES, lease('basic-lease', {})));
      await step('delete the Lease', call(t, 'DELETE', `${LEASES}/basic-lease`));
      await step('get the Lease', call(t, 'GET', `${LEASES}/basic-lease`));
      return steps;
    }, BASICS_EXPECTED);
  }, 60_000);

  test('bookmarks: none while nothing changed, then one or two in the last ~3 s before timeoutSeconds ends', async () => {
    const watch = async (t: Target, change: boolean) => {
      const list = await t.c.list(CONFIGMAPS, { namespace: 'default' });
      const started = Date.now();
      const seenEvents: string[] = [];
      const bookmarks: number[] = [];
      const done = t.c.watch(
        CONFIGMAPS,
        { namespace: 'default', resourceVersion: list.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 5 },
        (e) => {
          if (e.type === 'BOOKMARK') bookmarks.push(Date.now() - started);
          else seenEvents.push(e.type);
        },
      );
      if (change) await call(t, 'POST', CM, cm(`bookmark-${Date.now()}`));
      await done;
      // Loose bounds: busy cores delay timers, never advance them.
      return {
        events: seenEvents,
        bookmarks: bookmarks.length > 0,
        notInFirst1500ms: bookmarks.every((ms) => ms >= 1_500),
        endedAfter4s: Date.now() - started >= 4_000,
      };
    };
    await conforms(
      async (t) => [await watch(t, false), await watch(t, true)],
      [
        { events: [], bookmarks: false, notInFirst1500ms: true, endedAfter4s: true },
        { events: ['ADDED'], bookmarks: true, notInFirst1500ms: true, endedAfter4s: true },
      ],
    );
  }, 60_000);

  test('list pages are a snapshot at the first page; the continue token is refused after compaction', async () => {
    const page = (b: Obj) => ({
      items: b.items?.map((i: Obj) => `${i.metadata.name}:${i.data?.v ?? '-'}`),
      more: !!b.metadata?.continue,
      remaining: b.metadata?.remainingItemCount,
    });
    await conforms(async (t) => {
      const steps: Obj[] = [];
      for (const n of ['pg-a', 'pg-b', 'pg-c', 'pg-d', 'pg-e'])
        await call(t, 'POST', CM, cm(n, { metadata: { name: n, labels: { paged: 'yes' } }, data: { v: '1' } }));
      const q = { limit: 2, labelSelector: 'paged=yes' };
      const first = await call(t, 'GET', CM, undefined, undefined, q);
      steps.push(seen('page 1', first, page));
      await call(t, 'DELETE', `${CM}/pg-c`);
      await call(t, 'PATCH', `${CM}/pg-d`, { data: { v: '2' } }, MERGE);
      await call(t, 'POST', CM, cm('pg-bb', { metadata: { name: 'pg-bb', labels: { paged: 'yes' } } }));
      const second = await call(t, 'GET', CM, undefined, undefined, { ...q, continue: first.body.metadata.continue });
      steps.push(
        seen('page 2: as at page 1', second, (b) => ({
          ...page(b),
          sameRv: b.metadata.resourceVersion === first.body.metadata.resourceVersion,
        })),
      );
      steps.push(seen('page 3', await call(t, 'GET', CM, undefined, undefined, { ...q, continue: second.body.metadata.continue }), page));
      steps.push(
        seen(
          'continue with a resourceVersion',
          await call(t, 'GET', CM, undefined, undefined, { ...q, continue: first.body.metadata.continue, resourceVersion: '1' }),
        ),
      );
      steps.push(
        seen('no selector: remainingItemCount', await call(t, 'GET', CM, undefined, undefined, { limit: 2, fieldSelector: '' }), (b) => ({
          remaining: typeof b.metadata.remainingItemCount,
        })),
      );
      const fresh = await call(t, 'GET', CM, undefined, undefined, q);
      await call(t, 'PATCH', `${CM}/pg-e`, { data: { v: '3' } }, MERGE);
      await t.compactAndRestart();
      await waitFor(
        'the API server after its restart',
        async () => (await call(t, 'GET', CM, undefined, undefined, { limit: 1 })).status === 200,
        60_000,
        200,
      );
      const expired = await call(t, 'GET', CM, undefined, undefined, { ...q, continue: fresh.body.metadata.continue });
      steps.push({ ...seen('after compaction', expired), inconsistentToken: typeof expired.body.metadata?.continue });
      steps.push(
        seen(
          'the inconsistent continuation: the current state',
          await call(t, 'GET', CM, undefined, undefined, { ...q, continue: expired.body.metadata.continue }),
          page,
        ),
      );
      return steps;
    }, PAGING_EXPECTED);
  }, 180_000);
});
/** What the real server answered to the server-side apply scenario, step by step. */
const SSA_EXPECTED: Obj[] = [
  {
    step: 'a applies',
    code: 201,
    labels: { x: '1' },
    spec: { qos: 'low', replicas: 1 },
    managed: [
      {
        manager: 'a',
        operation: 'Apply',
        fields: { 'f:metadata': { 'f:labels': { 'f:x': {} } }, 'f:spec': { 'f:qos': {}, 'f:replicas': {} } },
      },
    ],
  },
  {
    step: 'b applies a field a owns',
    code: 409,
    reason: 'Conflict',
    message: 'Apply failed with 1 conflict: conflict with "a": .spec.replicas',
    causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "a"', field: '.spec.replicas' }],
  },
  {
    step: 'b applies three fields a owns',
    code: 409,
    reason: 'Conflict',
    message: 'Apply failed with 3 conflicts: conflicts with "a":\n- .metadata.labels.x\n- .spec.qos\n- .spec.replicas',
    causes: [
      { reason: 'FieldManagerConflict', message: 'conflict with "a"', field: '.metadata.labels.x' },
      { reason: 'FieldManagerConflict', message: 'conflict with "a"', field: '.spec.qos' },
      { reason: 'FieldManagerConflict', message: 'conflict with "a"', field: '.spec.replicas' },
    ],
  },
  {
    step: 'b forces',
    code: 200,
    labels: { x: '1' },
    spec: { qos: 'low', replicas: 2 },
    managed: [
      { manager: 'a', operation: 'Apply', fields: { 'f:metadata': { 'f:labels': { 'f:x': {} } }, 'f:spec': { 'f:qos': {} } } },
      { manager: 'b', operation: 'Apply', fields: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    step: 'a applies its old configuration',
    code: 409,
    reason: 'Conflict',
    message: 'Apply failed with 1 conflict: conflict with "b": .spec.replicas',
    causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "b"', field: '.spec.replicas' }],
  },
  {
    step: 'a leaves replicas out: b keeps it',
    code: 200,
    labels: { x: '1' },
    spec: { qos: 'low', replicas: 2 },
    managed: [
      { manager: 'a', operation: 'Apply', fields: { 'f:metadata': { 'f:labels': { 'f:x': {} } }, 'f:spec': { 'f:qos': {} } } },
      { manager: 'b', operation: 'Apply', fields: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
  {
    step: 'c merge-patches gpuCount',
    code: 200,
    labels: { x: '1' },
    spec: { gpuCount: 2, qos: 'low', replicas: 2 },
    managed: [
      { manager: 'a', operation: 'Apply', fields: { 'f:metadata': { 'f:labels': { 'f:x': {} } }, 'f:spec': { 'f:qos': {} } } },
      { manager: 'b', operation: 'Apply', fields: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'c', operation: 'Update', fields: { 'f:spec': { 'f:gpuCount': {} } } },
    ],
  },
  {
    step: 'a applies gpuCount',
    code: 409,
    reason: 'Conflict',
    message: 'Apply failed with 1 conflict: conflict with "c" using tensor-fusion.ai/v1: .spec.gpuCount',
    causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "c" using tensor-fusion.ai/v1', field: '.spec.gpuCount' }],
  },
  {
    step: 'b applies the same qos: shared',
    code: 200,
    labels: { x: '1' },
    spec: { gpuCount: 2, qos: 'low', replicas: 2 },
    managed: [
      { manager: 'a', operation: 'Apply', fields: { 'f:metadata': { 'f:labels': { 'f:x': {} } }, 'f:spec': { 'f:qos': {} } } },
      { manager: 'b', operation: 'Apply', fields: { 'f:spec': { 'f:qos': {}, 'f:replicas': {} } } },
      { manager: 'c', operation: 'Update', fields: { 'f:spec': { 'f:gpuCount': {} } } },
    ],
  },
  {
    step: 'a leaves qos and its label out',
    code: 200,
    spec: { gpuCount: 2, qos: 'low', replicas: 2 },
    managed: [
      { manager: 'a', operation: 'Apply', fields: { 'f:spec': {} } },
      { manager: 'b', operation: 'Apply', fields: { 'f:spec': { 'f:qos': {}, 'f:replicas': {} } } },
      { manager: 'c', operation: 'Update', fields: { 'f:spec': { 'f:gpuCount': {} } } },
    ],
  },
  {
    step: 'b leaves qos out: removed',
    code: 200,
    spec: { gpuCount: 2, replicas: 2 },
    managed: [
      { manager: 'a', operation: 'Apply', fields: { 'f:spec': {} } },
      { manager: 'b', operation: 'Apply', fields: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'c', operation: 'Update', fields: { 'f:spec': { 'f:gpuCount': {} } } },
    ],
  },
  {
    step: 'apply without fieldManager',
    code: 422,
    reason: 'Invalid',
    message: 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
  },
  {
    step: 'apply with a stale resourceVersion',
    code: 409,
    reason: 'Conflict',
    message:
      'Operation cannot be fulfilled on tensorfusionworkloads.tensor-fusion.ai "ssa-w": the object has been modified; please apply your changes to the latest version and try again',
  },
  {
    step: 'e applies nested maps and a list',
    code: 201,
    spec: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'a', operator: 'Exists' }] }] },
      },
      resources: { limits: { tflops: '1', vram: '1Gi' }, requests: { tflops: '1', vram: '1Gi' } },
    },
    managed: [
      {
        manager: 'e',
        operation: 'Apply',
        fields: {
          'f:spec': {
            'f:nodeAffinity': { 'f:requiredDuringSchedulingIgnoredDuringExecution': { 'f:nodeSelectorTerms': {} } },
            'f:resources': { 'f:limits': { 'f:tflops': {}, 'f:vram': {} }, 'f:requests': { 'f:tflops': {}, 'f:vram': {} } },
          },
        },
      },
    ],
  },
  {
    step: 'f applies another list: lists are atomic',
    code: 409,
    reason: 'Conflict',
    message:
      'Apply failed with 1 conflict: conflict with "e": .spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms',
    causes: [
      {
        reason: 'FieldManagerConflict',
        message: 'conflict with "e"',
        field: '.spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms',
      },
    ],
  },
  {
    step: 'e leaves resources out: the emptied maps go too',
    code: 200,
    spec: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'a', operator: 'Exists' }] }] },
      },
    },
    managed: [
      {
        manager: 'e',
        operation: 'Apply',
        fields: { 'f:spec': { 'f:nodeAffinity': { 'f:requiredDuringSchedulingIgnoredDuringExecution': { 'f:nodeSelectorTerms': {} } } } },
      },
    ],
  },
  {
    step: 'g applies an owner and a finalizer',
    code: 201,
    owners: ['u1'],
    finalizers: ['example.com/a'],
    spec: { replicas: 1 },
    managed: [
      {
        manager: 'g',
        operation: 'Apply',
        fields: {
          'f:metadata': { 'f:finalizers': { 'v:"example.com/a"': {} }, 'f:ownerReferences': { 'k:{"uid":"u1"}': {} } },
          'f:spec': { 'f:replicas': {} },
        },
      },
    ],
  },
  {
    step: 'h adds its own: owners are keyed by uid',
    code: 200,
    owners: ['u1', 'u2'],
    finalizers: ['example.com/a', 'example.com/b'],
    spec: { replicas: 1 },
    managed: [
      {
        manager: 'g',
        operation: 'Apply',
        fields: {
          'f:metadata': { 'f:finalizers': { 'v:"example.com/a"': {} }, 'f:ownerReferences': { 'k:{"uid":"u1"}': {} } },
          'f:spec': { 'f:replicas': {} },
        },
      },
      {
        manager: 'h',
        operation: 'Apply',
        fields: {
          'f:metadata': { 'f:finalizers': { 'v:"example.com/b"': {} }, 'f:ownerReferences': { 'k:{"uid":"u2"}': {} } },
          'f:spec': {},
        },
      },
    ],
  },
  {
    step: "h changes g's owner",
    code: 409,
    reason: 'Conflict',
    message: 'Apply failed with 1 conflict: conflict with "g": .metadata.ownerReferences[uid="u1"]',
    causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "g"', field: '.metadata.ownerReferences[uid="u1"]' }],
  },
  {
    step: 'g swaps its owner and drops its finalizer',
    code: 200,
    owners: ['u2', 'u3'],
    finalizers: ['example.com/b'],
    spec: { replicas: 1 },
    managed: [
      {
        manager: 'g',
        operation: 'Apply',
        fields: { 'f:metadata': { 'f:ownerReferences': { 'k:{"uid":"u3"}': {} } }, 'f:spec': { 'f:replicas': {} } },
      },
      {
        manager: 'h',
        operation: 'Apply',
        fields: {
          'f:metadata': { 'f:finalizers': { 'v:"example.com/b"': {} }, 'f:ownerReferences': { 'k:{"uid":"u2"}': {} } },
          'f:spec': {},
        },
      },
    ],
  },
  {
    step: 'd updates replicas and drops the finalizers',
    code: 200,
    owners: ['u2', 'u3'],
    spec: { replicas: 5 },
    managed: [
      { manager: 'd', operation: 'Update', fields: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'g', operation: 'Apply', fields: { 'f:metadata': { 'f:ownerReferences': { 'k:{"uid":"u3"}': {} } } } },
      { manager: 'h', operation: 'Apply', fields: { 'f:metadata': { 'f:ownerReferences': { 'k:{"uid":"u2"}': {} } }, 'f:spec': {} } },
    ],
  },
  {
    step: 'g applies replicas again',
    code: 409,
    reason: 'Conflict',
    message: 'Apply failed with 1 conflict: conflict with "d" using tensor-fusion.ai/v1: .spec.replicas',
    causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "d" using tensor-fusion.ai/v1', field: '.spec.replicas' }],
  },
  {
    step: 'g applies status',
    code: 200,
    owners: ['u2', 'u3'],
    spec: { replicas: 5 },
    status: { phase: 'Running', workerCount: 1 },
    managed: [
      { manager: 'd', operation: 'Update', fields: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'g', operation: 'Apply', fields: { 'f:metadata': { 'f:ownerReferences': { 'k:{"uid":"u3"}': {} } } } },
      { manager: 'g', operation: 'Apply', subresource: 'status', fields: { 'f:status': { 'f:phase': {}, 'f:workerCount': {} } } },
      { manager: 'h', operation: 'Apply', fields: { 'f:metadata': { 'f:ownerReferences': { 'k:{"uid":"u2"}': {} } }, 'f:spec': {} } },
    ],
  },
  {
    step: 'd merge-patches status',
    code: 200,
    owners: ['u2', 'u3'],
    spec: { replicas: 5 },
    status: { phase: 'Failed', workerCount: 1 },
    managed: [
      { manager: 'd', operation: 'Update', fields: { 'f:spec': { 'f:replicas': {} } } },
      { manager: 'd', operation: 'Update', subresource: 'status', fields: { 'f:status': { 'f:phase': {} } } },
      { manager: 'g', operation: 'Apply', fields: { 'f:metadata': { 'f:ownerReferences': { 'k:{"uid":"u3"}': {} } } } },
      { manager: 'g', operation: 'Apply', subresource: 'status', fields: { 'f:status': { 'f:workerCount': {} } } },
      { manager: 'h', operation: 'Apply', fields: { 'f:metadata': { 'f:ownerReferences': { 'k:{"uid":"u2"}': {} } }, 'f:spec': {} } },
    ],
  },
  {
    step: 'g applies status again',
    code: 409,
    reason: 'Conflict',
    message: 'Apply failed with 1 conflict: conflict with "d" with subresource "status" using tensor-fusion.ai/v1: .status.phase',
    causes: [
      {
        reason: 'FieldManagerConflict',
        message: 'conflict with "d" with subresource "status" using tensor-fusion.ai/v1',
        field: '.status.phase',
      },
    ],
  },
  {
    step: 'd creates with POST',
    code: 201,
    labels: { a: 'b' },
    spec: { replicas: 1, resources: { limits: { tflops: '1', vram: '1Gi' }, requests: { tflops: '1', vram: '1Gi' } } },
    managed: [
      {
        manager: 'd',
        operation: 'Update',
        fields: {
          'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } },
          'f:spec': {
            '.': {},
            'f:replicas': {},
            'f:resources': {
              '.': {},
              'f:limits': { '.': {}, 'f:tflops': {}, 'f:vram': {} },
              'f:requests': { '.': {}, 'f:tflops': {}, 'f:vram': {} },
            },
          },
        },
      },
    ],
  },
  {
    step: 'g applies over it',
    code: 409,
    reason: 'Conflict',
    message: 'Apply failed with 1 conflict: conflict with "d" using tensor-fusion.ai/v1: .spec.replicas',
    causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "d" using tensor-fusion.ai/v1', field: '.spec.replicas' }],
  },
  {
    step: 'g forces, with resources at the same values',
    code: 200,
    labels: { a: 'b' },
    spec: { replicas: 2, resources: { limits: { tflops: '1', vram: '1Gi' }, requests: { tflops: '1', vram: '1Gi' } } },
    managed: [
      {
        manager: 'd',
        operation: 'Update',
        fields: {
          'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } },
          'f:spec': {
            '.': {},
            'f:resources': {
              '.': {},
              'f:limits': { '.': {}, 'f:tflops': {}, 'f:vram': {} },
              'f:requests': { '.': {}, 'f:tflops': {}, 'f:vram': {} },
            },
          },
        },
      },
      {
        manager: 'g',
        operation: 'Apply',
        fields: {
          'f:spec': {
            'f:replicas': {},
            'f:resources': { 'f:limits': { 'f:tflops': {}, 'f:vram': {} }, 'f:requests': { 'f:tflops': {}, 'f:vram': {} } },
          },
        },
      },
    ],
  },
  {
    step: 'd removes resources with a merge patch',
    code: 200,
    labels: { a: 'b' },
    spec: { replicas: 2 },
    managed: [
      { manager: 'd', operation: 'Update', fields: { 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } }, 'f:spec': {} } },
      { manager: 'g', operation: 'Apply', fields: { 'f:spec': { 'f:replicas': {} } } },
    ],
  },
];

const LEASES_EXPECTED: Obj[] = [
  {
    step: 'leaseDurationSeconds 0',
    code: 422,
    reason: 'Invalid',
    message: 'Lease.coordination.k8s.io "lease-a" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0',
  },
  {
    step: 'leaseTransitions -1',
    code: 422,
    reason: 'Invalid',
    message: 'Lease.coordination.k8s.io "lease-b" is invalid: spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0',
  },
  {
    step: 'both',
    code: 422,
    reason: 'Invalid',
    message:
      'Lease.coordination.k8s.io "lease-c" is invalid: [spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]',
  },
  { step: 'any holderIdentity', code: 201, spec: { holderIdentity: 'a b/c_D!', leaseDurationSeconds: 15 } },
  {
    step: 'renewTime in milliseconds (Date#toISOString)',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-01-01T00:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"',
  },
  {
    step: 'renewTime in seconds',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
  },
  {
    step: 'renewTime in nanoseconds',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-01-01T00:00:00.123456789Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "789Z" as "Z07:00"',
  },
  {
    step: 'renewTime not a time',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: parsing time "yesterday" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "yesterday" as "2006"',
  },
  {
    step: 'renewTime with extra text',
    code: 400,
    reason: 'BadRequest',
    message: 'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-01-01T00:00:00.123456Zabc": extra text: "abc"',
  },
  {
    step: 'renewTime in month 13',
    code: 400,
    reason: 'BadRequest',
    message: 'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-13-01T00:00:00.123456Z": month out of range',
  },
  {
    step: 'renewTime with a short month',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-1-01T00:00:00.123456Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "1-01T00:00:00.123456Z" as "01"',
  },
  {
    step: 'renewTime a number',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number into Go struct field LeaseSpec.spec.renewTime of type string',
  },
  {
    step: 'holderIdentity a number, then a string duration',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number into Go struct field LeaseSpec.spec.holderIdentity of type string',
  },
  {
    step: 'leaseDurationSeconds 1.5',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number 1.5 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32',
  },
  {
    step: 'leaseDurationSeconds over int32',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number 3000000000 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32',
  },
  {
    step: 'leaseDurationSeconds true',
    code: 400,
    reason: 'BadRequest',
    message:
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal bool into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32',
  },
  {
    step: 'MicroTimes with an offset come back in UTC',
    code: 201,
    spec: { acquireTime: '2026-01-01T00:00:00.000000Z', renewTime: '2026-01-01T00:00:00.123456Z' },
  },
  {
    step: 'a name that is no DNS subdomain',
    code: 422,
    reason: 'Invalid',
    message:
      "Lease.coordination.k8s.io \"Lease_F\" is invalid: metadata.name: Invalid value: \"Lease_F\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  },
  {
    step: 'update to leaseDurationSeconds 0',
    code: 422,
    reason: 'Invalid',
    message: 'Lease.coordination.k8s.io "lease-d" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0',
  },
  {
    step: 'merge-patch to leaseDurationSeconds 0',
    code: 422,
    reason: 'Invalid',
    message: 'Lease.coordination.k8s.io "lease-d" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0',
  },
  {
    step: 'update without resourceVersion',
    code: 422,
    reason: 'Invalid',
    message: 'leases.coordination.k8s.io "lease-d" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update',
  },
  {
    step: 'apply a bad renewTime',
    code: 500,
    message:
      'failed to convert new object (/lease-d; coordination.k8s.io/v1, Kind=Lease) to proper version: unable to convert unstructured object to coordination.k8s.io/v1, Kind=Lease: parsing time "yesterday" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "yesterday" as "2006"',
  },
  {
    step: 'merge-patch a renewTime in milliseconds',
    code: 422,
    reason: 'Invalid',
    message: 'parsing time "2026-01-01T00:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"',
  },
];

const BASICS_EXPECTED: Obj[] = [
  { step: 'a ConfigMap', code: 201, kind: 'ConfigMap', deleting: false },
  { step: 'again', code: 409, reason: 'AlreadyExists', message: 'configmaps "basic-cm" already exists' },
  {
    step: 'stale update',
    code: 409,
    reason: 'Conflict',
    message:
      'Operation cannot be fulfilled on configmaps "basic-cm": the object has been modified; please apply your changes to the latest version and try again',
  },
  { step: 'unconditional update (allowed for ConfigMaps)', code: 200, kind: 'ConfigMap', deleting: false },
  {
    step: 'no name',
    code: 422,
    reason: 'Invalid',
    message: 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
  },
  {
    step: 'a bad name',
    code: 422,
    reason: 'Invalid',
    message:
      "ConfigMap \"Basic_CM\" is invalid: metadata.name: Invalid value: \"Basic_CM\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  },
  {
    step: 'a failing JSON-patch test',
    code: 422,
    reason: 'Invalid',
    message: 'the server rejected our request due to an error in our request',
  },
  { step: 'delete it', code: 200, status: 'Success', details: { name: 'basic-cm', kind: 'configmaps', uid: 'string' } },
  { step: 'get it', code: 404, reason: 'NotFound', message: 'configmaps "basic-cm" not found' },
  { step: 'a ConfigMap with a finalizer', code: 201, kind: 'ConfigMap', deleting: false },
  { step: 'delete it: marked', code: 200, kind: 'ConfigMap', deleting: true },
  { step: 'a GPU', code: 201, kind: 'GPU', deleting: false },
  { step: 'the GPU again', code: 409, reason: 'AlreadyExists', message: 'gpus.tensor-fusion.ai "basic-gpu" already exists' },
  {
    step: 'a GPU with a bad name',
    code: 422,
    reason: 'Invalid',
    message:
      "GPU.tensor-fusion.ai \"Basic_GPU\" is invalid: metadata.name: Invalid value: \"Basic_GPU\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  },
  {
    step: 'update the GPU without resourceVersion',
    code: 422,
    reason: 'Invalid',
    message: 'gpus.tensor-fusion.ai "basic-gpu" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update',
  },
  {
    step: 'delete the GPU',
    code: 200,
    status: 'Success',
    details: { name: 'basic-gpu', group: 'tensor-fusion.ai', kind: 'gpus', uid: 'string' },
  },
  { step: 'get the GPU', code: 404, reason: 'NotFound', message: 'gpus.tensor-fusion.ai "basic-gpu" not found' },
  { step: 'a Lease', code: 201, kind: 'Lease', deleting: false },
  {
    step: 'delete the Lease',
    code: 200,
    status: 'Success',
    details: { name: 'basic-lease', group: 'coordination.k8s.io', kind: 'leases', uid: 'string' },
  },
  { step: 'get the Lease', code: 404, reason: 'NotFound', message: 'leases.coordination.k8s.io "basic-lease" not found' },
];

const PAGING_EXPECTED: Obj[] = [
  { step: 'page 1', code: 200, items: ['pg-a:1', 'pg-b:1'], more: true },
  { step: 'page 2: as at page 1', code: 200, items: ['pg-c:1', 'pg-d:1'], more: true, sameRv: true },
  { step: 'page 3', code: 200, items: ['pg-e:1'], more: false },
  {
    step: 'continue with a resourceVersion',
    code: 400,
    reason: 'BadRequest',
    message: 'specifying resource version is not allowed when using continue',
  },
  { step: 'no selector: remainingItemCount', code: 200, remaining: 'number' },
  {
    step: 'after compaction',
    code: 410,
    reason: 'Expired',
    message:
      'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
    inconsistentToken: 'string',
  },
  { step: 'the inconsistent continuation: the current state', code: 200, items: ['pg-bb:-', 'pg-d:2'], more: true },
];

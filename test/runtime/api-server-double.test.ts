/** The API-server double's semantics through the real HTTP client: the contract the other tests rely on. */
import { ApiError, WatchEvent } from '../../lib/runtime/kube/cluster';
import { RESOURCES, resourceType } from '../../lib/runtime/kube/resources';
import { ApiServerDouble, clusterFor, startApiServer } from '../support/api-server';
import { eventually, podObj, poolObj, workloadObj } from './fixtures';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/default/leases';
const PODS = '/api/v1/namespaces/default/pods';
const TFW = '/apis/tensor-fusion.ai/v1/namespaces/default/tensorfusionworkloads';
const APPLY = 'application/apply-patch+yaml';
const MiB = 1024 * 1024;
const CONFIGMAPS = resourceType('v1', 'configmaps', 'ConfigMap');

/** A raw request's status and body (the Status of an error). */
async function raw(
  c: ReturnType<typeof clusterFor>,
  method: string,
  path: string,
  body?: unknown,
  ct?: string,
  query: Record<string, string | number | boolean> = {},
) {
  const r = await c.request(method, path, query, body, ct);
  return { code: r.status, body: JSON.parse(r.body) };
}

/** Watch events of pods as `TYPE name grace`, collected until `ac` aborts. */
function podEvents(c: ReturnType<typeof clusterFor>, rv: string, ac: AbortController): { events: string[]; done: Promise<void> } {
  const events: string[] = [];
  const done = c.watch(RESOURCES.pods, { resourceVersion: rv, signal: ac.signal }, (e) => {
    events.push(`${e.type} ${e.object.metadata.name} ${e.object.metadata.deletionGracePeriodSeconds ?? '-'}`);
  });
  return { events, done };
}

describe('API-server double', () => {
  let api: ApiServerDouble;
  beforeEach(async () => {
    api = await startApiServer({ bookmarkIntervalMs: 50 });
  });
  afterEach(() => api.stop());

  test('create, 409 AlreadyExists, stale PUT 409, CR PUT without resourceVersion 422', async () => {
    const c = clusterFor(api);
    const created = await c.create(RESOURCES.gpupools, poolObj('p', 'a'));
    expect(created.metadata).toMatchObject({ name: 'p', generation: 1, resourceVersion: expect.any(String) });
    await expect(c.create(RESOURCES.gpupools, poolObj('p', 'a'))).rejects.toMatchObject({ code: 409, reason: 'AlreadyExists' });
    await c.mergePatch(RESOURCES.gpupools, { name: 'p' }, { metadata: { labels: { x: '1' } } });
    await expect(c.replace(RESOURCES.gpupools, created)).rejects.toMatchObject({ code: 409, reason: 'Conflict' });
    await expect(c.replace(RESOURCES.gpupools, { ...created, metadata: { name: 'p' } })).rejects.toMatchObject({ code: 422 });
  });

  test('status subresource: main writes ignore status, /status writes ignore the rest', async () => {
    const c = clusterFor(api);
    const p = await c.create(RESOURCES.gpupools, { ...poolObj('p', 'a'), status: { phase: 'Running' } });
    expect(p.status).toBeUndefined();
    const s = await c.replaceStatus(RESOURCES.gpupools, {
      ...p,
      metadata: { ...p.metadata, labels: { ignored: 'y' } },
      status: { phase: 'Pending' },
    });
    expect(s).toMatchObject({ status: { phase: 'Pending' } });
    expect(s.metadata.labels).toBeUndefined();
    const m = await c.apply(RESOURCES.gpupools, { ...poolObj('p', 'b'), status: { phase: 'Unknown' } });
    expect(m.status).toEqual({ phase: 'Pending' });
    expect(m.metadata.generation).toBe(2);
  });

  test('patch content types: failing JSON-patch test is 422, strategic merge is 415', async () => {
    const c = clusterFor(api);
    await c.create(RESOURCES.gpupools, poolObj('p', 'a'));
    await expect(
      c.jsonPatch(RESOURCES.gpupools, { name: 'p' }, [{ op: 'test', path: '/metadata/resourceVersion', value: '0' }]),
    ).rejects.toMatchObject({ code: 422 });
    const res = await c.request('PATCH', '/apis/tensor-fusion.ai/v1/gpupools/p', {}, {}, 'application/strategic-merge-patch+json');
    expect(res.status).toBe(415);
  });

  test('watch: initial ADDED events, bookmarks, replay from a resourceVersion, 410 after compaction', async () => {
    const c = clusterFor(api);
    api.put('gpupools', poolObj('a', 'a'));
    const list = await c.list(RESOURCES.gpupools);
    api.put('gpupools', poolObj('b', 'b'));
    const events: WatchEvent[] = [];
    const ac = new AbortController();
    const watching = c.watch(
      RESOURCES.gpupools,
      { resourceVersion: list.resourceVersion, allowWatchBookmarks: true, signal: ac.signal },
      (e) => {
        events.push(e);
        if (e.type === 'BOOKMARK') ac.abort();
      },
    );
    await watching;
    expect(events.map((e) => `${e.type}:${e.object.metadata.name ?? ''}`)).toEqual(['ADDED:b', 'BOOKMARK:']);
    api.store.compact();
    await expect(c.watch(RESOURCES.gpupools, { resourceVersion: list.resourceVersion }, () => undefined)).rejects.toMatchObject({
      code: 410,
    });
    const fresh: string[] = [];
    const ac2 = new AbortController();
    const w2 = c.watch(RESOURCES.gpupools, { signal: ac2.signal }, (e) => {
      fresh.push(`${e.type}:${e.object.metadata.name}`);
      if (fresh.length === 2) ac2.abort();
    });
    await w2;
    expect(fresh).toEqual(['ADDED:a', 'ADDED:b']);
  });

  test('list pages with limit/continue and 429 carries Retry-After', async () => {
    const c = clusterFor(api);
    for (let i = 0; i < 7; i++) api.put('gpupools', poolObj(`p${i}`, 'a'));
    const all = await c.list(RESOURCES.gpupools, { limit: 3 });
    expect(all.items.map((p) => p.metadata.name)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
    expect(api.requests.filter((r) => r.path.endsWith('/gpupools')).length).toBe(3);
    api.injectFault({ status: 429, retryAfterSeconds: 3 });
    const err = await c.list(RESOURCES.gpupools).catch((e: ApiError) => e);
    expect(err).toMatchObject({ code: 429, retryAfterSeconds: 3 });
  });

  test('size limits: 413 over 3 MiB, 422 for ConfigMap data over 1 MiB, 500 for objects etcd refuses', async () => {
    await api.stop();
    api = await startApiServer({ resources: [CONFIGMAPS] });
    const c = clusterFor(api);
    const cm = (name: string, data: Record<string, string>) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'default' },
      data,
    });
    expect((await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', cm('ok', { a: 'x'.repeat(MiB) }))).code).toBe(201);
    expect((await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', cm('big', { a: 'x'.repeat(MiB), b: 'y' }))).body).toMatchObject({
      code: 422,
      reason: 'Invalid',
      message: 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes',
    });
    expect((await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', cm('huge', { a: 'x'.repeat(3 * MiB) }))).body).toMatchObject({
      code: 413,
      reason: 'RequestEntityTooLarge',
      message: 'Request entity too large: limit is 3145728',
    });
    const tooLarge = await raw(c, 'POST', LEASES, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l' },
      spec: { holderIdentity: 'x'.repeat(1.6 * MiB) },
    });
    expect(tooLarge).toEqual({
      code: 500,
      body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'etcdserver: request is too large', code: 500 },
    });
    const grpc = await raw(c, 'POST', LEASES, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l' },
      spec: { holderIdentity: 'x'.repeat(2.1 * MiB) },
    });
    expect(grpc.body.message).toMatch(
      /^rpc error: code = ResourceExhausted desc = trying to send message larger than max \(\d+ vs\. 2097152\)$/,
    );
    // An update that grows an object past the limit fails the same way and leaves it as it was.
    await c.create(RESOURCES.pods, podObj('p', 'n'));
    const err = await c
      .mergePatch(
        RESOURCES.pods,
        { namespace: 'default', name: 'p' },
        { metadata: { labels: { a: 'b' } }, spec: { hostname: 'x'.repeat(1.6 * MiB) } },
      )
      .catch((e: ApiError) => e);
    expect(err).toMatchObject({ code: 500, message: '500 Internal Server Error: etcdserver: request is too large' });
    expect(api.getObject('pods', 'p', 'default')?.metadata.labels).toEqual({});
  });

  test('a bound pod is deleted gracefully: marked and kept until the kubelet (finishTerminating) deletes it', async () => {
    const c = clusterFor(api);
    const { resourceVersion } = await c.list(RESOURCES.pods);
    const ac = new AbortController();
    const w = podEvents(c, resourceVersion, ac);
    await c.create(RESOURCES.pods, podObj('bound', 'node-a'));
    const marked = await raw(c, 'DELETE', `${PODS}/bound`);
    expect(marked.body.metadata).toMatchObject({ deletionGracePeriodSeconds: 30, generation: 2 });
    expect(Date.parse(marked.body.metadata.deletionTimestamp) - Date.now()).toBeGreaterThan(25_000);
    expect(
      (await raw(c, 'DELETE', `${PODS}/bound`, undefined, undefined, { gracePeriodSeconds: 5 })).body.metadata.deletionGracePeriodSeconds,
    ).toBe(5);
    expect(
      (await raw(c, 'DELETE', `${PODS}/bound`, undefined, undefined, { gracePeriodSeconds: 20 })).body.metadata.deletionGracePeriodSeconds,
    ).toBe(5);
    expect(await c.get(RESOURCES.pods, { namespace: 'default', name: 'bound' })).toBeDefined();
    expect(api.finishTerminating('default', 'bound')).toBe(1);
    expect(await c.get(RESOURCES.pods, { namespace: 'default', name: 'bound' })).toBeUndefined();
    // Unbound pods and grace 0 go at once, still through a MODIFIED with the deletion stamped.
    await c.create(RESOURCES.pods, { ...podObj('unbound', ''), spec: { containers: [] } });
    expect(await c.delete(RESOURCES.pods, { namespace: 'default', name: 'unbound' })).toBe(true);
    expect(await c.get(RESOURCES.pods, { namespace: 'default', name: 'unbound' })).toBeUndefined();
    await eventually(() => expect(w.events).toHaveLength(8));
    ac.abort();
    await w.done;
    expect(w.events).toEqual([
      'ADDED bound -',
      'MODIFIED bound 30',
      'MODIFIED bound 5',
      'MODIFIED bound 0',
      'DELETED bound 0',
      'ADDED unbound -',
      'MODIFIED unbound 0',
      'DELETED unbound 0',
    ]);
  });

  test('podTerminationMs finishes terminating pods by itself; finalizers still hold them', async () => {
    await api.stop();
    api = await startApiServer({ podTerminationMs: 100 });
    const c = clusterFor(api);
    await c.create(RESOURCES.pods, podObj('a', 'node-a'));
    await c.create(RESOURCES.pods, {
      ...podObj('held', 'node-a'),
      metadata: { ...podObj('held', 'node-a').metadata, finalizers: ['example.com/hold'] },
    });
    await c.delete(RESOURCES.pods, { namespace: 'default', name: 'a' });
    await c.delete(RESOURCES.pods, { namespace: 'default', name: 'held' });
    expect(api.getObject('pods', 'a', 'default')?.metadata.deletionTimestamp).toBeDefined();
    await eventually(() => expect(api.getObject('pods', 'a', 'default')).toBeUndefined());
    await eventually(() => expect(api.getObject('pods', 'held', 'default')?.metadata.deletionGracePeriodSeconds).toBe(0));
    await c.mergePatch(RESOURCES.pods, { namespace: 'default', name: 'held' }, { metadata: { finalizers: null } });
    expect(api.getObject('pods', 'held', 'default')).toBeUndefined();
  });

  test('server-side apply: conflicts unless forced, ownership moves, fields a manager drops are removed', async () => {
    const c = clusterFor(api);
    const apply = (manager: string, spec: Record<string, unknown>, force = false) =>
      raw(c, 'PATCH', `${TFW}/w`, { ...workloadObj('w', 1), spec }, APPLY, { fieldManager: manager, ...(force ? { force: true } : {}) });
    expect((await apply('a', { replicas: 1, qos: 'low' })).code).toBe(201);
    expect((await apply('b', { replicas: 2 })).body).toMatchObject({
      code: 409,
      reason: 'Conflict',
      message: 'Apply failed with 1 conflict: conflict with "a": .spec.replicas',
      details: { causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "a"', field: '.spec.replicas' }] },
    });
    expect((await apply('b', { replicas: 2, qos: 'low' }, true)).body.spec).toEqual({ replicas: 2, qos: 'low' });
    // a lost replicas to b and shares qos with b: dropping both removes neither.
    expect((await apply('a', {})).body.spec).toEqual({ replicas: 2, qos: 'low' });
    expect((await apply('b', { replicas: 2 })).body.spec).toEqual({ replicas: 2 });
    // An Update (merge patch) owns what it changed; an apply over it names it with its apiVersion.
    await raw(c, 'PATCH', `${TFW}/w`, { spec: { gpuCount: 2 } }, 'application/merge-patch+json', { fieldManager: 'kubectl-edit' });
    expect((await apply('b', { replicas: 2, gpuCount: 4 })).body.message).toBe(
      'Apply failed with 1 conflict: conflict with "kubectl-edit" using tensor-fusion.ai/v1: .spec.gpuCount',
    );
    const forced = await apply('b', { replicas: 2, gpuCount: 4 }, true);
    expect(
      forced.body.metadata.managedFields.map((m: { manager: string; operation: string; fieldsV1: unknown }) => [
        m.manager,
        m.operation,
        m.fieldsV1,
      ]),
    ).toEqual([
      ['a', 'Apply', { 'f:spec': {} }],
      ['b', 'Apply', { 'f:spec': { 'f:gpuCount': {}, 'f:replicas': {} } }],
    ]);
    expect((await raw(c, 'PATCH', `${TFW}/w`, workloadObj('w', 1), APPLY)).body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
  });

  test("the runtime's forced applies: a field the next configuration leaves out disappears", async () => {
    const c = clusterFor(api);
    const wl = (spec: Record<string, unknown>) => ({
      ...workloadObj('w', 1),
      metadata: { name: 'w', namespace: 'default', labels: { app: 'w' } },
      spec,
    });
    await c.apply(RESOURCES.tensorfusionworkloads, wl({ replicas: 1, gpuCount: 2, poolName: 'p' }), { force: true });
    const next = await c.apply(RESOURCES.tensorfusionworkloads, wl({ replicas: 1, poolName: 'p' }), { force: true });
    expect(next.spec).toEqual({ replicas: 1, poolName: 'p' });
    // With the old merge-patch emulation gpuCount would have stayed.
    expect(api.getObject('tensorfusionworkloads', 'w', 'default')?.spec).toEqual({ replicas: 1, poolName: 'p' });
  });

  test("list pages read the first page's revision; after compaction the token is 410 Expired", async () => {
    const c = clusterFor(api);
    for (const n of ['a', 'b', 'c', 'd']) api.put('gpupools', poolObj(n, n));
    const page = (cont?: string) =>
      raw(c, 'GET', '/apis/tensor-fusion.ai/v1/gpupools', undefined, undefined, { limit: 2, ...(cont ? { continue: cont } : {}) });
    const first = await page();
    expect(first.body.metadata.remainingItemCount).toBe(2);
    api.remove('gpupools', 'c');
    api.put('gpupools', poolObj('bb', 'x'));
    const second = await page(first.body.metadata.continue);
    expect(second.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(['c', 'd']);
    expect(second.body.metadata.resourceVersion).toBe(first.body.metadata.resourceVersion);
    const again = await page();
    api.put('gpupools', poolObj('e', 'e'));
    api.store.compact();
    const expired = await page(again.body.metadata.continue);
    expect(expired.body).toMatchObject({
      code: 410,
      reason: 'Expired',
      message: expect.stringMatching(/^The provided continue parameter is too old to display a consistent list result\./),
    });
    const rest = await page(expired.body.metadata.continue);
    expect(rest.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(['bb', 'd']);
  });

  test('bookmarks by default: none within seconds, one ~2 s before timeoutSeconds, none while nothing changed', async () => {
    await api.stop();
    api = await startApiServer();
    const c = clusterFor(api);
    api.put('gpupools', poolObj('seed', 'a'));
    const watch = async (change: boolean) => {
      const { resourceVersion } = await c.list(RESOURCES.gpupools);
      const started = Date.now();
      const at: number[] = [];
      const done = c.watch(RESOURCES.gpupools, { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 3 }, (e) => {
        if (e.type === 'BOOKMARK') at.push(Date.now() - started);
      });
      if (change) api.put('gpupools', poolObj(`p${started}`, 'a'));
      await done;
      return at;
    };
    expect(await watch(false)).toEqual([]);
    const at = await watch(true);
    expect(at).toHaveLength(1);
    expect(at[0]).toBeGreaterThanOrEqual(950);
    // Without timeoutSeconds the next bookmark is a minute away.
    const ac = new AbortController();
    const events: string[] = [];
    const done = c.watch(RESOURCES.gpupools, { resourceVersion: '1', allowWatchBookmarks: true, signal: ac.signal }, (e) => {
      events.push(e.type);
    });
    await new Promise((r) => setTimeout(r, 1500));
    ac.abort();
    await done;
    expect(events.filter((t) => t === 'BOOKMARK')).toEqual([]);
  }, 15_000);

  test('Leases: MicroTime in exactly microseconds, stored in UTC; durations > 0; no unconditional update', async () => {
    const c = clusterFor(api);
    const post = (name: string, spec: Record<string, unknown>) =>
      raw(c, 'POST', LEASES, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec });
    expect((await post('ms', { renewTime: new Date(0).toISOString() })).body).toMatchObject({
      code: 400,
      reason: 'BadRequest',
      message:
        'Lease in version "v1" cannot be handled as a Lease: parsing time "1970-01-01T00:00:00.000Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".000Z" as ".000000"',
    });
    expect((await post('zero', { leaseDurationSeconds: 0 })).body.message).toBe(
      'Lease.coordination.k8s.io "zero" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0',
    );
    expect((await post('dur', { leaseDurationSeconds: '15' })).body.message).toBe(
      'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32',
    );
    const ok = await post('ok', { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: '2026-01-01T01:00:00.000001+01:00' });
    expect(ok.body.spec).toEqual({ holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: '2026-01-01T00:00:00.000001Z' });
    expect((await raw(c, 'PUT', `${LEASES}/ok`, { ...ok.body, metadata: { name: 'ok' } })).body.message).toBe(
      'leases.coordination.k8s.io "ok" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update',
    );
    expect((await raw(c, 'GET', `${LEASES}/nope`)).body.message).toBe('leases.coordination.k8s.io "nope" not found');
  });
});

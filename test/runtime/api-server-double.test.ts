/** The API-server double's semantics through the real HTTP client: the contract the other tests rely on. */
import { ApiError, WatchEvent } from '../../lib/runtime/cluster';
import { RESOURCES } from '../../lib/runtime/resources';
import { ApiServerDouble, clusterFor, startApiServer } from '../support/api-server';
import { poolObj } from './fixtures';

describe('API-server double', () => {
  let api: ApiServerDouble;
  beforeEach(async () => { api = await startApiServer({ bookmarkIntervalMs: 50 }); });
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
    const s = await c.replaceStatus(RESOURCES.gpupools, { ...p, metadata: { ...p.metadata, labels: { ignored: 'y' } }, status: { phase: 'Pending' } });
    expect(s).toMatchObject({ status: { phase: 'Pending' } });
    expect(s.metadata.labels).toBeUndefined();
    const m = await c.apply(RESOURCES.gpupools, { ...poolObj('p', 'b'), status: { phase: 'Unknown' } });
    expect(m.status).toEqual({ phase: 'Pending' });
    expect(m.metadata.generation).toBe(2);
  });

  test('patch content types: failing JSON-patch test is 422, strategic merge is 415', async () => {
    const c = clusterFor(api);
    await c.create(RESOURCES.gpupools, poolObj('p', 'a'));
    await expect(c.jsonPatch(RESOURCES.gpupools, { name: 'p' }, [{ op: 'test', path: '/metadata/resourceVersion', value: '0' }]))
      .rejects.toMatchObject({ code: 422 });
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
    const watching = c.watch(RESOURCES.gpupools, { resourceVersion: list.resourceVersion, allowWatchBookmarks: true, signal: ac.signal }, (e) => {
      events.push(e);
      if (e.type === 'BOOKMARK') ac.abort();
    });
    await watching;
    expect(events.map((e) => `${e.type}:${e.object.metadata.name ?? ''}`)).toEqual(['ADDED:b', 'BOOKMARK:']);
    api.store.compact();
    await expect(c.watch(RESOURCES.gpupools, { resourceVersion: list.resourceVersion }, () => undefined)).rejects.toMatchObject({ code: 410 });
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
});

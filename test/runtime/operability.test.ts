/**
 * Operability of one replica: readiness holds only what admission needs (a broken watch of another
 * kind leaves the webhook in the Service), liveness fails when the webhook could not start, and
 * events are aggregated as client-go's recorder does (bounded, combined, counted, rate-limited).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CONTROLLER_PATHS } from '../../lib/contract/env';
import { COMBINED_PREFIX, EventCorrelator } from '../../lib/runtime/kube/event-correlator';
import type { K8sObject, ListOptions, ObjectList } from '../../lib/runtime/kube/cluster';
import { HttpCluster, keepAliveAgent } from '../../lib/runtime/kube/http-cluster';
import { Informer } from '../../lib/runtime/kube/informer';
import { Component, readEnv } from '../../lib/runtime/shared/runtime-context';
import { RESOURCES, ResourceType } from '../../lib/runtime/kube/resources';
import { Runtime, startRuntime } from '../../lib/runtime/runtime';
import { createCa, issueServingCert } from '../../lib/runtime/serving/certificates';
import { webhookComponent } from '../../lib/runtime/webhook/component';
import { ApiServerDouble, clusterFor } from '../support/api-server';
import { httpGet } from '../support/control-plane/process';
import { eventually, podObj, poolObj, silent } from './fixtures';

const probe = async (rt: Runtime, p: string) => httpGet(`http://127.0.0.1:${rt.ops.port}${p}`);

describe('readiness and liveness of a replica', () => {
  let api: ApiServerDouble;
  let rt: Runtime | undefined;
  const dirs: string[] = [];
  beforeEach(async () => {
    api = await new ApiServerDouble().start();
  });
  afterEach(async () => {
    await rt?.stop();
    rt = undefined;
    await api.stop();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  const start = (components: ((ctx: Parameters<typeof webhookComponent>[0]) => Component)[], env: Record<string, string> = {}) =>
    startRuntime({
      env: readEnv({ POD_NAME: 'r0', POD_NAMESPACE: 'tf', METRICS_PORT: '0', LOG_LEVEL: 'silent', ...env }),
      connection: { server: api.url, agent: keepAliveAgent(api.url) },
      logger: silent,
      components,
      // A broken watch counts as unhealthy at once, so the test needs no waiting.
      controller: { informer: { unhealthyAfterMs: 0, backoffInitialMs: 50, backoffMaxMs: 100 } },
      leaderElection: { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 10_000 },
    });

  test('a broken gpus watch leaves /readyz 200: admission does not read GPUs', async () => {
    const admission: Component = { name: 'webhook', start: async () => undefined, stop: async () => undefined, ready: () => true };
    rt = await start([() => admission]);
    await rt.controller.waitForSync();
    expect((await probe(rt, CONTROLLER_PATHS.readyz)).status).toBe(200);
    api.injectFault({ path: `/${RESOURCES.gpus.plural}`, status: 500, times: 1_000_000 });
    api.dropWatches(RESOURCES.gpus.plural);
    await eventually(async () => expect(rt!.controller.isReady()).toBe(false), 10_000);
    expect(await probe(rt, CONTROLLER_PATHS.readyz)).toEqual({ status: 200, body: 'ok' });
  });

  test('without components, /readyz waits for the caches', async () => {
    api.injectFault({ path: `/${RESOURCES.gpupools.plural}`, status: 500, times: 1_000_000 });
    rt = await start([]);
    expect(await probe(rt, CONTROLLER_PATHS.readyz)).toEqual({ status: 503, body: 'not ready: informers' });
    api.clearFaults();
    await eventually(async () => expect(await probe(rt!, CONTROLLER_PATHS.readyz)).toEqual({ status: 200, body: 'ok' }), 10_000);
  });

  test('a webhook that failed to start makes /healthz fail, so the kubelet restarts the container', async () => {
    // cert-manager mode with a mounted certificate, on a port that is already taken.
    const dir = mkdtempSync(path.join(tmpdir(), 'tf-tls-'));
    dirs.push(dir);
    const pair = issueServingCert(createCa(), ['127.0.0.1']);
    writeFileSync(path.join(dir, 'tls.crt'), pair.cert);
    writeFileSync(path.join(dir, 'tls.key'), pair.key);
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '0.0.0.0', r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      rt = await start([webhookComponent], { CERT_MODE: 'cert-manager', TLS_DIR: dir, WEBHOOK_PORT: String(port) });
      expect((await probe(rt, CONTROLLER_PATHS.healthz)).status).toBe(200);
      await eventually(
        async () => expect(await probe(rt!, CONTROLLER_PATHS.healthz)).toEqual({ status: 503, body: 'not live: webhook' }),
        10_000,
      );
      expect((await probe(rt, CONTROLLER_PATHS.readyz)).status).toBe(503);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });
});

describe('informer memory', () => {
  test('a relist folds pages in as they arrive: the client never returns the whole raw list', async () => {
    const api = await new ApiServerDouble().start();
    try {
      for (let i = 0; i < 25; i++) api.put('pods', podObj(`p${i}`, 'n1'));
      const returned: number[] = [];
      const pages: number[] = [];
      const spy = clusterFor(api);
      const list = spy.list.bind(spy);
      spy.list = async <T extends K8sObject>(rt: ResourceType, opts: ListOptions = {}): Promise<ObjectList<T>> => {
        const got = await list<T>(rt, {
          ...opts,
          onPage:
            opts.onPage &&
            ((items) => {
              pages.push(items.length);
              opts.onPage!(items);
            }),
        });
        returned.push(got.items.length);
        return got;
      };
      const informer = new Informer(spy, RESOURCES.pods, { pageSize: 10 });
      informer.start();
      await informer.waitForSync();
      await informer.stop();
      expect({ pages, returned, cached: informer.size() }).toEqual({ pages: [10, 10, 5], returned: [0], cached: 25 });
    } finally {
      await api.stop();
    }
  });

  test('stop() aborts a list the API server does not answer', async () => {
    const silentServer = net.createServer(() => undefined);
    await new Promise<void>((r) => silentServer.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(silentServer.address() as net.AddressInfo).port}`;
    try {
      const informer = new Informer(
        new HttpCluster({ server: url, agent: keepAliveAgent(url), requestTimeoutMs: 3_600_000 }),
        RESOURCES.pods,
      );
      informer.start();
      await new Promise((r) => setTimeout(r, 100));
      await informer.stop();
      expect(informer.hasSynced()).toBe(false);
    } finally {
      silentServer.close();
    }
  });
});

describe('events aggregated as client-go does', () => {
  let api: ApiServerDouble;
  beforeEach(async () => {
    api = await new ApiServerDouble().start();
  });
  afterEach(async () => {
    await api.stop();
  });

  const pool = { ...poolObj('p', 'a'), metadata: { name: 'p', uid: 'uid-p' } };
  const events = () => api.listObjects(RESOURCES.events.plural) as unknown as { message: string; count: number; reason: string }[];

  test('messages that differ by node name collapse into one combined event after 10, counted', async () => {
    const cluster = clusterFor(api);
    for (let i = 0; i < 50; i++) {
      await cluster.recordEvent(
        pool,
        { type: 'Warning', reason: 'UnknownGPUModel', message: `node n${i}: GPU model "X" is not in the TFLOPS table` },
        1_000 + i,
      );
    }
    const got = events();
    // 9 distinct events, then one combined event (client-go's 10-message limit) counted for the
    // later ones until the object's burst of 25 is spent.
    expect(got).toHaveLength(10);
    const combined = got.filter((e) => e.message.startsWith(COMBINED_PREFIX));
    expect(combined).toHaveLength(1);
    expect(combined[0].count).toBe(25 - 9);
    expect(combined[0].message).toBe(`${COMBINED_PREFIX}node n24: GPU model "X" is not in the TFLOPS table`);
  });

  test('the same event again patches its count instead of creating another', async () => {
    const cluster = clusterFor(api);
    for (let i = 0; i < 5; i++)
      await cluster.recordEvent(pool, { type: 'Warning', reason: 'MultiplePools', message: 'node matches pools a, b; using a' }, 1_000 + i);
    expect(events().map((e) => [e.reason, e.count])).toEqual([['MultiplePools', 5]]);
  });

  test('one object gets at most 25 events at once, then one per 5 minutes', () => {
    const c = new EventCorrelator();
    const actions = Array.from(
      { length: 30 },
      (_, i) => c.correlate({ object: 'o', type: 'Normal', reason: `R${i}`, message: 'm' }, 0).action,
    );
    expect(actions.filter((a) => a !== 'drop')).toHaveLength(25);
    expect(c.correlate({ object: 'o', type: 'Normal', reason: 'late', message: 'm' }, 299_999).action).toBe('drop');
    expect(c.correlate({ object: 'o', type: 'Normal', reason: 'late', message: 'm' }, 300_000).action).toBe('create');
  });

  test('its caches stay within 4096 keys however many objects and messages', () => {
    const c = new EventCorrelator();
    for (let i = 0; i < 20_000; i++) {
      const d = c.correlate({ object: `o${i}`, type: 'Warning', reason: 'R', message: `m${i}` }, i);
      if (d.action === 'create') c.created(d.key, `e${i}`, i);
    }
    const s = c.sizes();
    expect(Math.max(s.similar, s.seen, s.buckets)).toBe(4096);
  });
});

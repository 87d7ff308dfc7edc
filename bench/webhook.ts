/**
 * Admission webhook benchmark, over HTTPS against (1) a trivial HTTPS handler that answers a fixed
 * AdmissionReview (a plain node:https server, without the webhook's handshake gate) and (2) the
 * webhook admitting local-GPU pods (decode, resolve, mark: share annotation, scheduler, priority
 * class, downward-API env), both in one child process (plain node from an esbuild bundle), alone
 * on one CPU with every thread of it, and this process and the API double on the others (see
 * affinity.ts; unpinned, and saying so, on a single CPU or without taskset). Throughput:
 * autocannon keeping 200 connections busy. Latency: an open-loop client at a fixed rate (see
 * {@link PacedClient}). Pods come two ways: as the replicas of one template (a ReplicaSet or Job
 * scaling up: one object, which the webhook decides once, see webhook/decision-cache.ts) and all
 * different (a label unique to each: every one decided). The API-server double runs in a second
 * child only to fill the webhook's caches; it counts the requests it gets during the runs, which
 * must be none but watch upkeep (no I/O on the admission path). The load generators run in this
 * process. Prints figures and ends with one JSON line. `BENCH_SERVER_FLAGS` passes Node or V8 flags
 * to the server process (`--max-semi-space-size=32`, `--single-threaded-gc`: GC experiments).
 * `BENCH_PROF=<run>` writes a CPU profile of the server process over one run to
 * /tmp/wprof/<run>.cpuprofile: `baseline`, `replicas` or `distinct` (the paced runs at the target
 * rate), `all` for the whole process.
 */
import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { constants as perfConstants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { Session } from 'node:inspector/promises';
import { connect as tlsConnect, createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import autocannon from 'autocannon';
import { buildSync } from 'esbuild';
import { HttpCluster, keepAliveAgent } from '../lib/runtime/kube/http-cluster';
import { RuntimeMetrics } from '../lib/runtime/shared/metrics';
import { createCa, issueServingCert } from '../lib/runtime/serving/certificates';
import { isolate } from './affinity';
import { percentile } from './stats';
import { reviewBody, startBenchApi, startBenchWebhook } from './webhook-review';

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 200;
const TARGET_RPS = Number(process.env.BENCH_RATE ?? 3000);
const LIGHT_RPS = Number(process.env.BENCH_LIGHT_RATE ?? 1000);
/** API servers keep webhook connections open; the first second, spent on 200 TLS handshakes, is left out of the steady figures. */
const WARM_MS = 1500;
/** Goals of issue 12: admission p99 at the target rate, and admissions per second on one core. */
const GOAL_P99_MS = 5;
const GOAL_RPS = 3000;
const NS = 'tensor-fusion-system';
const HOST = `tensor-fusion-webhook.${NS}.svc`;

async function child(): Promise<void> {
  const ca = createCa();
  const tls = issueServingCert(ca, [HOST]);
  const url = process.env.BENCH_API as string;
  const cluster = new HttpCluster({ server: url, agent: keepAliveAgent(url), userAgent: 'bench-webhook' });
  const metrics = new RuntimeMetrics();
  const webhook = startBenchWebhook(cluster, NS, tls, metrics);
  await webhook.whenReady();
  const fixed = Buffer.from(
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'x', allowed: true } }),
  );
  const trivial = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': fixed.length });
      res.end(fixed);
    });
  });
  trivial.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => trivial.listen(0, '127.0.0.1', r));
  let cpuStart = process.cpuUsage();
  const pauses = new ServerPauseMeter();
  const profiler = new RunProfiler(process.env.BENCH_PROF);
  process.on('message', async (m) => {
    if (typeof m === 'string' && m.startsWith('reset')) {
      await profiler.start(m.slice('reset:'.length));
      cpuStart = process.cpuUsage();
      pauses.reset();
    }
    if (m === 'cpu') {
      const cpu = process.cpuUsage(cpuStart);
      const read = pauses.read();
      await profiler.stop();
      process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000, pauses: read });
    }
    if (m === 'handler') void handlerOnly(webhook.handle, false).then((r) => process.send?.(r));
    if (m === 'handler-distinct') void handlerOnly(webhook.handle, true).then((r) => process.send?.(r));
  });
  process.send?.({ port: webhook.port(), baselinePort: (trivial.address() as { port: number }).port, ca: ca.cert });
  process.on('message', async (m) => {
    if (m === 'stop') {
      const counts = (await metrics.registry.getSingleMetric('tf_webhook_admissions_total')!.get()).values;
      const outcomes = Object.fromEntries(counts.map((v) => [String(v.labels.outcome), v.value]));
      await webhook.close();
      trivial.close();
      process.send?.({ outcomes });
      process.exit(0);
    }
  });
}

/** A CPU profile of the run named `wanted` (see BENCH_PROF), through the inspector: nothing when unset. */
class RunProfiler {
  private session?: Session;
  private run = '';

  constructor(private readonly wanted: string | undefined) {}

  async start(run: string): Promise<void> {
    if (run !== this.wanted) return;
    this.run = run;
    this.session = new Session();
    this.session.connect();
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.start');
  }

  async stop(): Promise<void> {
    if (!this.session) return;
    const { profile } = await this.session.post('Profiler.stop');
    fs.mkdirSync('/tmp/wprof', { recursive: true });
    fs.writeFileSync(`/tmp/wprof/${this.run}.cpuprofile`, JSON.stringify(profile));
    this.session.disconnect();
    this.session = undefined;
  }
}

interface HandlerFigures {
  p50Us: number;
  p99Us: number;
  perSec: number;
}

/**
 * The handler alone, one admission at a time in this process (parse, decide, patch, serialize): what
 * the webhook adds to the TLS and HTTP work any HTTPS server does.
 */
async function handlerOnly(handle: (r: never) => Promise<unknown>, distinct: boolean, n = 20_000): Promise<HandlerFigures> {
  const times: number[] = [];
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    JSON.stringify(await handle(JSON.parse(body(`h-${i}`, distinct)) as never));
    if (i >= n / 10) times.push((performance.now() - t) * 1000);
  }
  const elapsed = performance.now() - started;
  times.sort((a, b) => a - b);
  return {
    p50Us: Math.round(times[Math.floor(times.length / 2)]),
    p99Us: Math.round(times[Math.floor(times.length * 0.99)]),
    perSec: Math.round(n / (elapsed / 1000)),
  };
}

const template = reviewBody();
let seq = 0;

/** A review with admission uid `id`: of the template's pod, or with `distinct` of a pod unlike any other. */
function body(id: string, distinct: boolean): string {
  return template.replace('[<id>]', id).replace('[<pod>]', distinct ? id : 'template');
}

interface Run {
  rps: number;
  /** Paced runs: connections dialled during the run (beyond those open when it started). */
  opened?: number;
  errors: number;
  non2xx: number;
  /** Latency percentiles of responses after the first WARM_MS (TLS handshakes of the 200 new connections). */
  steady: { p50: number; p99: number };
  /**
   * Paced runs: the longest this process's event loop was blocked, ms. Node's TLS client spends 1.2-2 ms
   * of CPU on each handshake, on the loop that sends the requests (Go's transport dials on goroutines
   * of their own), so when the client dials many connections the requests due meanwhile may go out
   * late, and that wait counts in the latency: this says how much of a tail may be the client's own.
   */
  clientStallMs?: number;
  /** Paced runs: what held up the server's loop over the run. */
  server?: ServerPauses;
}

/** The longest the server's event loop was held up over a run, and its garbage collections. */
interface ServerPauses {
  stallMs: number;
  minorGcs: number;
  majorGcs: number;
  gcMaxMs: number;
}

/**
 * In the server process: its event loop's longest delay and its GC pauses since the last reset. A
 * stall longer than the 25 idle connections last at the target rate (25 / 3,000 s, ~8 ms) sends the
 * client dialling, so these say whether a run's tail began in the server.
 */
class ServerPauseMeter {
  private readonly loop = monitorEventLoopDelay({ resolution: 1 });
  private gc = { minor: 0, major: 0, maxMs: 0 };

  constructor() {
    this.loop.enable();
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
        if (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) this.gc.minor++;
        if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) this.gc.major++;
        this.gc.maxMs = Math.max(this.gc.maxMs, e.duration);
      }
    }).observe({ entryTypes: ['gc'] });
  }

  reset(): void {
    this.loop.reset();
    this.gc = { minor: 0, major: 0, maxMs: 0 };
  }

  read(): ServerPauses {
    const round = (ms: number) => Math.round(ms * 10) / 10;
    return { stallMs: round(this.loop.max / 1e6), minorGcs: this.gc.minor, majorGcs: this.gc.major, gcMaxMs: round(this.gc.maxMs) };
  }
}

/** A closed-loop run: autocannon keeps every connection busy. */
interface Saturated extends Run {
  result: autocannon.Result;
}

/** Rounded to 2 decimals, 0 when nothing was measured (the JSON line needs a number). */
function pct(sorted: number[], p: number): number {
  return sorted.length ? Number(percentile(sorted, p).toFixed(2)) : 0;
}

function saturate(port: number, ca: string): Promise<Saturated> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const latencies: number[] = [];
    const inst = autocannon(
      {
        url: `https://127.0.0.1:${port}/mutate-pods`,
        method: 'POST',
        connections: CONNECTIONS,
        duration: DURATION_S,
        headers: { 'content-type': 'application/json' },
        // A fresh admission uid per request (autocannon 8's idReplacement sends nothing on Node 20).
        requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: body(`bench-${++seq}`, false) }) }],
        tlsOptions: { ca, servername: HOST },
        timeout: 10,
      } as unknown as autocannon.Options,
      (err, result) => {
        if (err) return reject(err);
        latencies.sort((a, b) => a - b);
        resolve({
          result,
          rps: Math.round(result.requests.average),
          errors: result.errors + result.timeouts,
          non2xx: result.non2xx,
          steady: { p50: pct(latencies, 50), p99: pct(latencies, 99) },
        });
      },
    );
    inst.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
      if (Date.now() - started > WARM_MS) latencies.push(ms);
    });
    autocannon.track(inst, { renderProgressBar: false, renderResultsTable: false, renderLatencyTable: false });
  });
}

/**
 * Idle connections the API server keeps per webhook host (client-go's transport cache sets
 * `MaxIdleConnsPerHost` to 25): opened before the paced runs, as a running API server has them, so a
 * run does not start with a burst of TLS handshakes; and, as Go's transport does, a connection that
 * comes free with as many already idle is closed, so the next burst dials again.
 */
const IDLE_CONNECTIONS = 25;

/**
 * An open-loop HTTPS client: requests evenly spaced at a rate, whether or not earlier ones have been
 * answered, as pod creations reach an API server. Latency counts from when a request was due, so time
 * spent waiting for a free connection is not hidden. One request at a time per connection (as the API
 * server's webhook client, HTTP/1.1 here), reusing the most recently freed one and dialling another
 * (up to CONNECTIONS) when none is free, one dial started per turn of the loop (see dialOne), and
 * closing one that comes free with IDLE_CONNECTIONS already idle. The idle ones live across runs
 * against one server.
 *
 * Autocannon's `overallRate` is not used: it paces each of its connections on its own timer, so the
 * 200 connections fire together and every answer waits behind a burst of 200 (at 0.17 ms each, ~17 ms
 * at any rate), which measures the burst rather than the server. Nor is node:https: its client costs
 * this process more CPU per request than the server under test spends (with the server alone on one
 * core and this process on the other, it could not keep 3,000/s and its own queue set the p99), so on
 * two cores the client's load decided the tail. Hence this minimal HTTP/1.1 client on raw TLS sockets;
 * it relies on the servers here always sending Content-Length (see webhook/server.ts).
 */
class PacedClient {
  private readonly idle: Conn[] = [];
  private readonly all = new Set<Conn>();
  private run?: PacedRun;
  private distinct = false;
  /** Dials owed and not started yet (see dialOne). */
  private dials = 0;
  /** Connections dialled so far. */
  private dialled = 0;

  /** One TLS context for every dial, as Go's transport has one tls.Config (Node would parse the CA per dial). */
  private readonly tls: SecureContext;

  private constructor(
    private readonly port: number,
    ca: string,
  ) {
    this.tls = createSecureContext({ ca });
  }

  static async open(port: number, ca: string): Promise<PacedClient> {
    const client = new PacedClient(port, ca);
    await Promise.all(
      Array.from({ length: IDLE_CONNECTIONS }, () => new Promise<void>((ready) => client.idle.push(client.connect(ready)))),
    );
    return client;
  }

  /** `rate` requests per second for DURATION_S (of pods all `distinct`, or of one template); resolves when every one is answered. */
  paced(rate: number, distinct = false): Promise<Run> {
    this.distinct = distinct;
    const total = rate * DURATION_S;
    const started = performance.now();
    const dialledBefore = this.dialled;
    const stalls = monitorEventLoopDelay({ resolution: 1 });
    stalls.enable();
    let sent = 0;
    return new Promise((resolve) => {
      const run: PacedRun = {
        started,
        latencies: [],
        waiting: [],
        answered: 0,
        errors: 0,
        non2xx: 0,
        done: () => {
          if (++run.answered < total) return;
          this.run = undefined;
          run.latencies.sort((a, b) => a - b);
          const seconds = (performance.now() - started) / 1000;
          stalls.disable();
          resolve({
            rps: Math.round(total / seconds),
            errors: run.errors,
            non2xx: run.non2xx,
            opened: this.dialled - dialledBefore,
            steady: { p50: pct(run.latencies, 50), p99: pct(run.latencies, 99) },
            clientStallMs: Math.round(stalls.max / 1e5) / 10,
          });
        },
      };
      this.run = run;
      const tick = () => {
        const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
        for (; sent < due; sent++) this.fire(started + (sent * 1000) / rate);
        if (sent < total) setTimeout(tick, 1);
      };
      tick();
    });
  }

  /** Closes every connection; the dials still owed are dropped (one started later would stay open). */
  close(): void {
    this.dials = 0;
    for (const c of this.all) c.socket.destroy();
  }

  /**
   * As Go's transport: with no idle connection the request queues and a new connection is dialled;
   * whichever is free first, a returned connection or the new one, serves the oldest queued request.
   */
  private fire(due: number): void {
    const c = this.idle.pop();
    if (c) return this.send(c, due);
    this.run!.waiting.push(due);
    if (this.all.size + this.dials < CONNECTIONS) {
      this.dials++;
      if (this.dials === 1) setImmediate(() => this.dialOne());
    }
  }

  /**
   * Dials owed start one per turn of this process's event loop, so that a burst of them does not hold
   * up the sends and answers of that turn: Go's transport dials each on a goroutine of its own, beside
   * the requests, where `tls.connect` here takes ~0.1 ms of the loop at once.
   */
  private dialOne(): void {
    if (this.dials === 0) return;
    const opened: Conn = this.connect(() => this.free(opened));
    if (--this.dials > 0) setImmediate(() => this.dialOne());
  }

  private free(c: Conn): void {
    const next = this.run?.waiting.shift();
    if (next !== undefined) this.send(c, next);
    else if (this.idle.length < IDLE_CONNECTIONS) this.idle.push(c);
    else c.socket.end();
  }

  private send(c: Conn, due: number): void {
    c.due = due;
    const text = body(`bench-${++seq}`, this.distinct);
    c.socket.write(
      `POST /mutate-pods HTTP/1.1\r\nHost: ${HOST}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    );
  }

  private connect(ready: () => void): Conn {
    this.dialled++;
    const c: Conn = {
      socket: tlsConnect({ host: '127.0.0.1', port: this.port, secureContext: this.tls, servername: HOST }),
      chunks: [],
      size: 0,
    };
    this.all.add(c);
    c.socket.setNoDelay(true);
    c.socket.once('secureConnect', ready);
    c.socket.on('data', (chunk: Buffer) => this.receive(c, chunk));
    c.socket.on('error', () => undefined);
    c.socket.once('close', () => {
      this.all.delete(c);
      const i = this.idle.indexOf(c);
      if (i >= 0) this.idle.splice(i, 1);
      if (c.due !== undefined && this.run) {
        this.run.errors++;
        this.run.done();
      }
    });
    return c;
  }

  private receive(c: Conn, chunk: Buffer): void {
    c.chunks.push(chunk);
    c.size += chunk.length;
    const head = c.chunks.length === 1 ? chunk : Buffer.concat(c.chunks);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    const headers = head.subarray(0, end).toString('latin1');
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(headers)?.[1] ?? 0);
    if (c.size < end + 4 + length) return;
    const run = this.run!;
    if (!headers.startsWith('HTTP/1.1 200')) run.non2xx++;
    if (c.due! - run.started > WARM_MS) run.latencies.push(performance.now() - c.due!);
    c.chunks = [];
    c.size = 0;
    c.due = undefined;
    this.free(c);
    run.done();
  }
}

interface Conn {
  socket: TLSSocket;
  chunks: Buffer[];
  size: number;
  due?: number;
}

interface PacedRun {
  started: number;
  latencies: number[];
  /** Due times of requests waiting for a free connection. */
  waiting: number[];
  answered: number;
  errors: number;
  non2xx: number;
  done: () => void;
}

/** The API-server double in a process of its own, so that neither autocannon nor the webhook slows it. */
async function apiChild(): Promise<void> {
  const api = await startBenchApi(20);
  process.send?.({ url: api.url });
  process.on('message', (m) => {
    if (m === 'count')
      process.send?.({
        requests: api.requests.filter((r) => !r.watch).length,
        writes: api.requests.filter((r) => r.method !== 'GET').length,
      });
  });
}

function apiCounts(proc: ReturnType<typeof fork>): Promise<{ requests: number; writes: number }> {
  return new Promise((r) => {
    proc.once('message', (m) => r(m as never));
    proc.send('count');
  });
}

async function parent(): Promise<void> {
  const bundle = path.join(os.tmpdir(), `webhook-bench-${process.pid}.js`);
  buildSync({ entryPoints: [__filename], bundle: true, platform: 'node', target: 'node20', outfile: bundle, logLevel: 'error' });
  const apiProc = fork(bundle, ['--api']);
  const { url } = await new Promise<{ url: string }>((r) => apiProc.once('message', (m) => r(m as never)));
  const proc = fork(bundle, ['--child'], {
    env: { ...process.env, BENCH_API: url },
    execArgv: [
      ...(process.env.BENCH_PROF === 'all' ? ['--cpu-prof', '--cpu-prof-dir=/tmp/wprof'] : []),
      ...(process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean),
    ],
  });
  const ready = await new Promise<{ port: number; baselinePort: number; ca: string }>((r) => proc.once('message', (m) => r(m as never)));
  const affinity = isolate(proc.pid!, [process.pid, apiProc.pid!]);

  const ask = <T>(m: string) =>
    new Promise<T>((r) => {
      proc.once('message', (x) => r(x as T));
      proc.send(m);
    });
  const handler = await ask<HandlerFigures>('handler');
  const handlerDistinct = await ask<HandlerFigures>('handler-distinct');
  /** `run`, and the server process's CPU time and pauses over it. */
  const onServer = async <T>(run: () => Promise<T>, name = '') => {
    proc.send(`reset:${name}`);
    const result = await run();
    return { result, ...(await ask<{ cpuMs: number; pauses: ServerPauses }>('cpu')) };
  };
  const { result: baseline, cpuMs: baselineCpuMs } = await onServer(() => saturate(ready.baselinePort, ready.ca));
  const pacedWithCpu = async (client: PacedClient, rate: number, distinct = false, name = '') => {
    const { result: run, cpuMs, pauses } = await onServer(() => client.paced(rate, distinct), name);
    return { ...run, cpuMsPerRequest: cpuMs / (rate * DURATION_S), server: pauses };
  };
  // The trivial handler at the target rate too: what this machine's TLS, HTTP and scheduling alone cost.
  const baselineClient = await PacedClient.open(ready.baselinePort, ready.ca);
  // A run at the light rate first, as for the webhook below, so neither side's paced run is this client's first.
  const baselineLight = await pacedWithCpu(baselineClient, LIGHT_RPS);
  const baselinePaced = await pacedWithCpu(baselineClient, TARGET_RPS, false, 'baseline');
  baselineClient.close();
  const apiBefore = await apiCounts(apiProc);
  const { result: hook, cpuMs: hookCpuMs } = await onServer(() => saturate(ready.port, ready.ca));
  // Little's law: 200 busy connections at N/s wait 200/N s each, so latency is measured again at the
  // target rate, where it shows the time an admission takes rather than the queue in front of it.
  const client = await PacedClient.open(ready.port, ready.ca);
  const light = await pacedWithCpu(client, LIGHT_RPS);
  const atTarget = await pacedWithCpu(client, TARGET_RPS, false, 'replicas');
  client.close();
  // Every pod decided: a client of its own, so it starts with the same idle connections, and, as the
  // other two, a run at the light rate first. Without it this was the only paced run on connections
  // fresh from their handshakes, and the server's first answers on them came late enough to start the
  // client dialling (25 requests in flight 45 ms into the run, before any stall of either process).
  const distinctClient = await PacedClient.open(ready.port, ready.ca);
  const distinctLight = await pacedWithCpu(distinctClient, LIGHT_RPS, true);
  const distinct = await pacedWithCpu(distinctClient, TARGET_RPS, true, 'distinct');
  distinctClient.close();
  const apiAfter = await apiCounts(apiProc);
  proc.send('stop');
  const { outcomes } = await new Promise<{ outcomes: Record<string, number> }>((r) => proc.once('message', (m) => r(m as never)));
  apiProc.kill();
  fs.rmSync(bundle, { force: true });

  const line = (name: string, r: Run) =>
    `${name.padEnd(11)} rps ${r.rps}  steady p50 ${r.steady.p50} ms  p99 ${r.steady.p99} ms  non-2xx ${r.non2xx}  errors ${r.errors}${r.opened !== undefined ? `  connections opened ${r.opened}` : ''}${r.clientStallMs !== undefined ? `  client stalled up to ${r.clientStallMs} ms` : ''}` +
    (r.server
      ? `  server stalled up to ${r.server.stallMs} ms (GC: ${r.server.minorGcs} minor, ${r.server.majorGcs} major, longest pause ${r.server.gcMaxMs} ms)`
      : '');
  console.log(
    `${CONNECTIONS} connections, ${DURATION_S} s each, server in a child process (${affinity.says}), API double in another (caches only); load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} on ${os.cpus().length} cores`,
  );
  const handlerLine = (h: HandlerFigures) => `p50 ${h.p50Us} µs  p99 ${h.p99Us} µs  ${h.perSec} admissions/s`;
  console.log(
    `handler alone (no TLS, no HTTP): replicas of one template ${handlerLine(handler)}; every pod different ${handlerLine(handlerDistinct)}`,
  );
  console.log(line('baseline', baseline));
  console.log(line(`  at ${LIGHT_RPS}/s`, baselineLight));
  console.log(line(`  at ${TARGET_RPS}/s`, baselinePaced));
  console.log(line('webhook', hook));
  console.log(line(`at ${LIGHT_RPS}/s`, light));
  console.log(line(`at ${TARGET_RPS}/s`, atTarget));
  console.log(line(`at ${LIGHT_RPS}/s, every pod different`, distinctLight));
  console.log(line(`at ${TARGET_RPS}/s, every pod different`, distinct));
  const ratio = hook.result.requests.average / baseline.result.requests.average;
  const apiRequests = apiAfter.requests - apiBefore.requests;
  const apiWrites = apiAfter.writes - apiBefore.writes;
  console.log(
    `throughput ratio webhook/baseline: ${ratio.toFixed(3)}; API requests during the webhook runs: ${apiRequests} (writes: ${apiWrites})`,
  );
  const cpuPerAdmission = hookCpuMs / Math.max(1, hook.result.requests.total);
  const cpuPerBaseline = baselineCpuMs / Math.max(1, baseline.result.requests.total);
  const capacity = Math.round(1000 / cpuPerAdmission);
  console.log(
    `webhook outcomes: ${JSON.stringify(outcomes)}; CPU per request on the server process: webhook ${cpuPerAdmission.toFixed(3)} ms (TLS, HTTP, handler), trivial handler ${cpuPerBaseline.toFixed(3)} ms; one busy core admits ${capacity}/s`,
  );
  console.log(
    `CPU per request on the server process at ${TARGET_RPS}/s (one request per wake-up, unlike the saturated runs): webhook ${atTarget.cpuMsPerRequest.toFixed(3)} ms, ` +
      `every pod different ${distinct.cpuMsPerRequest.toFixed(3)} ms, trivial handler ${baselinePaced.cpuMsPerRequest.toFixed(3)} ms`,
  );
  const rps = hook.rps;
  const distinctCapacity = Math.round((1 / distinct.cpuMsPerRequest) * 1000);
  const meetsGoals = atTarget.steady.p99 <= GOAL_P99_MS && rps >= GOAL_RPS;
  const meetsGoalsDistinct = distinct.steady.p99 <= GOAL_P99_MS && distinctCapacity >= GOAL_RPS;
  console.log(
    `goals, replicas of one template: p99 at ${TARGET_RPS}/s ${atTarget.steady.p99} ms (<= ${GOAL_P99_MS}), ${rps} admissions/s on one core (>= ${GOAL_RPS}): ${meetsGoals ? 'met' : 'NOT met'}`,
  );
  console.log(
    `goals, every pod different: p99 at ${TARGET_RPS}/s ${distinct.steady.p99} ms (<= ${GOAL_P99_MS}), one core admits ${distinctCapacity}/s at its paced CPU cost (>= ${GOAL_RPS}): ${meetsGoalsDistinct ? 'met' : 'NOT met'}`,
  );
  console.log(
    JSON.stringify({
      p50Ms: atTarget.steady.p50,
      p99Ms: atTarget.steady.p99,
      pacedRps: atTarget.rps,
      targetRps: TARGET_RPS,
      p50MsAtLight: light.steady.p50,
      p99MsAtLight: light.steady.p99,
      lightRps: LIGHT_RPS,
      saturatedP50Ms: hook.result.latency.p50,
      saturatedP99Ms: hook.result.latency.p99,
      rps,
      baselineRps: Math.round(baseline.result.requests.average),
      baselineP99Ms: baseline.result.latency.p99,
      baselinePacedP50Ms: baselinePaced.steady.p50,
      baselinePacedP99Ms: baselinePaced.steady.p99,
      baselineP99MsAtLight: baselineLight.steady.p99,
      clientStallMs: atTarget.clientStallMs,
      baselineClientStallMs: baselinePaced.clientStallMs,
      distinctClientStallMs: distinct.clientStallMs,
      serverStallMs: atTarget.server.stallMs,
      serverMajorGcs: atTarget.server.majorGcs,
      serverGcMaxMs: atTarget.server.gcMaxMs,
      baselineServerStallMs: baselinePaced.server.stallMs,
      ratio: Number(ratio.toFixed(3)),
      errors: [hook, light, atTarget, distinctLight, distinct].reduce((n, r) => n + r.errors + r.non2xx, 0),
      denied: outcomes.denied ?? 0,
      cpuMsPerAdmission: Number(cpuPerAdmission.toFixed(3)),
      apiRequests,
      apiWrites,
      meetsGoals,
      distinctP50Ms: distinct.steady.p50,
      distinctP99Ms: distinct.steady.p99,
      distinctP99MsAtLight: distinctLight.steady.p99,
      distinctPacedCpuMsPerAdmission: Number(distinct.cpuMsPerRequest.toFixed(3)),
      distinctCapacityPerSec: distinctCapacity,
      distinctConnectionsOpened: distinct.opened,
      meetsGoalsDistinct,
      handlerP50Us: handler.p50Us,
      handlerP99Us: handler.p99Us,
      handlerPerSec: handler.perSec,
      handlerDistinctP50Us: handlerDistinct.p50Us,
      handlerDistinctP99Us: handlerDistinct.p99Us,
      handlerDistinctPerSec: handlerDistinct.perSec,
      baselineCpuMsPerRequest: Number(cpuPerBaseline.toFixed(3)),
      cpuCapacityPerSec: capacity,
      pacedCpuMsPerAdmission: Number(atTarget.cpuMsPerRequest.toFixed(3)),
      baselinePacedCpuMsPerRequest: Number(baselinePaced.cpuMsPerRequest.toFixed(3)),
      connectionsOpened: atTarget.opened,
      pinned: affinity.pinned,
    }),
  );
}

// A child whose parent is gone (a crashed run) must not keep serving, or load the next run's machine.
if (process.send) process.on('disconnect', () => process.exit(0));
if (process.argv.includes('--child')) void child();
else if (process.argv.includes('--api')) void apiChild();
else
  parent().catch((err) => {
    console.error(err);
    process.exit(1);
  });

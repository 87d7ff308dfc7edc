/**
 * The HTTPS front of the webhook: one POST path, a body limit large enough for any pod (an UPDATE
 * review carries two objects of up to ~1.5 MiB), keep-alive longer than the API server's idle reuse
 * so it never writes to a socket we just closed, hot TLS reload, a graceful drain, and new connections
 * let in one per turn of the event loop (handshake-gate.ts), so that a burst of TLS handshakes does
 * not hold up the requests on open connections.
 * Errors inside the handler become a denial (HTTP 200, allowed false, code 500), never an HTTP 500,
 * so the pod is refused whatever the webhook's failurePolicy.
 */
import * as https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { KeyPair } from '../serving/certificates';
import { HandshakeGate } from '../serving/handshake-gate';
import { AdmissionReview, deny, parseReview, toReview } from './review';

/** 7 MiB, as controller-runtime. */
export const MAX_BODY_BYTES = 7 * 1024 * 1024;
/** Above the API server's 90 s idle connection reuse. */
export const KEEP_ALIVE_MS = 120_000;

export interface AdmissionServerOptions {
  path: string;
  port: number;
  /** @default '0.0.0.0' */
  host?: string;
  tls: KeyPair;
  handle: (review: AdmissionReview) => Promise<AdmissionReview>;
  logger?: Logger;
  /** Called once per request with its outcome and duration, for metrics. */
  observe?: (outcome: 'allowed' | 'denied' | 'error' | 'bad-request', seconds: number) => void;
}

export class AdmissionServer {
  private server?: https.Server;
  private gate?: HandshakeGate;
  private inFlight = 0;
  private draining = false;
  private idle?: () => void;

  constructor(private readonly opts: AdmissionServerOptions) {}

  get port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? 0;
  }

  async listen(): Promise<void> {
    // Paused on connect: the gate starts each connection's TLS when the requests before it are served.
    const server = https.createServer({ cert: this.opts.tls.cert, key: this.opts.tls.key, pauseOnConnect: true }, (req, res) =>
      this.serve(req, res),
    );
    this.gate = new HandshakeGate(server);
    server.keepAliveTimeout = KEEP_ALIVE_MS;
    server.headersTimeout = KEEP_ALIVE_MS + 5_000;
    server.requestTimeout = 30_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port, this.opts.host ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
  }

  /** Serves new connections with this certificate; open connections keep theirs. */
  setCertificate(pair: KeyPair): void {
    this.server?.setSecureContext({ cert: pair.cert, key: pair.key });
  }

  /**
   * Stops accepting connections, lets in-flight reviews finish (at most `graceMs`), then closes
   * every socket, those still in their TLS handshake included. From the start, every answer says
   * `Connection: close` (see send).
   */
  async close(graceMs = 10_000): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    this.gate?.destroyHeld();
    server.closeIdleConnections();
    if (this.inFlight > 0) {
      await Promise.race([
        new Promise<void>((resolve) => (this.idle = resolve)),
        new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref()),
      ]);
    }
    this.gate?.destroyAll();
    await closed;
    this.server = undefined;
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    const observe = (o: Parameters<NonNullable<AdmissionServerOptions['observe']>>[0]) =>
      this.opts.observe?.(o, (performance.now() - started) / 1000);
    const url = req.url ?? '';
    const path = url.split('?')[0];
    if (path !== this.opts.path) return void this.send(res, 404, 'not found');
    if (req.method !== 'POST') return void this.send(res, 405, 'POST only');
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_BODY_BYTES) {
      observe('bad-request');
      return void this.send(res, 413, `body larger than ${MAX_BODY_BYTES} bytes`);
    }
    this.inFlight++;
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(c);
    });
    req.on('error', () => this.done());
    req.on('end', () => {
      void this.answer(res, tooLarge ? undefined : Buffer.concat(chunks).toString('utf8'), observe).finally(() => this.done());
    });
  }

  private async answer(
    res: ServerResponse,
    text: string | undefined,
    observe: (o: 'allowed' | 'denied' | 'error' | 'bad-request') => void,
  ): Promise<void> {
    if (text === undefined) {
      observe('bad-request');
      return this.send(res, 413, `body larger than ${MAX_BODY_BYTES} bytes`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      observe('bad-request');
      return this.send(res, 400, 'body: expected JSON');
    }
    const review = parseReview(body);
    if (typeof review === 'string') {
      observe('bad-request');
      return this.send(res, 400, review);
    }
    try {
      const out = await this.opts.handle(review);
      observe(out.response?.allowed ? 'allowed' : 'denied');
      this.send(res, 200, out);
    } catch (err) {
      this.opts.logger?.error({ err: String(err), uid: review.request?.uid }, 'admission failed');
      observe('error');
      this.send(res, 200, toReview(review, deny(`internal error: ${err instanceof Error ? err.message : String(err)}`, 500)));
    }
  }

  /** While draining, every answer says `Connection: close`, those to reviews that arrived before it too. */
  private send(res: ServerResponse, status: number, body: unknown): void {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': typeof body === 'string' ? 'text/plain' : 'application/json',
      'Content-Length': Buffer.byteLength(text),
      ...(this.draining ? { Connection: 'close' } : {}),
    });
    res.end(text);
  }

  private done(): void {
    this.inFlight--;
    if (this.inFlight === 0 && this.idle) {
      const idle = this.idle;
      this.idle = undefined;
      idle();
    }
  }
}

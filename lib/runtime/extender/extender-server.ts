/**
 * The extender's HTTP endpoint: plain HTTP on 127.0.0.1 only, since the kube-scheduler that calls it
 * runs in the same pod (TLS and authentication would guard nothing that loopback does not).
 * kube-scheduler treats any status but 200 as an error, so failures are answered 200 with `Error`.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { EXTENDER_VERBS } from '../../contract/env';
import type { Extender } from './extender';

export interface ExtenderServerOptions {
  extender: Extender;
  /** URL prefix, e.g. `/scheduler`. */
  prefix: string;
  port: number;
  /** @default '127.0.0.1' */
  host?: string;
  logger?: Logger;
  /** Called after each answer with the verb and its duration in seconds. */
  observe?: (verb: string, seconds: number, ok: boolean) => void;
}

/** Pods with large specs; well above what kube-scheduler sends with nodeCacheCapable. */
const MAX_BODY = 16 * 1024 * 1024;

export class ExtenderServer {
  private readonly server: http.Server;

  constructor(private readonly opts: ExtenderServerOptions) {
    this.server = http.createServer((req, res) => void this.serve(req, res));
    this.server.keepAliveTimeout = 60_000;
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = process.hrtime.bigint();
    const verb = (req.url ?? '').startsWith(`${this.opts.prefix}/`) ? (req.url ?? '').slice(this.opts.prefix.length + 1) : '';
    const send = (status: number, body: unknown, ok: boolean) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
      this.opts.observe?.(verb, Number(process.hrtime.bigint() - started) / 1e9, ok);
    };
    if (req.method !== 'POST' || !Object.values(EXTENDER_VERBS).includes(verb as never))
      return void send(404, { Error: `no extender verb at ${req.method} ${req.url}` }, false);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length;
      if (size > MAX_BODY) return void send(413, { Error: `request body over ${MAX_BODY} bytes` }, false);
      chunks.push(c);
    }
    let args: unknown;
    try {
      args = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return void send(400, { Error: 'request body is not JSON' }, false);
    }
    const e = this.opts.extender;
    try {
      if (verb === EXTENDER_VERBS.filter) return void send(200, await e.filter(args as never), true);
      if (verb === EXTENDER_VERBS.prioritize) return void send(200, await e.prioritize(args as never), true);
      const r = await e.bind(args as never);
      return void send(200, r, r.Error === '');
    } catch (err) {
      this.opts.logger?.error({ verb, err: String(err) }, 'extender call failed');
      return void send(200, verb === EXTENDER_VERBS.prioritize ? [] : { Error: String(err), Nodes: null, NodeNames: null }, false);
    }
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port, this.opts.host ?? '127.0.0.1', () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  get port(): number {
    return (this.server.address() as AddressInfo | null)?.port ?? 0;
  }

  close(): Promise<void> {
    this.server.closeIdleConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

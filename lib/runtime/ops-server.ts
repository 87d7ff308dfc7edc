/**
 * The plain-HTTP operations endpoint: `/metrics` (Prometheus), `/healthz` (process alive) and `/readyz`
 * (caches synced and watches healthy, plus any extra readiness checks such as the webhook's TLS).
 */
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface OpsServerOptions {
  port: number;
  /** @default '0.0.0.0' */
  host?: string;
  registry: Registry;
  /** Named readiness checks; `/readyz` is 200 only when all pass and lists the failing ones otherwise. */
  readiness: Record<string, () => boolean>;
}

/** A component `main` starts and stops: the ops server, the webhook server, the controller. */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  /** Stops accepting work and drains; called in reverse start order on shutdown. */
  stop(): Promise<void>;
  /** When present, /readyz reports ready only while this returns true. */
  ready?(): boolean;
}

export class OpsServer implements Component {
  readonly name = 'ops';
  private server?: http.Server;

  constructor(private readonly opts: OpsServerOptions) {}

  /** Bound port (useful with port 0). */
  get port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? this.opts.port;
  }

  async start(): Promise<void> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => server.listen(this.opts.port, this.opts.host ?? '0.0.0.0', resolve));
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    if (path === '/readyz') {
      const failing = Object.entries(this.opts.readiness).filter(([, check]) => !check()).map(([name]) => name);
      res.writeHead(failing.length ? 503 : 200, { 'Content-Type': 'text/plain' });
      return void res.end(failing.length ? `not ready: ${failing.join(', ')}` : 'ok');
    }
    if (path === '/metrics') {
      const body = await this.opts.registry.metrics();
      return void res.writeHead(200, { 'Content-Type': this.opts.registry.contentType }).end(body);
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
  }
}

/**
 * The plain-HTTP operations endpoint: `/metrics` (Prometheus), `/healthz` (liveness: the process and
 * every component that reports liveness) and `/readyz` (readiness: what the Services in front of the
 * pod need, i.e. the webhook able to admit), and the components' read-only routes (the web view):
 * GET only, any other method on them is refused.
 */
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Component, GetRoute } from '../shared/runtime-context';

export interface OpsServerOptions {
  port: number;
  /** @default '0.0.0.0' */
  host?: string;
  registry: Registry;
  /** Named readiness checks; `/readyz` is 200 only when all pass and lists the failing ones otherwise. */
  readiness: Record<string, () => boolean>;
  /** Named liveness checks; `/healthz` is 503 listing the failing ones, so the kubelet restarts the container. */
  liveness?: Record<string, () => boolean>;
  /** GET handlers by path; other methods on these paths get 405. */
  routes?: Readonly<Record<string, GetRoute>>;
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
    const answer = (checks: Record<string, () => boolean>, not: string) => {
      const failing = Object.entries(checks)
        .filter(([, check]) => !check())
        .map(([name]) => name);
      res.writeHead(failing.length ? 503 : 200, { 'Content-Type': 'text/plain' });
      res.end(failing.length ? `${not}: ${failing.join(', ')}` : 'ok');
    };
    if (path === '/healthz') return answer(this.opts.liveness ?? {}, 'not live');
    if (path === '/readyz') return answer(this.opts.readiness, 'not ready');
    if (path === '/metrics') {
      const body = await this.opts.registry.metrics();
      return void res.writeHead(200, { 'Content-Type': this.opts.registry.contentType }).end(body);
    }
    const route = this.opts.routes?.[path];
    if (route) {
      if (req.method !== 'GET') return void res.writeHead(405, { Allow: 'GET', 'Content-Type': 'text/plain' }).end('read-only: GET only');
      try {
        const { contentType, body } = await route();
        return void res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' }).end(body);
      } catch (err) {
        return void res.writeHead(500, { 'Content-Type': 'text/plain' }).end(String((err as Error).message ?? err));
      }
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
  }
}

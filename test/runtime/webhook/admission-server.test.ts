/**
 * The webhook's HTTPS server on shutdown: a review in flight finishes and is answered with
 * `Connection: close`, and close() ends with every connection closed, those still in their TLS
 * handshake included. The server's own closeAllConnections misses those: a connection let in but
 * silent kept close() waiting for TLS's 120 s handshake timeout, and one whose handshake finished
 * after closing began, until the client hung up.
 */
import { once } from 'node:events';
import * as https from 'node:https';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { AdmissionServer } from '../../../lib/runtime/webhook/admission-server';
import { allow, toReview, type AdmissionReview } from '../../../lib/runtime/webhook/review';
import { SERVICE_HOST, client, pod, review, testPki } from './fixtures';

const PATH = '/mutate-pods';
const pki = testPki();
let server: AdmissionServer;

async function start(handle: (r: AdmissionReview) => Promise<AdmissionReview> = async (r) => toReview(r, allow())): Promise<void> {
  server = new AdmissionServer({ path: PATH, port: 0, host: '127.0.0.1', tls: pki.serving, handle });
  await server.listen();
}

afterEach(() => server.close(0));

/** A TCP connection to the server, let in by its handshake gate, and the promise of its end. */
async function rawConnection(): Promise<{ raw: net.Socket; closed: Promise<unknown> }> {
  const raw = net.connect(server.port, '127.0.0.1');
  raw.on('error', () => undefined);
  await once(raw, 'connect');
  const closed = once(raw, 'close');
  // The gate lets a connection in on a later turn of the server's loop.
  await new Promise((resolve) => setTimeout(resolve, 20));
  return { raw, closed };
}

describe('AdmissionServer.close', () => {
  it('closes a connection that never starts its TLS handshake', async () => {
    await start();
    const { closed } = await rawConnection();
    await server.close(0);
    await closed;
  });

  it('closes a connection whose TLS handshake completes after closing began', async () => {
    await start();
    const { raw, closed } = await rawConnection();
    const closing = server.close(0);
    tls.connect({ socket: raw, servername: SERVICE_HOST, ca: pki.ca.cert }).on('error', () => undefined);
    await closing;
    await closed;
  });

  it('lets a review in flight finish, answered with Connection: close, then closes the connections', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let received!: () => void;
    const arrived = new Promise<void>((resolve) => (received = resolve));
    await start(async (r) => {
      received();
      await released;
      return toReview(r, allow());
    });
    const agent = client(pki.ca.cert);
    const body = JSON.stringify(review(pod()));
    const answer = new Promise<{ status?: number; connection?: string; allowed: boolean }>((resolve, reject) => {
      https
        .request(
          {
            host: '127.0.0.1',
            port: server.port,
            path: PATH,
            method: 'POST',
            agent,
            servername: SERVICE_HOST,
            headers: { 'Content-Type': 'application/json' },
          },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () =>
              resolve({ status: res.statusCode, connection: res.headers.connection, allowed: JSON.parse(text).response.allowed }),
            );
          },
        )
        .on('error', reject)
        .end(body);
    });
    await arrived;
    const { closed } = await rawConnection();
    const closing = server.close(10_000);
    release();
    expect(await answer).toEqual({ status: 200, connection: 'close', allowed: true });
    await closing;
    await closed;
    agent.destroy();
  });
});

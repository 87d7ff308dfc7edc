/**
 * The handshake gate: new connections are let in one per turn of the event loop, in arrival order,
 * after that turn's I/O; a connection gone while held is skipped; closing drops the held ones. Over
 * real TLS: every one of many simultaneous connections is served, with the certificate current when it
 * is let in.
 */
import { X509Certificate } from 'node:crypto';
import { EventEmitter } from 'node:events';
import * as https from 'node:https';
import type { Socket } from 'node:net';
import * as tls from 'node:tls';
import { HandshakeGate } from '../../../lib/runtime/serving/handshake-gate';
import { issueServingCert } from '../../../lib/runtime/serving/certificates';
import { SERVICE_HOST, testPki } from '../webhook/fixtures';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A stand-in for tls.Server: records which sockets its TLS listener was given. */
function fakeServer() {
  const server = new EventEmitter() as EventEmitter & { started: string[] };
  server.started = [];
  server.on('connection', (socket: Socket & { id: string }) => server.started.push(socket.id));
  return server;
}

function fakeSocket(id: string) {
  const socket = new EventEmitter() as EventEmitter & { id: string; destroyed: boolean; destroy(): void };
  socket.id = id;
  socket.destroyed = false;
  socket.destroy = () => {
    socket.destroyed = true;
  };
  return socket;
}

describe('HandshakeGate', () => {
  it('lets one connection in per turn of the event loop, in arrival order, none at once', async () => {
    const server = fakeServer();
    const gate = new HandshakeGate(server as unknown as tls.Server);
    for (const id of ['a', 'b', 'c']) server.emit('connection', fakeSocket(id));
    expect(server.started).toEqual([]);
    expect(gate.waiting).toBe(3);
    await nextTurn();
    expect(server.started).toEqual(['a']);
    await nextTurn();
    expect(server.started).toEqual(['a', 'b']);
    await nextTurn();
    expect(server.started).toEqual(['a', 'b', 'c']);
    expect(gate.waiting).toBe(0);
  });

  it('skips a connection that went away while held, and an error on a held one does not throw', async () => {
    const server = fakeServer();
    const gate = new HandshakeGate(server as unknown as tls.Server);
    const [a, b, c] = ['a', 'b', 'c'].map(fakeSocket);
    for (const s of [a, b, c]) server.emit('connection', s);
    b.emit('error', new Error('ECONNRESET'));
    b.destroy();
    await nextTurn();
    await nextTurn();
    expect(server.started).toEqual(['a', 'c']);
    expect(gate.waiting).toBe(0);
    // Let in: the gate's error listener is gone, TLS handles errors from here.
    expect(a.listenerCount('error')).toBe(0);
  });

  it('drops the held connections on close, and lets none of them in afterwards', async () => {
    const server = fakeServer();
    const gate = new HandshakeGate(server as unknown as tls.Server);
    const sockets = ['a', 'b', 'c'].map(fakeSocket);
    for (const s of sockets) server.emit('connection', s);
    await nextTurn();
    gate.destroyHeld();
    await nextTurn();
    await nextTurn();
    expect(server.started).toEqual(['a']);
    expect(sockets.map((s) => s.destroyed)).toEqual([false, true, true]);
  });
});

describe('HandshakeGate over TLS', () => {
  const pki = testPki();
  let server: https.Server;
  let gate: HandshakeGate;
  let port: number;

  beforeEach(async () => {
    server = https.createServer({ cert: pki.serving.cert, key: pki.serving.key, pauseOnConnect: true }, (req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    gate = new HandshakeGate(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });

  afterEach(async () => {
    gate.destroyHeld();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** A TLS connection and the serial of the certificate it was served. */
  const dial = () =>
    new Promise<{ socket: tls.TLSSocket; serial: string }>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername: SERVICE_HOST, ca: pki.ca.cert }, () =>
        resolve({ socket, serial: socket.getPeerCertificate().serialNumber }),
      );
      socket.on('error', reject);
    });

  it('serves every one of 40 connections dialled at once', async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 40, ca: pki.ca.cert });
    const answers = await Promise.all(
      Array.from(
        { length: 40 },
        () =>
          new Promise<string>((resolve, reject) => {
            https
              .request({ host: '127.0.0.1', port, servername: SERVICE_HOST, method: 'POST', path: '/', agent }, (res) => {
                let body = '';
                res.on('data', (c) => (body += c));
                res.on('end', () => resolve(body));
              })
              .on('error', reject)
              .end('{}');
          }),
      ),
    );
    agent.destroy();
    expect(answers).toEqual(Array(40).fill('ok'));
  });

  it('serves a connection held while the certificate changed with the new certificate', async () => {
    const renewed = issueServingCert(pki.ca, [SERVICE_HOST]);
    const held = dial();
    // The connection is accepted and held, not yet let in: then the certificate changes.
    while (gate.waiting === 0) await nextTurn();
    server.setSecureContext({ cert: renewed.cert, key: renewed.key });
    const { socket, serial } = await held;
    socket.destroy();
    const serialOf = (pem: string) => new X509Certificate(pem).serialNumber;
    expect(serialOf(renewed.cert)).not.toBe(serialOf(pki.serving.cert));
    expect(serial).toBe(serialOf(renewed.cert));
  });
});

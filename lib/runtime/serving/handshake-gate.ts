/**
 * New connections to a TLS server are let in one per turn of the event loop, after that turn's I/O.
 *
 * Why: a TLS handshake costs the server the CPU of some ten admissions (Node's OpenSSL). When
 * answers are late, the API server's webhook client (Go's transport) dials a new connection for each
 * request that finds none idle. Let in at once, those handshakes take the CPU from the requests on the
 * open connections, which wait longer, so more requests find none idle and more are dialled: a stall
 * of a few milliseconds grows into a storm of handshakes (measured: bench/README.md, `bench:webhook`).
 * Held back, the open connections are served first, a waiting request goes out on the first
 * one that frees up (Go's transport takes whichever is ready first, an idle connection or its new
 * dial), and the handshakes fill the gaps between requests. An idle server lets a connection in on
 * the next turn, so a lone connection waits microseconds.
 *
 * Node has no hook for this: the gate replaces the server's own `connection` listener (the one that
 * starts TLS) and calls it later. The server must be created with `pauseOnConnect: true`, so that a
 * held connection reads nothing until then.
 */
import type { Socket } from 'node:net';
import type { Server } from 'node:tls';

type ConnectionListener = (socket: Socket) => void;

const ignore = (): void => undefined;

export class HandshakeGate {
  private readonly held: Socket[] = [];
  /** Every connection accepted and not closed yet, held or let in, whatever its TLS or HTTP state. */
  private readonly open = new Set<Socket>();
  private readonly startTls: ConnectionListener[];
  private scheduled = false;

  constructor(private readonly server: Server) {
    this.startTls = server.listeners('connection') as ConnectionListener[];
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) => {
      // A reset while held must not throw; TLS adds its own handling when the socket is let in.
      socket.on('error', ignore);
      this.open.add(socket);
      socket.once('close', () => this.open.delete(socket));
      this.held.push(socket);
      this.schedule();
    });
  }

  /** Connections accepted and not let in yet. */
  get waiting(): number {
    return this.held.length;
  }

  /** Drops the held connections (closing): none has sent a request yet. */
  destroyHeld(): void {
    for (const socket of this.held.splice(0)) socket.destroy();
  }

  /**
   * Closes every connection (closing, once the drain is over). The server's `closeAllConnections`
   * sees only connections whose TLS handshake is done; one still in its handshake would finish it
   * later, idle, and keep `server.close()` waiting until the client hung up.
   */
  destroyAll(): void {
    this.held.length = 0;
    for (const socket of this.open) socket.destroy();
  }

  private schedule(): void {
    if (this.scheduled || this.held.length === 0) return;
    this.scheduled = true;
    setImmediate(() => this.letOneIn());
  }

  private letOneIn(): void {
    this.scheduled = false;
    let socket = this.held.shift();
    while (socket?.destroyed) socket = this.held.shift();
    if (socket) {
      socket.off('error', ignore);
      for (const listener of this.startTls) listener.call(this.server, socket);
    }
    this.schedule();
  }
}

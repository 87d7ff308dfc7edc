#!/usr/bin/env node
/**
 * A fake `nvidia-cuda-mps-control` that behaves like the real one (driver 580, as measured in
 * ../shared/gpu/h100-driver-580/README.md and ../shared/gpu/h200-driver-580/README.md, logs t4e-t4g)
 * for every command the node agent uses.
 *
 *   -f / -d [-M]       run the control daemon (foreground / background): it listens on
 *                      $CUDA_MPS_PIPE_DIRECTORY/control, writes its pid to nvidia-cuda-mps-control.pid
 *                      there and logs to $CUDA_MPS_LOG_DIRECTORY/control.log. A `control` file already
 *                      there stops it, as a stale socket stops the real one. `-M` (multi-user): one
 *                      server owned by the daemon's user serves clients of every uid at once; only root
 *                      may start it.
 *   (no argument)      the front end: each stdin line is a command sent to the daemon, each answer
 *                      printed (a refusal too, with exit status 0, as the real one); with no daemon it
 *                      fails as the real one does.
 *   client <uid>       an MPS client: prints `ready <server> <pct> <dev>=<limit>,...` (the settings its
 *                      server had when it joined) and stays connected until terminated.
 *
 * Who asks: the real daemon reads the caller's uid from its socket; the fake takes the front end's
 * uid, or $FAKE_MPS_UID (a test standing for a tenant, e.g. host uid 100000 in a user namespace).
 * Settings (`set_*`) may be changed only by root or the daemon's user, and a server's own settings
 * also by the uid the server runs as: without `-M` a server runs as its first client's uid, so that
 * tenant may raise its own server's limits (measured); with `-M` servers are the daemon's (root's).
 * A server takes the daemon's defaults when it starts: later defaults reach only later servers, and
 * a server's own settings reach its later clients. Without `-M` one server per Linux user: a client
 * of another uid waits until the current server has no clients.
 * $FAKE_MPS_HANG=1 makes a started daemon stop answering (a wedged daemon); $FAKE_MPS_NO_SERVER=1
 * makes `start_server` start nothing (a GPU where a server cannot come up).
 */
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const pipeDir = process.env.CUDA_MPS_PIPE_DIRECTORY || '/tmp/nvidia-mps';
const logDir = process.env.CUDA_MPS_LOG_DIRECTORY || '/var/log/nvidia-mps';
const control = path.join(pipeDir, 'control');
const pidFile = path.join(pipeDir, 'nvidia-cuda-mps-control.pid');
const args = process.argv.slice(2);
const callerUid = () => Number(process.env.FAKE_MPS_UID ?? process.getuid());

function log(line) {
  try { fs.appendFileSync(path.join(logDir, 'control.log'), `[${new Date().toISOString()} Control ${process.pid}] ${line}\n`); } catch { /* no log dir */ }
}

const refusal = (uid) =>
  `Insufficient privileges for UID ${uid}. Control deamon settings can only be modified by the user who started it or by the root user.`;

function daemon(multiUser) {
  const owner = callerUid();
  if (fs.existsSync(control)) {
    process.stderr.write('An instance of this daemon is already running\n');
    process.exit(1);
  }
  const state = { pct: 100, mem: new Map(), servers: new Map(), nextServer: 1000 + (process.pid % 1000) * 10, pending: [] };
  const startServer = (uid) => {
    const s = { pid: state.nextServer++, uid: multiUser ? owner : uid, pct: state.pct, mem: new Map(state.mem), clients: new Map() };
    state.servers.set(s.pid, s);
    log(`Starting new server ${s.pid} for user ${s.uid}`);
    return s;
  };
  const current = () => [...state.servers.values()][0];
  const admit = () => {
    while (state.pending.length > 0) {
      const next = state.pending[0];
      let s = current();
      if (s && !multiUser && s.uid !== next.uid) {
        if (s.clients.size > 0) return;
        log(`Server ${s.pid} exited with status 0`);
        state.servers.delete(s.pid);
        s = undefined;
      }
      s ??= startServer(next.uid);
      state.pending.shift();
      s.clients.set(next.pid, next.socket);
      next.socket.write(`ready ${s.pid} ${s.pct} ${[...s.mem].map(([d, v]) => `${d}=${v}`).join(',')}\n`);
    }
  };
  const answer = (cmd, socket, uid) => {
    const [op, ...rest] = cmd.trim().split(/\s+/);
    const privileged = uid === 0 || uid === owner;
    const server = state.servers.get(Number(rest[0]));
    if (op.startsWith('set_')) {
      // The server's own settings also yield to the uid it runs as; the defaults only to root and the owner.
      const allowed = privileged || (!op.startsWith('set_default_') && server && server.uid === uid);
      if (!allowed) return refusal(uid);
    }
    switch (op) {
      case 'set_default_active_thread_percentage': state.pct = Number(rest[0]); return `${state.pct.toFixed(1)}`;
      case 'get_default_active_thread_percentage': return `${state.pct.toFixed(1)}`;
      case 'set_default_device_pinned_mem_limit': state.mem.set(rest[0], rest[1]); return '';
      case 'get_default_device_pinned_mem_limit': return state.mem.get(rest[0]) ?? '0M';
      case 'set_active_thread_percentage': if (!server) return `Server ${rest[0]} not found`; server.pct = Number(rest[1]); return `${server.pct.toFixed(1)}`;
      case 'get_active_thread_percentage': return server ? `${server.pct.toFixed(1)}` : `Server ${rest[0]} not found`;
      case 'set_device_pinned_mem_limit': if (!server) return `Server ${rest[0]} not found`; server.mem.set(rest[1], rest[2]); return '';
      case 'get_device_pinned_mem_limit': return server ? (server.mem.get(rest[1]) ?? '0M') : `Server ${rest[0]} not found`;
      case 'get_server_list': return [...state.servers.keys()].join('\n');
      case 'get_client_list': return server ? [...server.clients.keys()].join('\n') : '';
      case 'terminate_client': {
        const c = server?.clients.get(Number(rest[1]));
        if (!c) return 'Client not found';
        c.end('terminated\n');
        server.clients.delete(Number(rest[1]));
        admit();
        return '0';
      }
      case 'start_server': if (process.env.FAKE_MPS_NO_SERVER !== '1' && (!current() || multiUser)) startServer(Number(rest[1] ?? 0)); return '';
      case 'client': {
        const [pid, cuid] = rest.map(Number);
        const busy = current() && !multiUser && current().uid !== cuid;
        log(`NEW CLIENT ${pid} from user ${cuid}: ${busy ? 'Server is not ready, push client to pending list' : 'Server already exists'}`);
        state.pending.push({ pid, uid: cuid, socket });
        socket.on('close', () => {
          for (const s of state.servers.values()) s.clients.delete(pid);
          state.pending = state.pending.filter((p) => p.pid !== pid);
          admit();
        });
        admit();
        return undefined;
      }
      case 'quit':
        log('Cmd:quit');
        for (const s of state.servers.values()) for (const c of s.clients.values()) c.end('terminated\n');
        listener.close();
        fs.rmSync(control, { force: true });
        fs.rmSync(pidFile, { force: true });
        setImmediate(() => process.exit(0));
        return '';
      default: return `Unrecognized command ${op}`;
    }
  };
  const listener = net.createServer((socket) => {
    if (process.env.FAKE_MPS_HANG === '1') return; // accepts, never answers
    let buf = '';
    let uid;
    socket.on('data', (d) => {
      buf += d;
      for (let i; (i = buf.indexOf('\n')) >= 0;) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        // The first line names the caller: what the real daemon reads from the socket's credentials.
        if (uid === undefined) { uid = Number(line.replace(/^uid /, '')); continue; }
        const out = answer(line, socket, uid);
        if (out !== undefined) socket.write(`${out}\n\0`);
      }
    });
    socket.on('error', () => undefined);
  });
  listener.listen(control, () => {
    fs.chmodSync(control, 0o777); // any uid reaches it (the folder's mode decides); settings check the uid
    fs.writeFileSync(pidFile, `${process.pid}\n`);
    log(`Starting control daemon${multiUser ? ' (multi-user server)' : ''}`);
  });
  const stop = () => { fs.rmSync(control, { force: true }); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function frontEnd() {
  const lines = fs.readFileSync(0, 'utf8').split('\n').filter((l) => l.trim() !== '');
  const socket = net.connect(control);
  socket.on('error', () => { process.stderr.write('Cannot find MPS control daemon process\n'); process.exit(1); });
  socket.on('connect', () => {
    socket.write(`uid ${callerUid()}\n`);
    let i = 0;
    let buf = '';
    const send = () => (i < lines.length ? socket.write(`${lines[i++]}\n`) : socket.end());
    socket.on('data', (d) => {
      buf += d;
      for (let j; (j = buf.indexOf('\0')) >= 0;) {
        const out = buf.slice(0, j).replace(/\n$/, '');
        buf = buf.slice(j + 1);
        if (out !== '') process.stdout.write(`${out}\n`);
        send();
      }
    });
    socket.on('close', () => process.exit(0));
    send();
  });
}

/** A client process: connects as `uid`, prints `ready <server> <pct> <mem>` once served, stays until terminated. */
function client(uid) {
  const socket = net.connect(control);
  socket.on('error', (e) => { process.stderr.write(`mps client: ${e.message}\n`); process.exit(1); });
  socket.on('connect', () => socket.write(`uid ${uid}\nclient ${process.pid} ${uid}\n`));
  socket.on('data', (d) => process.stdout.write(String(d)));
  socket.on('close', () => process.exit(0));
}

const multiUser = args.includes('-M');
if (multiUser && callerUid() !== 0 && (args.includes('-f') || args.includes('-d'))) {
  process.stderr.write('Only root user may enable -multiuser-server!\n');
  process.exit(1);
}
if (args.includes('-f')) daemon(multiUser);
else if (args.includes('-d')) {
  require('node:child_process').spawn(process.execPath, [__filename, ...args.map((a) => (a === '-d' ? '-f' : a))], { detached: true, stdio: 'ignore', env: process.env }).unref();
} else if (args[0] === 'client') client(Number(args[1] ?? process.getuid()));
else frontEnd();

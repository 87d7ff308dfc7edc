#!/usr/bin/env node
/**
 * A fake `nvidia-cuda-mps-control` that behaves like the real one (driver 580, ../shared/gpu/
 * h100-driver-580/README.md) for every command the node agent's MPS supervisor uses.
 *
 *   -f / -d            run the control daemon (foreground / background): it listens on
 *                      $CUDA_MPS_PIPE_DIRECTORY/control and logs to $CUDA_MPS_LOG_DIRECTORY/control.log.
 *                      A `control` file already there stops it, as a stale socket stops the real one.
 *   (no argument)      the front end: each stdin line is a command sent to the daemon, each answer
 *                      printed; with no daemon it fails as the real one does.
 *
 * Commands: set_default_active_thread_percentage, get_default_active_thread_percentage,
 * set_default_device_pinned_mem_limit, get_default_device_pinned_mem_limit, get_server_list,
 * get_client_list, terminate_client, start_server -uid, quit. Clients are this script run with
 * `client <uid>` (they stay connected until terminated): one server per Linux user, as the real
 * daemon does; a client of another uid waits in a queue until the current server has no clients.
 * A server takes the daemon's defaults when it starts (later defaults reach only later servers).
 * $FAKE_MPS_HANG=1 makes a started daemon stop answering (a wedged daemon).
 */
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const pipeDir = process.env.CUDA_MPS_PIPE_DIRECTORY || '/tmp/nvidia-mps';
const logDir = process.env.CUDA_MPS_LOG_DIRECTORY || '/var/log/nvidia-mps';
const control = path.join(pipeDir, 'control');
const args = process.argv.slice(2);

function log(line) {
  try {
    fs.appendFileSync(path.join(logDir, 'control.log'), `[${new Date().toISOString()} Control ${process.pid}] ${line}\n`);
  } catch {
    /* no log dir */
  }
}

function daemon() {
  if (fs.existsSync(control)) {
    process.stderr.write('An instance of this daemon is already running\n');
    process.exit(1);
  }
  const state = { pct: 100, mem: new Map(), server: undefined, nextServer: 1000 + (process.pid % 1000) * 10, pending: [] };
  const startServer = (uid) => {
    state.server = { pid: state.nextServer++, uid, pct: state.pct, mem: new Map(state.mem), clients: new Map() };
    log(`Starting new server ${state.server.pid} for user ${uid}`);
  };
  const admit = () => {
    while (state.pending.length > 0) {
      const next = state.pending[0];
      if (state.server && state.server.uid !== next.uid) {
        if (state.server.clients.size > 0) return;
        log(`Server ${state.server.pid} exited with status 0`);
        state.server = undefined;
      }
      if (!state.server) startServer(next.uid);
      state.pending.shift();
      state.server.clients.set(next.pid, next.socket);
      next.socket.write(`ready ${state.server.pid} ${state.server.pct} ${[...state.server.mem].map(([d, v]) => `${d}=${v}`).join(',')}\n`);
    }
  };
  const answer = (cmd, socket) => {
    const [op, ...rest] = cmd.trim().split(/\s+/);
    const s = state.server;
    switch (op) {
      case 'set_default_active_thread_percentage':
        state.pct = Number(rest[0]);
        return `${state.pct.toFixed(1)}`;
      case 'get_default_active_thread_percentage':
        return `${state.pct.toFixed(1)}`;
      case 'set_default_device_pinned_mem_limit':
        state.mem.set(rest[0], rest[1]);
        return '';
      case 'get_default_device_pinned_mem_limit':
        return state.mem.get(rest[0]) ?? '0M';
      case 'get_server_list':
        return s ? String(s.pid) : '';
      case 'get_client_list':
        return s && String(s.pid) === rest[0] ? [...s.clients.keys()].join('\n') : '';
      case 'terminate_client': {
        const c = s && String(s.pid) === rest[0] ? s.clients.get(Number(rest[1])) : undefined;
        if (!c) return 'Client not found';
        c.end('terminated\n');
        s.clients.delete(Number(rest[1]));
        admit();
        return '';
      }
      case 'start_server':
        if (!s) startServer(Number(rest[1] ?? 0));
        return '';
      case 'client': {
        const [pid, uid] = rest.map(Number);
        log(
          `NEW CLIENT ${pid} from user ${uid}: ${s && s.uid !== uid ? 'Server is not ready, push client to pending list' : 'Server already exists'}`,
        );
        state.pending.push({ pid, uid, socket });
        socket.on('close', () => {
          state.server?.clients.delete(pid);
          state.pending = state.pending.filter((p) => p.pid !== pid);
          admit();
        });
        admit();
        return undefined;
      }
      case 'quit':
        log('Cmd:quit');
        for (const c of s?.clients.values() ?? []) c.end('terminated\n');
        server.close();
        fs.rmSync(control, { force: true });
        setImmediate(() => process.exit(0));
        return '';
      default:
        return `Unrecognized command ${op}`;
    }
  };
  const server = net.createServer((socket) => {
    if (process.env.FAKE_MPS_HANG === '1') return; // accepts, never answers
    let buf = '';
    socket.on('data', (d) => {
      buf += d;
      for (let i; (i = buf.indexOf('\n')) >= 0;) {
        const out = answer(buf.slice(0, i), socket);
        buf = buf.slice(i + 1);
        if (out !== undefined) socket.write(`${out}\n\0`);
      }
    });
    socket.on('error', () => undefined);
  });
  server.listen(control, () => log('Starting control daemon'));
  const stop = () => {
    fs.rmSync(control, { force: true });
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function frontEnd() {
  const lines = fs
    .readFileSync(0, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const socket = net.connect(control);
  socket.on('error', () => {
    process.stderr.write('Cannot find MPS control daemon process\n');
    process.exit(1);
  });
  socket.on('connect', () => {
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
  socket.on('error', (e) => {
    process.stderr.write(`mps client: ${e.message}\n`);
    process.exit(1);
  });
  socket.on('connect', () => socket.write(`client ${process.pid} ${uid}\n`));
  socket.on('data', (d) => process.stdout.write(String(d)));
  socket.on('close', () => process.exit(0));
}

if (args[0] === '-f') daemon();
else if (args[0] === '-d') {
  require('node:child_process').spawn(process.execPath, [__filename, '-f'], { detached: true, stdio: 'ignore', env: process.env }).unref();
} else if (args[0] === 'client') client(Number(args[1] ?? process.getuid()));
else frontEnd();

/**
 * `in-netns.ts <command> [args...]` runs a command (`npm test`'s jest, `npm run bench:node`) inside a
 * network namespace and a mount namespace of its own, so that no call of kube-apiserver, the kubelet,
 * containerd or a pod can leave the machine, even misrouted, and every mount the real node makes
 * vanishes with the run.
 *
 * The network namespace has loopback and one veth pair, one end carrying the node's address
 * ({@link NODE_NET}.nodeIp, from the benchmarking range 198.18.0.0/15, which no network routes), a
 * route for the Services' range to it (for kube-proxy), and no default route: a dial to any other
 * address fails at once with ENETUNREACH. The node's bridge and
 * pod veths (test/support/node) are made inside it. When the command has ended, however it ended, what the
 * node changed outside the namespaces (cgroups, kernel sysctls, daemonized shims) is undone from the
 * state file the harness keeps (test/support/node/host.ts).
 *
 * Needs root, util-linux's `unshare` and iproute2's `ip`. Without them the command runs in the host's
 * network, and the real-node suites skip (fail under CI=true), saying why.
 */
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import * as path from 'node:path';
import { NODE_NET } from '../test/support/node/net';
import { HOST_STATE_FILE, nodeSlotHolder, undoHost } from '../test/support/node/host';

function usable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  for (const tool of ['unshare', 'ip']) if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `no \`${tool}\``;
  const probe = spawnSync('unshare', ['--net', '--mount', 'true']);
  if (probe.status !== 0) return `unshare --net --mount failed: ${probe.stderr.toString().trim()}`;
  return undefined;
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  if (!command) throw new Error('usage: in-netns.ts <command> [args...]');
  const why = usable();
  if (why) {
    console.log(`in-netns: ${why}; ${path.basename(command)} runs in the host network and the real-node suites skip`);
    const r = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, [NODE_NET.reasonEnv]: why } });
    process.exit(r.status ?? 1);
  }
  const setup = [
    'ip link set lo up',
    `ip link add ${NODE_NET.nodeLink} type veth peer name ${NODE_NET.nodeLinkPeer}`,
    `ip addr add ${NODE_NET.nodeIp}/32 dev ${NODE_NET.nodeLink}`,
    `ip link set ${NODE_NET.nodeLink} up`,
    `ip link set ${NODE_NET.nodeLinkPeer} up`,
    `ip route add ${NODE_NET.serviceCidr} dev ${NODE_NET.nodeLink}`,
    'exec "$@"',
  ].join(' && ');
  const child = spawn('unshare', ['--net', '--mount', '--propagation', 'private', '--', 'sh', '-c', setup, 'sh', command, ...args], {
    stdio: 'inherit',
    env: { ...process.env, [NODE_NET.stateEnv]: HOST_STATE_FILE },
  });
  // Ctrl-C reaches the command through the terminal; a SIGTERM to this runner is passed on.
  for (const sig of ['SIGTERM', 'SIGHUP'] as const) process.on(sig, () => child.kill(sig));
  const code = await new Promise<number>((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 128 + 15 : 1))));
  // A node of another run on this machine (it holds the slot) is left alone: its run undoes it.
  if (!nodeSlotHolder()) {
    const left = await undoHost(HOST_STATE_FILE);
    if (left.length) console.error(`in-netns: could not undo on the host:\n  ${left.join('\n  ')}`);
    else rmSync(HOST_STATE_FILE, { force: true });
  }
  process.exit(code);
}

void main();

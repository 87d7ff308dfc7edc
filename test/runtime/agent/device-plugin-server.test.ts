/**
 * The device plugin's registration when the kubelet does not answer yet: a restarting kubelet makes
 * its socket before it serves it, and no file event follows, so the plugin tries again soon (100 ms,
 * doubling) rather than on its watch interval: the pods the kubelet admits first need it registered.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DevicePluginServer } from '../../../lib/runtime/agent/device-plugin/server';
import { KUBELET_SOCKET } from '../../../lib/runtime/agent/device-plugin/api';

let dir: string;
let server: DevicePluginServer | undefined;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tf-dp-'));
});

afterEach(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a kubelet socket that refuses is tried again within the second, backing off, not only on the watch interval', async () => {
  // Not a socket: a connect to it is refused, as to a kubelet's socket made but not served yet.
  writeFileSync(path.join(dir, KUBELET_SOCKET), '');
  const failures: number[] = [];
  server = new DevicePluginServer({
    pluginDir: dir,
    resourceName: 'example.com/share',
    socketName: 'share.sock',
    devices: () => [],
    allocate: () => ({}) as never,
    preStart: async () => undefined,
    watchMs: 10_000,
    log: (msg, fields) => {
      if (msg.startsWith('device plugin registration failed')) failures.push(fields?.inMs as number);
    },
  });
  await server.start();
  await new Promise((r) => setTimeout(r, 1_000));
  // Tries at 0, 100, 300 and 700 ms (each try's own time adds a little).
  expect(failures.length).toBeGreaterThanOrEqual(3);
  expect(failures.slice(0, 3)).toEqual([100, 200, 400]);
  expect(server.isRegistered).toBe(false);
});

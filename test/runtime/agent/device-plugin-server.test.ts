/**
 * The device plugin's registration while a kubelet restarts. A restarting kubelet makes its socket
 * before it serves it, and no file event follows, so the plugin tries again soon (100 ms, doubling)
 * rather than on its watch interval: the pods the kubelet admits first need it registered. Before
 * that, the kubelet removes every socket of the folder, so the plugin waits for the new kubelet.sock.
 */
import * as grpc from '@grpc/grpc-js';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DevicePluginServer } from '../../../lib/runtime/agent/device-plugin/server';
import { deviceApi, KUBELET_SOCKET } from '../../../lib/runtime/agent/device-plugin/api';
import { eventually } from '../fixtures';

let dir: string;
let server: DevicePluginServer | undefined;
const kubelets: { stop(): Promise<void> }[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tf-dp-'));
});

afterEach(async () => {
  await server?.stop();
  await Promise.all(kubelets.splice(0).map((k) => k.stop()));
  rmSync(dir, { recursive: true, force: true });
});

/** A plugin whose failed registrations go to `failures` (the retry delay each logs). */
function plugin(failures: number[]): DevicePluginServer {
  return new DevicePluginServer({
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
}

/**
 * The kubelet's Registration service on kubelet.sock: as the kubelet does, Register dials the plugin's
 * socket back within the call's deadline and fails when it cannot. `dials`: 'ok' or why each failed.
 */
async function kubelet(): Promise<{ dials: string[]; stop(): Promise<void> }> {
  const { Registration, DevicePlugin } = deviceApi();
  const dials: string[] = [];
  const server = new grpc.Server();
  server.addService(Registration.service, {
    Register: (call: grpc.ServerUnaryCall<{ endpoint: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const client = new DevicePlugin(
        `unix://${path.join(dir, call.request.endpoint)}`,
        grpc.credentials.createInsecure(),
      ) as unknown as grpc.Client & {
        GetDevicePluginOptions(r: object, o: grpc.CallOptions, cb: (err: grpc.ServiceError | null) => void): void;
      };
      client.GetDevicePluginOptions({}, { deadline: call.getDeadline() }, (err) => {
        client.close();
        dials.push(err ? err.message : 'ok');
        cb(err ? { code: grpc.status.UNKNOWN, details: `failed to dial device plugin: ${err.message}` } : null, {});
      });
    },
  });
  const socket = path.join(dir, KUBELET_SOCKET);
  await new Promise<void>((res, rej) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? rej(err) : res())),
  );
  let stopped: Promise<void> | undefined;
  const k = {
    dials,
    stop: () => (stopped ??= new Promise<void>((res) => server.tryShutdown(() => res())).then(() => rmSync(socket, { force: true }))),
  };
  kubelets.push(k);
  return k;
}

test('a kubelet socket that refuses is tried again within the second, backing off, not only on the watch interval', async () => {
  // Not a socket: a connect to it is refused, as to a kubelet's socket made but not served yet.
  writeFileSync(path.join(dir, KUBELET_SOCKET), '');
  const failures: number[] = [];
  server = plugin(failures);
  await server.start();
  await new Promise((r) => setTimeout(r, 1_000));
  // Tries at 0, 100, 300 and 700 ms (each try's own time adds a little).
  expect(failures.length).toBeGreaterThanOrEqual(3);
  expect(failures.slice(0, 3)).toEqual([100, 200, 400]);
  expect(server.isRegistered).toBe(false);
});

// The race this prevents, seen on a real node: the plugin made its socket again on the old kubelet.sock
// going, the new kubelet's sweep removed it, and the kubelet failed to dial it for Register's 5 s,
// admitting (and failing) a pod that asked for a share meanwhile.
test('a restarting kubelet: the plugin leaves the folder alone while kubelet.sock is missing, then registers at once on the new one', async () => {
  const old = await kubelet();
  const failures: number[] = [];
  server = plugin(failures);
  await server.start();
  expect([old.dials, server.isRegistered]).toEqual([['ok'], true]);
  await old.stop();
  await new Promise((r) => setTimeout(r, 700));
  expect([failures, server.isRegistered]).toEqual([[], false]);
  // The new kubelet sweeps the folder's sockets, then serves kubelet.sock.
  rmSync(path.join(dir, 'share.sock'));
  const fresh = await kubelet();
  await eventually(() => expect(server?.isRegistered).toBe(true), 1_000, 20);
  expect([fresh.dials, failures, existsSync(path.join(dir, 'share.sock'))]).toEqual([['ok'], [], true]);
});

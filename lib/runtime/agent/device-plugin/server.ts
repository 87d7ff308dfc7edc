/**
 * A kubelet device plugin over gRPC (@grpc/grpc-js, the maintained gRPC library for Node.js): serves
 * the DevicePlugin service on a socket in the kubelet's device-plugin folder, registers it with the
 * kubelet, streams the devices to ListAndWatch, and answers Allocate and PreStartContainer through
 * its handlers (registered with `pre_start_required`, so the kubelet calls PreStartContainer before
 * every start of a container that holds devices, restarts and reboots included). When the kubelet
 * restarts it removes every plugin socket and forgets its plugins; the plugin notices its socket gone
 * (or the kubelet's replaced) and, once the new kubelet's socket is there, serves and registers again.
 */
import * as grpc from '@grpc/grpc-js';
import { Serial } from '../../shared/serial';
import { existsSync, FSWatcher, rmSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';
import {
  ContainerAllocateResponse,
  Device,
  DEVICE_PLUGIN_VERSION,
  deviceApi,
  DevicePluginOptions as ApiOptions,
  KUBELET_SOCKET,
} from './api';

/** The kubelet calls PreStartContainer; no preferred allocation (the ids name no GPU). */
const OPTIONS: ApiOptions = { pre_start_required: true, get_preferred_allocation_available: false };

/** The first retry after a failed registration, doubled after each failure up to the watch interval. */
const FIRST_RETRY_MS = 100;

export interface DevicePluginOptions {
  /** The kubelet's device-plugin folder (`/var/lib/kubelet/device-plugins`). */
  readonly pluginDir: string;
  /** Extended resource name, e.g. tensor-fusion.ai/share. */
  readonly resourceName: string;
  /** Our socket's file name in pluginDir. */
  readonly socketName: string;
  /** The devices to advertise now. */
  readonly devices: () => Device[];
  /** What one container gets for the device ids the kubelet chose; throws to fail the pod's admission. */
  readonly allocate: (deviceIds: string[]) => ContainerAllocateResponse;
  /** Runs before each start of a container holding `deviceIds`; rejects to keep the container from starting. */
  readonly preStart: (deviceIds: string[]) => Promise<void>;
  /** How often the kubelet's and our socket are checked. @default 2000 */
  readonly watchMs?: number;
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

type Stream = grpc.ServerWritableStream<unknown, { devices: Device[] }>;

export class DevicePluginServer {
  private server: grpc.Server | undefined;
  private readonly streams = new Set<Stream>();
  private timer: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;
  /** One check of the sockets at a time; an event during one asks for another after it. */
  private readonly checks = new Serial(() => this.watchOnce());
  private kubeletIno: number | undefined;
  private registered = false;
  private retryMs = FIRST_RETRY_MS;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: DevicePluginOptions) {}

  private get socket(): string {
    return join(this.opts.pluginDir, this.opts.socketName);
  }

  /** Serves and registers (retried soon, then on the watch interval, until the kubelet accepts). */
  async start(): Promise<void> {
    await this.register();
    this.timer = setInterval(() => this.check(), this.opts.watchMs ?? 2_000);
    this.timer.unref();
    // A restarted kubelet admits its pods as soon as its pod sources sync: a plugin not registered by
    // then fails their admission. So the folder is watched, and a new kubelet.sock is answered at once.
    try {
      // Only the kubelet's socket: our own socket's events would start a check that makes it again.
      this.watcher = watch(this.opts.pluginDir, (_event, file) => {
        if (file === KUBELET_SOCKET) this.check();
      });
      this.watcher.on('error', () => undefined); // the interval still checks
    } catch {
      /* no inotify here: the interval alone */
    }
  }

  /**
   * The kubelet accepted the last registration and its socket is the one it answered on: a restarted
   * kubelet has forgotten the plugin, and refuses pods that ask for the resource until it registers again.
   */
  get isRegistered(): boolean {
    return this.registered && inode(join(this.opts.pluginDir, KUBELET_SOCKET)) === this.kubeletIno;
  }

  /** Sends the current devices to every ListAndWatch stream (health changed). */
  update(): void {
    const devices = this.opts.devices();
    for (const s of this.streams) s.write({ devices });
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    clearTimeout(this.retryTimer);
    this.watcher?.close();
    await this.checks.settled();
    await this.close();
  }

  private check(): void {
    void this.checks.run();
  }

  private async watchOnce(): Promise<void> {
    if (this.isRegistered && existsSync(this.socket)) return;
    // No kubelet socket: a kubelet is starting. Its device manager removes every socket in this folder,
    // then makes kubelet.sock; a socket made before it is done may go (the kubelet then fails to dial it
    // until Register's deadline, while it admits pods), so wait for kubelet.sock: its event comes back here.
    if (inode(join(this.opts.pluginDir, KUBELET_SOCKET)) === undefined) return;
    if (this.registered) this.opts.log?.('kubelet restarted or removed the plugin socket; registering again');
    await this.register();
  }

  /**
   * Serves and registers; after a failure, tries again soon rather than on the next interval. A
   * restarting kubelet makes its socket before it answers on it (ECONNREFUSED in between), no event
   * follows, and the pods it admits first fail their admission while this plugin is not registered.
   */
  private async register(): Promise<void> {
    try {
      await this.serveAndRegister();
      this.retryMs = FIRST_RETRY_MS;
    } catch (err) {
      this.opts.log?.('device plugin registration failed; retrying', { err: String(err), inMs: this.retryMs });
      clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => this.check(), this.retryMs);
      this.retryTimer.unref();
      this.retryMs = Math.min(2 * this.retryMs, this.opts.watchMs ?? 2_000);
    }
  }

  private async serveAndRegister(): Promise<void> {
    await this.close();
    rmSync(this.socket, { force: true });
    const server = new grpc.Server();
    server.addService(deviceApi().DevicePlugin.service, {
      GetDevicePluginOptions: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, OPTIONS),
      ListAndWatch: (call: Stream) => {
        this.streams.add(call);
        call.on('cancelled', () => this.streams.delete(call));
        call.on('close', () => this.streams.delete(call));
        call.write({ devices: this.opts.devices() });
      },
      GetPreferredAllocation: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { container_responses: [] }),
      Allocate: (
        call: grpc.ServerUnaryCall<{ container_requests: { devices_ids: string[] }[] }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        try {
          cb(null, { container_responses: call.request.container_requests.map((r) => this.opts.allocate(r.devices_ids)) });
        } catch (err) {
          cb({ code: grpc.status.FAILED_PRECONDITION, details: (err as Error).message });
        }
      },
      PreStartContainer: (call: grpc.ServerUnaryCall<{ devices_ids: string[] }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        this.opts
          .preStart(call.request.devices_ids)
          .then(() => cb(null, {}))
          .catch((err: Error) => cb({ code: grpc.status.FAILED_PRECONDITION, details: err.message }));
      },
    });
    await new Promise<void>((res, rej) =>
      server.bindAsync(`unix://${this.socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? rej(err) : res())),
    );
    this.server = server;
    this.kubeletIno = inode(join(this.opts.pluginDir, KUBELET_SOCKET));
    const Registration = deviceApi().Registration;
    const client = new Registration(
      `unix://${join(this.opts.pluginDir, KUBELET_SOCKET)}`,
      grpc.credentials.createInsecure(),
    ) as unknown as grpc.Client & {
      Register(req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null) => void): void;
    };
    try {
      await new Promise<void>((res, rej) =>
        client.Register(
          {
            version: DEVICE_PLUGIN_VERSION,
            endpoint: this.opts.socketName,
            resource_name: this.opts.resourceName,
            options: OPTIONS,
          },
          { deadline: Date.now() + 5_000 },
          (err) => (err ? rej(err) : res()),
        ),
      );
    } finally {
      client.close();
    }
    this.registered = true;
    this.opts.log?.('device plugin registered with the kubelet', { resource: this.opts.resourceName, socket: this.socket });
  }

  private async close(): Promise<void> {
    this.registered = false;
    for (const s of this.streams) s.end();
    this.streams.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((res) => server.tryShutdown(() => res()));
  }
}

function inode(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

/**
 * A fake kubelet for the node agent's unit tests, over the kubelet's generated gRPC services on unix
 * sockets in a temporary folder: the device-plugin Registration service (records each request),
 * the PodResources API (answers with a list the test sets), and a client of the plugin's own socket
 * that calls it as the kubelet does (ListAndWatch, Allocate, PreStartContainer); and, for a DRA
 * plugin, the plugin watcher's side: it dials the plugin's registration socket in `registryDir`
 * (GetInfo, NotifyRegistrationStatus) and calls the DRA service at the endpoint the plugin names.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as dp from '../../../lib/runtime/agent/kubelet/generated/deviceplugin-v1beta1';
import * as pr from '../../../lib/runtime/agent/kubelet/generated/podresources-v1';
import * as dra from '../../../lib/runtime/agent/kubelet/generated/dra-v1';
import * as reg from '../../../lib/runtime/agent/kubelet/generated/pluginregistration-v1';
import { kubeletServices, unary } from '../../../lib/runtime/agent/kubelet/load';

export interface FakeKubelet {
  /** The device-plugin folder (the plugin's socket goes here, beside kubelet.sock). */
  readonly pluginDir: string;
  /** The PodResources socket. */
  readonly podResourcesSocket: string;
  /** Registration requests received. */
  readonly registered: dp.RegisterRequest[];
  /** What PodResources List answers from now on. */
  podResources: pr.PodResources[];
  /** Calls the registered plugin on its socket, as the kubelet does. */
  allocate(ids: string[]): Promise<dp.ContainerAllocateResponse>;
  preStart(ids: string[]): Promise<void>;
  options(): Promise<dp.DevicePluginOptions>;
  /** The first ListAndWatch answer. */
  devices(): Promise<dp.Device[]>;
  /** The plugin watcher's folder (`/var/lib/kubelet/plugins_registry`). */
  readonly registryDir: string;
  /** Where DRA plugins put their service sockets (`/var/lib/kubelet/plugins`). */
  readonly pluginsDir: string;
  /** Registers the plugin whose registration socket is `socket` (file name in registryDir), as the plugin watcher does. */
  registerDra(socket: string): Promise<reg.PluginInfo>;
  /** Calls the registered DRA plugin. */
  prepare(claims: dra.Claim[]): Promise<dra.NodePrepareResourcesResponse>;
  unprepare(claims: dra.Claim[]): Promise<dra.NodeUnprepareResourcesResponse>;
  stop(): Promise<void>;
}

async function serve(server: grpc.Server, socket: string): Promise<void> {
  await new Promise<void>((res, rej) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? rej(err) : res())),
  );
}

export async function startFakeKubelet(): Promise<FakeKubelet> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-fake-kubelet-'));
  const registered: dp.RegisterRequest[] = [];
  const dpServices = kubeletServices(dp.DESCRIPTOR, dp.PACKAGE);
  const prServices = kubeletServices(pr.DESCRIPTOR, pr.PACKAGE);
  const draServices = kubeletServices(dra.DESCRIPTOR, dra.PACKAGE);
  const regServices = kubeletServices(reg.DESCRIPTOR, reg.PACKAGE);
  let draClient: grpc.Client | undefined;
  const fake: FakeKubelet = {
    pluginDir: dir,
    registryDir: path.join(dir, 'plugins_registry'),
    pluginsDir: path.join(dir, 'plugins'),
    registerDra: async (socket) => {
      const c = new regServices.Registration(`unix://${path.join(fake.registryDir, socket)}`, grpc.credentials.createInsecure());
      try {
        const info = await unary<reg.InfoRequest, reg.PluginInfo>(c, 'GetInfo', {}, 5_000);
        const ok = info.type === 'DRAPlugin' && info.supported_versions.includes('v1.DRAPlugin');
        await unary(c, 'NotifyRegistrationStatus', { plugin_registered: ok, error: ok ? '' : 'not a v1 DRA plugin' }, 5_000);
        draClient?.close();
        draClient = ok ? new draServices.DRAPlugin(`unix://${info.endpoint}`, grpc.credentials.createInsecure()) : undefined;
        return info;
      } finally {
        c.close();
      }
    },
    prepare: (claims) => unary(draPlugin(), 'NodePrepareResources', { claims }, 10_000),
    unprepare: (claims) => unary(draPlugin(), 'NodeUnprepareResources', { claims }, 10_000),
    podResourcesSocket: path.join(dir, 'pod-resources.sock'),
    registered,
    podResources: [],
    allocate: async (ids) =>
      (await unary<dp.AllocateRequest, dp.AllocateResponse>(plugin(), 'Allocate', { container_requests: [{ devices_ids: ids }] }, 5_000))
        .container_responses[0],
    preStart: async (ids) => {
      await unary(plugin(), 'PreStartContainer', { devices_ids: ids }, 10_000);
    },
    options: () => unary(plugin(), 'GetDevicePluginOptions', {}, 5_000),
    devices: () =>
      new Promise((resolve, reject) => {
        const stream = (
          plugin() as unknown as { ListAndWatch(r: object): grpc.ClientReadableStream<dp.ListAndWatchResponse> }
        ).ListAndWatch({});
        stream.once('data', (r: dp.ListAndWatchResponse) => {
          resolve(r.devices);
          stream.cancel();
        });
        stream.once('error', (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? undefined : reject(e)));
      }),
    stop: async () => {
      client?.close();
      draClient?.close();
      await Promise.all([registration, podResources].map((s) => new Promise<void>((res) => s.tryShutdown(() => res()))));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  let client: grpc.Client | undefined;
  const plugin = (): grpc.Client => {
    const endpoint = registered.at(-1)?.endpoint;
    if (!endpoint) throw new Error('no plugin registered');
    client ??= new dpServices.DevicePlugin(`unix://${path.join(dir, endpoint)}`, grpc.credentials.createInsecure());
    return client;
  };
  const draPlugin = (): grpc.Client => {
    if (!draClient) throw new Error('no DRA plugin registered');
    return draClient;
  };
  const registration = new grpc.Server();
  registration.addService(dpServices.Registration.service, {
    Register: (call: grpc.ServerUnaryCall<dp.RegisterRequest, dp.Empty>, cb: grpc.sendUnaryData<dp.Empty>) => {
      registered.push(call.request);
      cb(null, {});
    },
  });
  await serve(registration, path.join(dir, 'kubelet.sock'));
  const podResources = new grpc.Server();
  podResources.addService(prServices.PodResourcesLister.service, {
    List: (_call: unknown, cb: grpc.sendUnaryData<pr.ListPodResourcesResponse>) => cb(null, { pod_resources: fake.podResources }),
    GetAllocatableResources: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.UNIMPLEMENTED }),
    Get: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.UNIMPLEMENTED }),
  });
  await serve(podResources, fake.podResourcesSocket);
  return fake;
}

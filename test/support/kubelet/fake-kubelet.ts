/**
 * A fake kubelet for the node agent's unit tests, over the kubelet's generated gRPC services on unix
 * sockets in a temporary folder: the device-plugin Registration service (records each request),
 * the PodResources API (answers with a list the test sets), and a client of the plugin's own socket
 * that calls it as the kubelet does (ListAndWatch, Allocate, PreStartContainer).
 */
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as dp from '../../../lib/runtime/agent/kubelet/generated/deviceplugin-v1beta1';
import * as pr from '../../../lib/runtime/agent/kubelet/generated/podresources-v1';
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
  const fake: FakeKubelet = {
    pluginDir: dir,
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

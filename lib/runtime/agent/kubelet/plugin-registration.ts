/**
 * The kubelet's plugin watcher (pluginregistration/v1): a plugin serves the Registration service on
 * a socket in /var/lib/kubelet/plugins_registry/; the kubelet finds the socket (an inotify watch, and
 * a walk of the folder when it starts, so a restarted kubelet finds a plugin that kept serving), asks
 * GetInfo for the plugin's type, name, endpoint and services, and reports the outcome through
 * NotifyRegistrationStatus. A plugin is deregistered when its socket goes.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { DESCRIPTOR, PACKAGE, PluginInfo, RegistrationStatus } from './generated/pluginregistration-v1';
import { kubeletServices } from './load';

/** The Registration service's client and definition. */
export function registrationApi(): grpc.ServiceClientConstructor {
  return kubeletServices(DESCRIPTOR, PACKAGE).Registration;
}

/** Serves `services` on the unix socket `socket` (made anew: a stale one is removed). */
export async function serveUnix(
  socket: string,
  services: Array<[grpc.ServiceDefinition, grpc.UntypedServiceImplementation]>,
): Promise<grpc.Server> {
  mkdirSync(dirname(socket), { recursive: true });
  rmSync(socket, { force: true });
  const server = new grpc.Server();
  for (const [def, impl] of services) server.addService(def, impl);
  await new Promise<void>((res, rej) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? rej(err) : res())),
  );
  return server;
}

/** Stops a server and removes its socket. */
export async function closeUnix(server: grpc.Server | undefined, socket: string): Promise<void> {
  if (server) await new Promise<void>((res) => server.tryShutdown(() => res()));
  rmSync(socket, { force: true });
}

/**
 * The Registration service's handlers for a plugin described by `info`; `onStatus` hears what the
 * kubelet made of it.
 */
export function registrationService(
  info: PluginInfo,
  onStatus: (s: RegistrationStatus) => void,
): [grpc.ServiceDefinition, grpc.UntypedServiceImplementation] {
  return [
    registrationApi().service,
    {
      GetInfo: (_call: unknown, cb: grpc.sendUnaryData<PluginInfo>) => cb(null, info),
      NotifyRegistrationStatus: (call: grpc.ServerUnaryCall<RegistrationStatus, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        onStatus(call.request);
        cb(null, {});
      },
    },
  ];
}

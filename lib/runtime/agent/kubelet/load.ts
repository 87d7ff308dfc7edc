/**
 * The kubelet's gRPC services from their generated descriptors (./generated, from the kubelet's own
 * protos), loaded once each through @grpc/proto-loader, so the agent bundle carries no .proto file.
 */
import * as grpc from '@grpc/grpc-js';
import { fromJSON } from '@grpc/proto-loader';

const loaded = new Map<object, Record<string, grpc.ServiceClientConstructor>>();

/**
 * The services of one generated package (its dotted name), by name. Field names as the protos spell them, 64-bit
 * integers as numbers (counts and ids), defaults filled in.
 */
export function kubeletServices(descriptor: object, pkg: string): Record<string, grpc.ServiceClientConstructor> {
  let services = loaded.get(descriptor);
  if (!services) {
    const def = fromJSON(descriptor as Parameters<typeof fromJSON>[0], { keepCase: true, defaults: true, longs: Number });
    // A dotted package name is a path of nested objects.
    services = pkg.split('.').reduce<unknown>((o, key) => (o as Record<string, unknown>)[key], grpc.loadPackageDefinition(def)) as Record<
      string,
      grpc.ServiceClientConstructor
    >;
    loaded.set(descriptor, services);
  }
  return services;
}

/** A unary call on a generated client, as a promise with a deadline. */
export function unary<Req, Res>(client: grpc.Client, method: string, request: Req, timeoutMs: number): Promise<Res> {
  const call = (
    client as unknown as Record<string, (r: Req, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: Res) => void) => void>
  )[method].bind(client);
  return new Promise((resolve, reject) =>
    call(request, { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(err) : resolve(res))),
  );
}

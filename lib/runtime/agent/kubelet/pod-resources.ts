/**
 * The kubelet's PodResources API (v1, GA): which pod and container hold which device ids. The kubelet
 * records a container's devices at admission, before any PreStartContainer call, so this names the
 * pod a device plugin's ids belong to without guessing.
 */
import * as grpc from '@grpc/grpc-js';
import { DESCRIPTOR, ListPodResourcesResponse, PACKAGE } from './generated/podresources-v1';
import { kubeletServices, unary } from './load';

/** The kubelet's PodResources socket. */
export const POD_RESOURCES_SOCKET = '/var/lib/kubelet/pod-resources/kubelet.sock';

/** A pod's container that holds device ids of a resource. */
export interface DeviceHolder {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
  /** Every id of the resource the container holds. */
  readonly ids: readonly string[];
}

/** Asks the kubelet for every pod's resources. */
export async function listPodResources(socket: string, timeoutMs = 5_000): Promise<ListPodResourcesResponse> {
  const Lister = kubeletServices(DESCRIPTOR, PACKAGE).PodResourcesLister;
  const client = new Lister(`unix://${socket}`, grpc.credentials.createInsecure());
  try {
    return await unary<object, ListPodResourcesResponse>(client, 'List', {}, timeoutMs);
  } finally {
    client.close();
  }
}

/**
 * The container that holds `ids` of `resource`: the one whose ids include them all. The kubelet never
 * gives an id to two live containers, except an init container's ids reused by a later container of
 * the same pod, so any holder found names the right pod.
 */
export function holderOf(list: ListPodResourcesResponse, resource: string, ids: readonly string[]): DeviceHolder | undefined {
  for (const p of list.pod_resources)
    for (const c of p.containers)
      for (const d of c.devices)
        if (d.resource_name === resource && ids.length > 0 && ids.every((id) => d.device_ids.includes(id)))
          return { namespace: p.namespace, pod: p.name, container: c.name, ids: d.device_ids };
  return undefined;
}

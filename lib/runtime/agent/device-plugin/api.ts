/**
 * The kubelet device-plugin API, `v1beta1`, from the descriptors generated from the kubelet's own
 * protos (../kubelet/generated/deviceplugin-v1beta1.ts).
 */
import type * as grpc from '@grpc/grpc-js';
import { DESCRIPTOR, PACKAGE } from '../kubelet/generated/deviceplugin-v1beta1';
import { kubeletServices } from '../kubelet/load';

export type { ContainerAllocateResponse, Device, DevicePluginOptions } from '../kubelet/generated/deviceplugin-v1beta1';

/** The API version the kubelet's Registration service accepts. */
export const DEVICE_PLUGIN_VERSION = 'v1beta1';
/** The kubelet's registration socket, in its device-plugin folder. */
export const KUBELET_SOCKET = 'kubelet.sock';
/** Device health values the kubelet knows. */
export const HEALTHY = 'Healthy';
export const UNHEALTHY = 'Unhealthy';

/** The two services. */
export function deviceApi(): { Registration: grpc.ServiceClientConstructor; DevicePlugin: grpc.ServiceClientConstructor } {
  const s = kubeletServices(DESCRIPTOR, PACKAGE);
  return { Registration: s.Registration, DevicePlugin: s.DevicePlugin };
}

/**
 * The kubelet's DRA plugin API, `v1`, from the descriptors generated from its own protos
 * (../kubelet/generated/dra-v1.ts), and the names the 1.36 kubelet registers a DRA plugin by
 * (pkg/kubelet/cm/dra/plugin: the plugin type `DRAPlugin`; its services as `<proto package>.<service>`).
 */
import type * as grpc from '@grpc/grpc-js';
import { DESCRIPTOR, PACKAGE } from '../kubelet/generated/dra-v1';
import { kubeletServices } from '../kubelet/load';

export type * from '../kubelet/generated/dra-v1';

/** The plugin type a DRA driver registers with (pluginregistration/v1 `DRAPlugin`). */
export const DRA_PLUGIN_TYPE = 'DRAPlugin';
/** The service the kubelet calls, as registration names it (dra/v1 `DRAPluginService`). */
export const DRA_PLUGIN_SERVICE = 'v1.DRAPlugin';

/** The DRAPlugin service. */
export function draApi(): grpc.ServiceClientConstructor {
  return kubeletServices(DESCRIPTOR, PACKAGE).DRAPlugin;
}

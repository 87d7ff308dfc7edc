/**
 * The kubelet device-plugin API, `v1beta1` (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1), as the
 * messages and services this agent uses, with the field numbers of the published api.proto. Loaded
 * with @grpc/proto-loader from text, so the agent bundle carries no .proto file.
 */
import * as grpc from '@grpc/grpc-js';
import { fromJSON } from '@grpc/proto-loader';
import { parse } from 'protobufjs';

/** The API version the kubelet's Registration service accepts. */
export const DEVICE_PLUGIN_VERSION = 'v1beta1';
/** The kubelet's registration socket, in its device-plugin folder. */
export const KUBELET_SOCKET = 'kubelet.sock';
/** Device health values the kubelet knows. */
export const HEALTHY = 'Healthy';
export const UNHEALTHY = 'Unhealthy';

const PROTO = `
syntax = "proto3";
package v1beta1;
service Registration { rpc Register(RegisterRequest) returns (Empty) {} }
message DevicePluginOptions { bool pre_start_required = 1; bool get_preferred_allocation_available = 2; }
message RegisterRequest { string version = 1; string endpoint = 2; string resource_name = 3; DevicePluginOptions options = 4; }
message Empty {}
service DevicePlugin {
  rpc GetDevicePluginOptions(Empty) returns (DevicePluginOptions) {}
  rpc ListAndWatch(Empty) returns (stream ListAndWatchResponse) {}
  rpc GetPreferredAllocation(PreferredAllocationRequest) returns (PreferredAllocationResponse) {}
  rpc Allocate(AllocateRequest) returns (AllocateResponse) {}
  rpc PreStartContainer(PreStartContainerRequest) returns (PreStartContainerResponse) {}
}
message ListAndWatchResponse { repeated Device devices = 1; }
message TopologyInfo { repeated NUMANode nodes = 1; }
message NUMANode { int64 ID = 1; }
message Device { string ID = 1; string health = 2; TopologyInfo topology = 3; }
message PreStartContainerRequest { repeated string devices_ids = 1; }
message PreStartContainerResponse {}
message PreferredAllocationRequest { repeated ContainerPreferredAllocationRequest container_requests = 1; }
message ContainerPreferredAllocationRequest { repeated string available_deviceIDs = 1; repeated string must_include_deviceIDs = 2; int32 allocation_size = 3; }
message PreferredAllocationResponse { repeated ContainerPreferredAllocationResponse container_responses = 1; }
message ContainerPreferredAllocationResponse { repeated string deviceIDs = 1; }
message AllocateRequest { repeated ContainerAllocateRequest container_requests = 1; }
message ContainerAllocateRequest { repeated string devices_ids = 1; }
message CDIDevice { string name = 1; }
message AllocateResponse { repeated ContainerAllocateResponse container_responses = 1; }
message ContainerAllocateResponse {
  map<string, string> envs = 1;
  repeated Mount mounts = 2;
  repeated DeviceSpec devices = 3;
  map<string, string> annotations = 4;
  repeated CDIDevice cdi_devices = 5;
}
message Mount { string container_path = 1; string host_path = 2; bool read_only = 3; }
message DeviceSpec { string container_path = 1; string host_path = 2; string permissions = 3; }
`;

/** A device the plugin advertises. */
export interface Device {
  ID: string;
  health: string;
}

/** What the kubelet adds to one container. */
export interface ContainerAllocateResponse {
  envs: Record<string, string>;
  mounts: { container_path: string; host_path: string; read_only: boolean }[];
  devices: { container_path: string; host_path: string; permissions: string }[];
}

interface Services {
  Registration: grpc.ServiceClientConstructor;
  DevicePlugin: grpc.ServiceClientConstructor;
}

let loaded: Services | undefined;

/** The two services, loaded once. */
export function deviceApi(): Services {
  if (!loaded) {
    const def = fromJSON(parse(PROTO, { keepCase: true }).root.toJSON(), { keepCase: true, defaults: true });
    loaded = grpc.loadPackageDefinition(def).v1beta1 as unknown as Services;
  }
  return loaded;
}

/** The tensor-fusion.ai pod annotation codec: keys, typed options, encode, decode, validate, merge. */
export * from './reference';
export type { UpstreamValueKind } from './value-kinds';
export type { GpuWorkloadOptions, GpuWorkloadOptionName, GpuWorkloadSettings } from './options';
export { encodeGpuWorkload } from './encode';
export { checkGpuWorkloadOptionValues } from './check';
export type { EncodedGpuWorkload, PodTemplateContext } from './encode';
export { decodeGpuAnnotations } from './decode';
export type { DecodedGpuWorkload } from './decode';
export { checkPoolName, checkObjectName, checkContainerName, POOL_NAME_MAX } from '../model/name-checks';
export { isDnsLabel, isDnsSubdomain } from '../k8s/names';
export { resolveWorkloadSettings, DEFAULT_IS_LOCAL_GPU, DEFAULT_GPU_COUNT, DEFAULT_GENERATE_WORKLOAD } from './merge';
export type { ResolvedWorkload, ResolvedWorkloadSettings, PoolDefaults, SettingSource } from './merge';

/** WorkloadProfile and TensorFusionWorkload: namespaced objects whose props are their spec. */
import { validateSpec } from '../api';
import type { WorkloadProfileSpecProps } from '../api/generated/api-props';
import { FieldIssue, fieldIssue, throwIfInvalid } from '../model/errors';
import { KubeObject } from '../k8s/object';
import { API_VERSION } from '../model/group';
import { checkMeta, NamespacedMetaProps, RenderContext, renderMeta } from './metadata';

/**
 * The local-GPU choice, spelled as everywhere else in this package's API (`isLocalGpu`, like
 * gpuWorkload's option and GpuPool's `defaultUsingLocalGpu`); written to the spec as `isLocalGPU`.
 */
export interface LocalGpuProps {
  /**
   * Run the pod on the GPU server of its worker (local mode) rather than reaching a remote worker.
   * @default the pool's `defaultUsingLocalGpu`, else false
   */
  readonly isLocalGpu?: boolean;
  /**
   * The spec's spelling of `isLocalGpu`, kept working; refused together with `isLocalGpu`.
   * @deprecated use `isLocalGpu`
   */
  readonly isLocalGPU?: boolean;
}

/**
 * Props of WorkloadProfile: its metadata plus every spec field, under the names of the YAML except
 * `isLocalGpu`.
 * @example
 * { name: 'default-profile', namespace: 'ml', isLocalGpu: true, poolName: 'default-pool', qos: 'medium',
 *   resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } } }
 */
export interface WorkloadProfileProps extends NamespacedMetaProps, LocalGpuProps, Omit<WorkloadProfileSpecProps, 'isLocalGPU'> {}

/** Props of TensorFusionWorkload: metadata plus its spec (the same fields as a WorkloadProfile). */
export interface TensorFusionWorkloadProps extends NamespacedMetaProps, LocalGpuProps, Omit<WorkloadProfileSpecProps, 'isLocalGPU'> {}

/** `isLocalGpu` and its deprecated spelling given together. */
function checkLocalGpu(props: LocalGpuProps): FieldIssue[] {
  return props.isLocalGpu !== undefined && props.isLocalGPU !== undefined
    ? [fieldIssue('isLocalGPU', props.isLocalGPU, 'nothing when isLocalGpu is set (isLocalGPU is its deprecated spelling)')]
    : [];
}

/** The spec: every prop but the metadata, `isLocalGpu` under its wire name, copied (no shared references). */
function splitMeta<T extends NamespacedMetaProps & LocalGpuProps>(props: T) {
  const { name: _name, namespace: _namespace, labels: _labels, annotations: _annotations, isLocalGpu, isLocalGPU, ...spec } = props;
  const local = isLocalGpu ?? isLocalGPU;
  return JSON.parse(JSON.stringify(local === undefined ? spec : { ...spec, isLocalGPU: local })) as Omit<
    T,
    keyof NamespacedMetaProps | 'isLocalGpu'
  >;
}

/**
 * Renders a WorkloadProfile.
 * @throws ValidationError naming every bad prop
 */
export function renderWorkloadProfile(
  name: string,
  props: WorkloadProfileProps,
  { context = `WorkloadProfile ${name}`, nameFromId }: RenderContext = {},
): KubeObject {
  throwIfInvalid([...checkMeta(name, props, undefined, nameFromId), ...checkLocalGpu(props)], context);
  const spec = splitMeta(props);
  throwIfInvalid(validateSpec('WorkloadProfile', spec), context);
  return { apiVersion: API_VERSION, kind: 'WorkloadProfile', metadata: renderMeta(name, props), spec };
}

/**
 * Renders a TensorFusionWorkload.
 * @throws ValidationError naming every bad prop
 */
export function renderTensorFusionWorkload(
  name: string,
  props: TensorFusionWorkloadProps,
  { context = `TensorFusionWorkload ${name}`, nameFromId }: RenderContext = {},
): KubeObject {
  throwIfInvalid([...checkMeta(name, props, undefined, nameFromId), ...checkLocalGpu(props)], context);
  const spec = splitMeta(props);
  throwIfInvalid(validateSpec('TensorFusionWorkload', spec), context);
  return { apiVersion: API_VERSION, kind: 'TensorFusionWorkload', metadata: renderMeta(name, props), spec };
}

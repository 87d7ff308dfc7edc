/** WorkloadProfile and TensorFusionWorkload: namespaced objects whose props are their spec. */
import { TensorFusionWorkloadSpec, validateSpec, WorkloadProfileSpec } from '../api';
import { throwIfInvalid } from '../errors';
import { KubeObject } from '../k8s-object';
import { API_VERSION } from '../labels';
import { checkMeta, NamespacedMetaProps, RenderContext, renderMeta } from './metadata';

/**
 * Props of WorkloadProfile: its metadata plus every spec field, under the same names as in the YAML.
 * @example
 * { name: 'default-profile', namespace: 'ml', isLocalGPU: true, poolName: 'default-pool', qos: 'medium',
 *   resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } } }
 */
export interface WorkloadProfileProps extends NamespacedMetaProps, WorkloadProfileSpec {}

/** Props of TensorFusionWorkload: metadata plus its spec (the WorkloadProfile spec and more). */
export interface TensorFusionWorkloadProps extends NamespacedMetaProps, TensorFusionWorkloadSpec {}

function splitMeta<T extends NamespacedMetaProps>(props: T) {
  const { name: _name, namespace: _namespace, labels: _labels, annotations: _annotations, ...spec } = props;
  return JSON.parse(JSON.stringify(spec)) as Omit<T, keyof NamespacedMetaProps>;
}

/**
 * Renders a WorkloadProfile.
 * @throws ValidationError naming every bad prop
 */
export function renderWorkloadProfile(name: string, props: WorkloadProfileProps, { context = `WorkloadProfile ${name}`, nameFromId }: RenderContext = {}): KubeObject {
  throwIfInvalid(checkMeta(name, props, undefined, nameFromId), context);
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
  throwIfInvalid(checkMeta(name, props, undefined, nameFromId), context);
  const spec = splitMeta(props);
  throwIfInvalid(validateSpec('TensorFusionWorkload', spec), context);
  return { apiVersion: API_VERSION, kind: 'TensorFusionWorkload', metadata: renderMeta(name, props), spec };
}

/**
 * A pod that names an existing TensorFusionWorkload the controller did not generate reuses it as it
 * is (TensorFusion's workload configuration guide): the controller never rewrites such a workload. So the pod's resolved share must be
 * the workload's; a pod that contradicts it is refused with both values, rather than admitted with
 * a share its workload does not have.
 */
import { ANNOTATION, ResolvedWorkloadSettings } from '../../annotations';
import type { TensorFusionWorkload } from '../../api';
import { FieldIssue, fieldIssue } from '../../model/errors';
import { formatBytes, parseQuantity } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- pod specs are compared as they come from the API server
type Spec = Record<string, any>;

/** One compared field: the pod's value, the workload's, how to show and compare them. */
interface Pair {
  readonly option: keyof typeof ANNOTATION;
  readonly path: string;
  readonly pod: unknown;
  readonly workload: unknown;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The issues of a pod (resolved settings `s`, pool `pool`) against the workload it reuses; empty when
 * every field the workload sets agrees. Quantities compare as numbers (`10` equals `10.0`, `1Gi`
 * equals `1073741824`).
 */
export function reuseIssues(s: ResolvedWorkloadSettings, pool: string, workload: TensorFusionWorkload): FieldIssue[] {
  const spec = (workload.spec ?? {}) as Spec;
  const res = (spec.resources ?? {}) as Spec;
  const quantity = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? parseQuantity(v) : undefined);
  const pairs: Pair[] = [
    { option: 'pool', path: 'poolName', pod: pool, workload: spec.poolName },
    { option: 'isLocalGpu', path: 'isLocalGPU', pod: s.isLocalGpu, workload: spec.isLocalGPU },
    { option: 'qos', path: 'qos', pod: s.qos, workload: spec.qos },
    { option: 'gpuCount', path: 'gpuCount', pod: s.gpuCount, workload: spec.gpuCount },
    { option: 'gpuModel', path: 'gpuModel', pod: s.gpuModel, workload: spec.gpuModel },
    // Replicas only when the pod says how many: unset means "whatever the workload has".
    { option: 'replicas', path: 'replicas', pod: s.replicas, workload: s.replicas === undefined ? undefined : spec.replicas },
    { option: 'tflopsRequest', path: 'resources.requests.tflops', pod: s.tflopsRequest, workload: quantity(res.requests?.tflops) },
    { option: 'tflopsLimit', path: 'resources.limits.tflops', pod: s.tflopsLimit, workload: quantity(res.limits?.tflops) },
    { option: 'vramRequest', path: 'resources.requests.vram', pod: s.vramRequest, workload: quantity(res.requests?.vram) },
    { option: 'vramLimit', path: 'resources.limits.vram', pod: s.vramLimit, workload: quantity(res.limits?.vram) },
  ];
  const show = (option: Pair['option'], v: unknown): unknown => {
    if (v === undefined) return undefined;
    if (option === 'tflopsRequest' || option === 'tflopsLimit') return formatTflops(v as number);
    if (option === 'vramRequest' || option === 'vramLimit') return formatBytes(v as number);
    return String(v);
  };
  const name = `${workload.metadata?.namespace}/${workload.metadata?.name}`;
  return pairs
    .filter((p) => p.workload !== undefined && !same(p.pod, p.workload))
    .map((p) =>
      fieldIssue(
        ANNOTATION[p.option],
        show(p.option, p.pod),
        `${JSON.stringify(show(p.option, p.workload))}, the spec.${p.path} of TensorFusionWorkload ${name}, which this pod reuses and which was not generated, so it is not changed`,
      ),
    );
}

/**
 * Alibaba's openb trace (trace-replay.ts) as the Kubernetes manifests `kubectl tf plan` reads: a
 * platform of one GPUPool and one Node per trace node, and one Pod per trace pod in trace order.
 * Planning them is the computation {@link allocatorRun} does on the same pods in the same order: every
 * GPU counts 1 TFLOPS and 1000 MiB of VRAM (the replay's 1000 abstract units), a pod asks
 * `gpu_milli`/1000 TFLOPS and `gpu_milli` MiB per GPU, and host memory is in bytes instead of MiB. Units
 * scaled uniformly leave every comparison the allocator makes as it was.
 */
import { renderGpuPool } from '../lib/render/gpu-pool';
import { ANNOTATION } from '../lib/annotations';
import { SCHEDULER_NAME } from '../lib/contract/object-names';
import { ENABLED_LABEL, GFD, poolMembershipLabel } from '../lib/model/metadata-keys';
import { HOSTNAME_LABEL } from '../lib/k8s/labels';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import type { TraceNode, TracePod } from './trace-replay';

/** The pool allocatorRun places into. */
export const OPENB_POOL = 'openb';
/** Namespace of the trace's pods. */
export const OPENB_NAMESPACE = 'openb';
/** VRAM per GPU in MiB: the replay's 1000 units per GPU. */
const GPU_MIB = 1000;

/**
 * The pool and nodes. The pool is the default one, with allocatorRun's settings: MinFragmentation,
 * TFLOPS not oversold (a ratio of 100), every trace model 1 TFLOPS, and a workload mix learned from
 * the requests (none declared). Nodes are written in trace order; the plan sorts them by name, which
 * is the trace's order too (allocatorRun adds them in trace order; ties fall to the seeded rank, then
 * to that order).
 */
export function openbPlatform(nodes: readonly TraceNode[]): K8sObject[] {
  const models = [...new Set(nodes.map((n) => n.model))].sort();
  const pool = renderGpuPool(OPENB_POOL, {
    isDefault: true,
    placement: 'MinFragmentation',
    tflopsOversellRatio: 100,
    gpuTflops: Object.fromEntries(models.map((m) => [m, 1])),
  }) as K8sObject;
  return [
    pool,
    ...nodes.map((n): K8sObject => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: n.sn,
        labels: {
          [HOSTNAME_LABEL]: n.sn,
          [poolMembershipLabel(OPENB_POOL)]: 'true',
          [GFD.product]: n.model,
          [GFD.count]: String(n.gpus),
          [GFD.memory]: String(GPU_MIB),
        },
      },
      status: { allocatable: { cpu: `${n.cpu}m`, memory: `${n.mem}Mi` } },
    })),
  ];
}

/**
 * One Pod per trace pod, in order. A GPU pod opts in with its share as annotations; its limits equal
 * its requests, as allocatorRun's requests (which set none) have them. A CPU-only pod (no GPU) is one
 * of our scheduler's, which the plan places by CPU and memory only, as allocatorRun does.
 * @throws Error for a pod that names GPU models (the replay's `gpu_spec`): one `gpu-model` cannot say
 *   "any of these", and the default trace has none.
 */
export function openbPods(pods: readonly TracePod[]): K8sObject[] {
  return pods.map((p): K8sObject => {
    if (p.spec.length > 0) {
      throw new Error(`openb pod ${p.name}: gpu_spec is ${JSON.stringify(p.spec.join('|'))}, expected none (no model constraint)`);
    }
    const container = { name: 'main', image: 'openb.invalid/pod:1', resources: { requests: { cpu: `${p.cpu}m`, memory: `${p.mem}Mi` } } };
    const metadata = { name: p.name, namespace: OPENB_NAMESPACE };
    if (p.n === 0) return { apiVersion: 'v1', kind: 'Pod', metadata, spec: { schedulerName: SCHEDULER_NAME, containers: [container] } };
    const tflops = String(p.g / 1000);
    const vram = `${p.g}Mi`;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        ...metadata,
        labels: { [ENABLED_LABEL]: 'true' },
        annotations: {
          [ANNOTATION.tflopsRequest]: tflops,
          [ANNOTATION.tflopsLimit]: tflops,
          [ANNOTATION.vramRequest]: vram,
          [ANNOTATION.vramLimit]: vram,
          [ANNOTATION.gpuCount]: String(p.n),
        },
      },
      spec: { containers: [container] },
    };
  });
}

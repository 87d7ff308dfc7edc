/**
 * The GPU every trace GPU becomes when the openb trace is placed through kube-scheduler: 1000 TFLOPS
 * and 16000 MiB, so that `gpu_milli` g asks for g TFLOPS and 16·g MiB, the same fraction on any model.
 */
import { GFD, poolMembershipLabel } from '../lib/model/metadata-keys';
import { DEFAULT_PLACEMENT_MODE } from '../lib/model/rules';
import { renderGpuPool } from '../lib/render/gpu-pool';
import type { KubeObject } from '../lib/k8s/object';
import type { TraceNode } from './trace-replay';

export const GPU_TFLOPS = 1000;
export const GPU_VRAM_MIB = 16000;

/**
 * A node's GPU Feature Discovery labels, from which the controller makes its GPU objects, and its
 * membership of `pool`.
 */
export function gpuNodeLabels(n: Pick<TraceNode, 'model' | 'gpus'>, pool: string): Record<string, string> {
  return {
    [GFD.present]: 'true',
    [GFD.product]: n.model,
    [GFD.count]: String(n.gpus),
    [GFD.memory]: String(GPU_VRAM_MIB),
    [poolMembershipLabel(pool)]: 'true',
  };
}

/** The trace's pool: the default placement mode, TFLOPS not oversold (as allocatorRun), every model a GPU_TFLOPS GPU. */
export function openbPool(name: string, models: Iterable<string>): KubeObject {
  return renderGpuPool(name, {
    placement: DEFAULT_PLACEMENT_MODE,
    tflopsOversellRatio: 100,
    gpuTflops: Object.fromEntries([...new Set(models)].sort().map((m) => [m, String(GPU_TFLOPS)])),
  });
}

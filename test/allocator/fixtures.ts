/** Small synthetic clusters for the allocator tests. */
import { AllocationRequest, NodeSpec } from '../../lib/allocator';

export const GiB = 2 ** 30;

/** A node of `count` identical GPUs named `<name>-gpu<i>`. */
export function node(
  name: string,
  count: number,
  extra: Partial<NodeSpec> & { model?: string; tflops?: number; vram?: number } = {},
): NodeSpec {
  const { model = 'A100', tflops = 100, vram = 40 * GiB, ...rest } = extra;
  return {
    name,
    pool: 'p',
    gpus: Array.from({ length: count }, (_, i) => ({ id: `${name}-gpu${i}`, index: i, model, tflops, vram })),
    ...rest,
  };
}

/** A request for `share` of a 100-TFLOPS, 40 GiB GPU on `gpuCount` GPUs. */
export function req(id: string, share: number, extra: Partial<AllocationRequest> = {}): AllocationRequest {
  return { id, pool: 'p', tflopsRequest: 100 * share, vramRequest: Math.round(40 * GiB * share), gpuCount: 1, qos: 'medium', ...extra };
}

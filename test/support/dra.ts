/**
 * The DRA side of an install for the suites that run the controller as processes: the DeviceClass,
 * the agent's and the controller's rules and the policies that `TensorFusionController`'s `dra: true`
 * adds; and a KWOK node's A100s published as the node agent publishes them.
 */
import type { GPUPool } from '../../lib/api';
import { DRA_NAMES, renderController } from '../../lib/render/controller';
import { resourceSlice } from '../../lib/runtime/shared/dra/resource-slice';
import type { Obj } from './control-plane/install';
import { kwokGpuUuid } from './dra-slices';

/** What `dra: true` adds to the install of the controller in `namespace`. */
export function draInstall(namespace: string): Obj[] {
  return renderController({ dra: true, namespace, image: 'example.io/tf:1' }).filter(
    (o) => o.kind === 'DeviceClass' || Object.values(DRA_NAMES).includes(o.metadata.name as never),
  ) as Obj[];
}

/** The ResourceSlice of a KWOK node of `pool` with `gpus` A100s of 80 GiB (312 TFLOPS before the pool's oversell). */
export function a100Slice(node: string, pool: Obj, gpus: number): Obj {
  return resourceSlice({
    nodeName: node,
    pool: pool as unknown as GPUPool,
    gpus: Array.from({ length: gpus }, (_, i) => ({
      uuid: kwokGpuUuid(node, i),
      model: 'A100',
      index: i,
      tflops: 312,
      vram: 80 * 2 ** 30,
    })),
  }) as unknown as Obj;
}

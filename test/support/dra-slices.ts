/**
 * The ResourceSlice a node agent publishes for a KWOK node of a DRA pool, where no agent runs: built
 * by the agent's own functions (lib/runtime/shared/dra/resource-slice.ts) from the node's GFD labels,
 * as the agent's publisher reads them, every GPU ready, owned by the node as the agent's is.
 */
import { createHash } from 'node:crypto';
import type { GPUPool } from '../../lib/api';
import { nodeInventory } from '../../lib/runtime/shared/capacity';
import { ownedByNode, resourceSlice, type ResourceSlice } from '../../lib/runtime/shared/dra/resource-slice';
import type { ControlPlane } from './control-plane';
import type { Obj } from './control-plane/install';

/**
 * A made-up GPU UUID for GPU `index` of a KWOK node, in the driver's form (`GPU-` and 36 characters),
 * the same for the same node and index. Not `GPU-<node>-<index>`: a device attribute's string takes at
 * most 64 characters, and Karpenter's KWOK node names run past 59 (a slice with a longer UUID is refused).
 */
export function kwokGpuUuid(node: string, index: number): string {
  const h = createHash('sha1').update(`${node}/${index}`).digest('hex');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The slice of `node` (as read from the API server: with its UID) in `pool`; throws for a node whose labels name no GPU. */
export function agentSlice(node: Obj, pool: Pick<GPUPool, 'metadata' | 'spec'>): ResourceSlice {
  const name = node.metadata.name as string;
  const inv = nodeInventory(node.metadata.labels, pool.spec?.capacityConfig?.gpuTflops);
  if (!inv) throw new Error(`node ${name} has no GPU labels to publish a slice from`);
  const gpus = Array.from({ length: inv.count }, (_, index) => ({
    uuid: kwokGpuUuid(name, index),
    model: inv.model,
    index,
    tflops: inv.tflopsPerGpu,
    vram: inv.vramPerGpu,
  }));
  return ownedByNode(resourceSlice({ nodeName: name, pool, gpus }), node.metadata.uid);
}

/**
 * Publishes {@link agentSlice} for each node matching `selector` as soon as it appears (looked for
 * every half second), as the agent's DaemonSet pod would once it runs there. Deletes nothing: the
 * garbage collector removes a slice with its node, as it does the agent's. `errors` holds the last
 * failure to publish, by node (`''` for a failed pass), for a test to print. `stop()` ends it.
 */
export function publishSlicesOnNewNodes(
  cp: ControlPlane,
  selector: string,
  pool: Pick<GPUPool, 'metadata' | 'spec'>,
): { published: Set<string>; errors: Map<string, string>; stop: () => Promise<void> } {
  const published = new Set<string>();
  const errors = new Map<string, string>();
  let stopped = false;
  const pass = async () => {
    const nodes: Obj[] = JSON.parse(await cp.kubectlOk(['get', 'nodes', '-l', selector, '-o', 'json'])).items;
    for (const node of nodes.filter((n) => !published.has(n.metadata.name))) {
      const r = await cp.kubectl(['create', '-f', '-'], { input: JSON.stringify(agentSlice(node, pool)) });
      if (r.code === 0 || r.stderr.includes('AlreadyExists')) {
        published.add(node.metadata.name);
        errors.delete(node.metadata.name);
      } else errors.set(node.metadata.name, r.stderr.trim());
    }
  };
  const loop = (async () => {
    while (!stopped) {
      await pass().then(
        () => errors.delete(''),
        (err: Error) => errors.set('', err.message),
      );
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    published,
    errors,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

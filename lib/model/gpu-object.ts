/** How GPU objects are named: one per device of a node, `<node>-gpu-<index>` (GFD labels carry no device UUIDs). */
import { boundedName } from '../k8s/names';

/** Name of the GPU object for device `index` of a node; a node name too long for that is cut short and hashed. */
export function gpuName(nodeName: string, index: number): string {
  return boundedName(nodeName, `-gpu-${index}`);
}

/** The device index a GPU object's name carries, or undefined for a name not made by {@link gpuName}. */
export function gpuIndexOf(name: string): number | undefined {
  const m = /-gpu-(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

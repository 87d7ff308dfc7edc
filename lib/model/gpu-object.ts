/** How GPU objects are named: one per device of a node, `<node>-gpu-<index>` (GFD labels carry no device UUIDs). */

/** Name of the GPU object for device `index` of a node. */
export function gpuName(nodeName: string, index: number): string {
  return `${nodeName}-gpu-${index}`;
}

/** The device index a GPU object's name carries, or undefined for a name not made by {@link gpuName}. */
export function gpuIndexOf(name: string): number | undefined {
  const m = /-gpu-(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** A value with every object's keys in sorted order, as the API server echoes Go maps (and so a slice's devices). */
export function sortedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedKeys);
  if (!v || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, x]) => [k, sortedKeys(x)]),
  );
}

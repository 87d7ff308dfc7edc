/** tensor-fusion.ai pod annotations written in tests by their short keys. */

/** The full key of a tensor-fusion.ai pod annotation: `annotationKey('qos')` is `tensor-fusion.ai/qos`. */
export function annotationKey(suffix: string): string {
  return `tensor-fusion.ai/${suffix}`;
}

/** Pod annotations from short keys: `ann({ qos: 'high' })` is `{ 'tensor-fusion.ai/qos': 'high' }`. */
export function ann(annotations: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(annotations).map(([k, v]) => [annotationKey(k), v]));
}

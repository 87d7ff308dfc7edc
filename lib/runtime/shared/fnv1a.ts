/**
 * FNV-1a over a string's UTF-16 code units, as a signed 32-bit integer. Hand-written: node:crypto's
 * hashes allocate a Hash object, a Buffer and a digest per call, and its callers are hot paths or want
 * no more than a stable spread (the webhook's table of keys seen once, a namespace's colour).
 */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

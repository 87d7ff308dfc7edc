/** Command-line flags of the bench scripts. */

/** The integer `--name=N` (at least `min`), or `fallback` when absent; anything else is an error naming the flag and the value. */
export function intFlag(name: string, fallback: number, min = 1): number {
  const v = process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const n = v === undefined ? fallback : Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: got "${v}", expected an integer of at least ${min}`);
  return n;
}

/** Command-line flags of the bench scripts. */

/** The value of `--name=VALUE`, or undefined when absent. */
export function stringFlag(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** The integer `--name=N` (at least `min`), or `fallback` when absent; anything else is an error naming the flag and the value. */
export function intFlag(name: string, fallback: number, min = 1): number {
  const v = stringFlag(name);
  const n = v === undefined ? fallback : Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: got "${v}", expected an integer of at least ${min}`);
  return n;
}

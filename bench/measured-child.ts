/**
 * The entry of a bench that measures in a child process of its own (a clean heap): started with
 * `--measure <args…>` it runs `measure` and sends the result to its parent; otherwise it runs `main`,
 * which forks it so.
 */
export function runMeasuredOrMain(main: () => Promise<void>, measure: (...args: string[]) => Promise<unknown>): void {
  const fail = (err: unknown) => {
    console.error(err);
    process.exit(1);
  };
  const m = process.argv.indexOf('--measure');
  if (m < 0) {
    main().catch(fail);
    return;
  }
  measure(...process.argv.slice(m + 1)).then((out) => process.send?.(out as object, () => process.exit(0)), fail);
}

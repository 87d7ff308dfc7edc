/** What `kubectl tf` fails with: a message for the user (never a stack trace) and the exit code. */

/**
 * The plugin's exit codes (README, "kubectl tf"): 0 done; 1 the cluster could not be read or an
 * object is missing; 2 bad usage or input (a flag, a file, a field); 3 `plan`: some pods do not fit.
 */
export const EXIT = { ok: 0, cluster: 1, usage: 2, unplaced: 3 } as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.cluster,
  ) {
    super(message);
  }
}

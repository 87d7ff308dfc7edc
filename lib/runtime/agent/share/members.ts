/** Who uses a share's daemon right now: its servers' host pids and each server's clients' host pids. */
export interface ShareMembers {
  readonly servers: readonly number[];
  readonly clients: readonly { readonly server: number; readonly pid: number }[];
}

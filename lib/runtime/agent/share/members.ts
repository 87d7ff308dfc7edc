/** A share's MPS servers and their clients, as host pids, from the share's own daemon (`get_server_list`, `get_client_list <server>`). */
export interface ShareMembers {
  readonly servers: readonly number[];
  readonly clients: readonly { readonly server: number; readonly pid: number }[];
}

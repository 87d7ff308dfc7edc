/**
 * The test network's facts, one home for the runner that makes the namespace
 * (scripts/in-netns.ts) and the node harness that uses it. Addresses come from 198.18.0.0/15,
 * the range set aside for benchmarking networks (RFC 2544): nothing outside routes it, and inside the
 * namespace it is all there is besides loopback.
 */
import * as net from 'node:net';
export const NODE_NET = {
  /**
   * The interface that carries the node's address (the kubelet refuses a loopback node IP): one end of
   * a veth pair whose other end stays in the namespace too (this kernel has no dummy interfaces).
   */
  nodeLink: 'tf-node0',
  nodeLinkPeer: 'tf-node0-peer',
  /** The node's InternalIP: the kubelet serves here, kube-apiserver advertises here. */
  nodeIp: '198.18.0.1',
  /** The bridge the CNI plugin makes, and the pods' subnet behind it. */
  bridge: 'tf-cni0',
  podSubnet: '198.19.0.0/24',
  /**
   * The Services' ClusterIP range (kube-apiserver's --service-cluster-ip-range) and the `kubernetes`
   * Service's address, its first. The namespace routes the range to the node's interface, as a node's
   * default route would: kube-proxy's DNAT needs a route before it rewrites the destination.
   */
  serviceCidr: '10.0.0.0/24',
  kubernetesServiceIp: '10.0.0.1',
  /** Set by the runner inside the namespace: the file where the node harness records host changes. */
  stateEnv: 'TF_NODE_HOST_STATE',
  /** Set by the runner when it could not make the namespace: why. */
  reasonEnv: 'TF_NODE_NETNS_UNAVAILABLE',
} as const;

/** An address outside every network here (TEST-NET-1, RFC 5737): a dial to it must fail at once. */
export const OUTSIDE_ADDRESS = '192.0.2.1';

/** A TCP dial from this process to {@link OUTSIDE_ADDRESS}: how it failed (its error code) and how long that took. */
export function dialOutside(): Promise<{ code: string | undefined; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const s = net.connect({ host: OUTSIDE_ADDRESS, port: 443 });
    s.on('connect', () => {
      s.destroy();
      resolve({ code: 'CONNECTED', ms: Date.now() - started });
    });
    s.on('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code, ms: Date.now() - started }));
  });
}

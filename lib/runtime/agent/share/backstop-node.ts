/**
 * The backstop's loop wired to a node: nvidia-smi's per-process query, the host's /proc (the agent
 * shares the host PID namespace), SIGKILL, and the pod's Events and deletion through the API server.
 * isolation.ts starts it beside its rounds and adds its readiness to each GPU's.
 */
import type { Cluster, K8sObject } from '../../kube/cluster';
import { RESOURCES } from '../../kube/resources';
import { identify } from '../cgroup';
import type { MpsShare } from '../mps/supervisor';
import { queryApps } from '../nvidia-smi-run';
import { BackstopLoop, BackstopLoopOptions } from './backstop-loop';
import type { ShareMembers } from './members';

export interface NodeBackstopOptions {
  readonly cluster: Cluster;
  readonly shares: () => readonly MpsShare[];
  readonly members: (id: string) => Promise<ShareMembers | undefined>;
  /** Path of nvidia-smi. */
  readonly nvidiaSmi: string;
  /** Root of the host's /proc. */
  readonly procRoot: string;
  /** How long one query may take before the poll counts as failed. @default 2000 */
  readonly queryTimeoutMs?: number;
  /** Stops a host process. @default SIGKILL */
  readonly kill?: (pid: number) => void;
  readonly escalateAfter?: number;
  readonly onChange?: () => void;
  readonly log?: BackstopLoopOptions['log'];
}

/** The share's pod as an Event's involved object: `share.pod` is `namespace/name`, its id the pod UID. */
export function podOfShare(share: MpsShare): K8sObject {
  const [namespace, name] = share.pod.split('/');
  return { apiVersion: 'v1', kind: 'Pod', metadata: { namespace, name, uid: share.id } };
}

export function nodeBackstop(o: NodeBackstopOptions): BackstopLoop {
  return new BackstopLoop({
    shares: o.shares,
    members: o.members,
    query: () => queryApps(o.nvidiaSmi, o.queryTimeoutMs ?? 2_000),
    identify: (pid) => identify(o.procRoot, pid),
    kill: o.kill ?? ((pid) => process.kill(pid, 'SIGKILL')),
    event: (share, reason, message) => o.cluster.recordEvent(podOfShare(share), { type: 'Warning', reason, message }),
    remove: async (share) => {
      const { namespace, name } = podOfShare(share).metadata;
      // Only the pod that breached: a StatefulSet's new pod of the same name has another UID.
      const pod = await o.cluster.get(RESOURCES.pods, { namespace, name: name! });
      if (pod?.metadata.uid === share.id) await o.cluster.delete(RESOURCES.pods, { namespace, name: name! });
    },
    escalateAfter: o.escalateAfter,
    onChange: o.onChange,
    log: o.log,
  });
}

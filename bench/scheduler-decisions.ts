/** How the openb replays through kube-scheduler learn each pod's outcome, one pod at a time. */
import type { K8sObject } from '../lib/runtime/kube/cluster';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import type { Informer } from '../lib/runtime/kube/informer';
import { RESOURCES } from '../lib/runtime/kube/resources';

/** A decision not seen within this long means something is stuck: fail rather than hang. */
const DECISION_TIMEOUT_MS = 60_000;

export interface Decision {
  node?: string;
  reason?: string;
  pod: K8sObject;
}

/** A PodScheduled=False condition. */
export interface NotScheduled {
  reason?: string;
  message?: string;
}

/**
 * Resolves when a pod is bound or the scheduler says it cannot be (PodScheduled=False, unless
 * `passing` says that refusal is one the scheduler retries by itself).
 */
export class Decisions {
  private readonly waiting = new Map<string, (d: Decision) => void>();

  constructor(
    informer: Informer<K8sObject>,
    private readonly passing: (c: NotScheduled) => boolean = () => false,
  ) {
    informer.on({ add: (p) => this.seen(p), update: (_o, p) => this.seen(p) });
  }

  private seen(p: K8sObject): void {
    const done = this.waiting.get(p.metadata.name ?? '');
    if (!done) return;
    const node = (p.spec as { nodeName?: string } | undefined)?.nodeName;
    const conditions = (p.status as { conditions?: ({ type: string; status: string } & NotScheduled)[] } | undefined)?.conditions ?? [];
    const failed = conditions.find((c) => c.type === 'PodScheduled' && c.status === 'False' && !this.passing(c));
    if (node) done({ node, pod: p });
    else if (failed) done({ reason: failed.reason ?? '', pod: p });
  }

  /** Registered before the create, so no event can come first. */
  expect(name: string): Promise<Decision> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`pod ${name}: neither bound nor unschedulable after ${DECISION_TIMEOUT_MS} ms`)),
        DECISION_TIMEOUT_MS,
      );
      this.waiting.set(name, (d) => {
        clearTimeout(timer);
        this.waiting.delete(name);
        resolve(d);
      });
    });
  }

  /** Creates the pod and waits for its decision; `ms`: create to decision. */
  async create(cluster: HttpCluster, pod: K8sObject): Promise<Decision & { ms: number }> {
    const decided = this.expect(pod.metadata.name as string);
    const t0 = performance.now();
    await cluster.create(RESOURCES.pods, pod);
    const d = await decided;
    return { ...d, ms: performance.now() - t0 };
  }
}

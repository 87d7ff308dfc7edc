/**
 * In-place resize of running pods' shares to their workload's recommendation (autoSetRequests,
 * autoSetLimits). Runs on the replica whose scheduler extender is active (the one its kube-scheduler
 * calls): that extender's allocator decides every placement, so resizing through it cannot over-commit
 * a GPU. A share grows only on the node and GPUs it has, when they have room; the pod's record and MPS
 * annotations are then patched (the integrity policy lets the controller's ServiceAccount do so), and
 * the kubelet refreshes the downward API files the webhook mounted (limits-volume.ts). A share whose
 * GPUs have no room keeps its size, and the workload's `InPlaceResize` condition says why.
 *
 * Pods of `hard` pools are not resized in place: their limits live in each pod's MPS daemon, and MPS
 * gives changed limits only to clients that connect after the change, so a shrink would hand a
 * neighbour memory the pod's running processes can still take. They keep their share, with a Warning
 * Event and the condition saying so; recreating the pods (a rollout) applies the recommendation.
 * Pods of DRA pools neither: kube-scheduler allocated their claim's capacity, and an allocation cannot
 * change once made (resource.k8s.io/v1), so they too keep their share with a Warning and the condition.
 *
 * Order of the writes: the allocator first holds the larger of the old and new amounts per field, the
 * pod is patched, then the allocator holds the new amounts (or the old ones if the patch failed). So
 * no other placement can take room the pod may still be using, and no relist of the pods sent before
 * the record landed can take the larger amounts back (PlacementState.resize's `recordPending`).
 */
import type { Logger } from 'pino';
import { escapePathComponent } from 'fast-json-patch';
import type { Condition } from '../../api';
import { applyRecommendation, appliesToShares, changedAmounts, recommendationOf, Resources, sameResources } from '../../autoscale';
import { AutoscaleSettings, decodeAutoScalingConfig } from '../../api/autoscaling-settings';
import type { Allocation, AllocateResult, ShareAmounts } from '../../allocator';
import { Cluster, JsonPatchOp, K8sObject, updateWithRetry } from '../kube/cluster';
import { bindingAnnotations, DeviceInfo } from '../shared/pod-share/record';
import { boundNode, isTerminal } from '../shared/pod-lifecycle';
import { draShareOf } from '../shared/dra/pod-claim';
import { setCondition } from '../shared/capacity';
import { keyOf, RESOURCES } from '../kube/resources';
import { deliveredByAgent, mpsParts, shareOf } from '../shared/share';
import { LIMITS_MOUNT_PATH } from '../shared/pod-share/limits-volume';
import type { Workload } from './loop';

/** Condition type the resizer owns on a TensorFusionWorkload. */
export const RESIZE_CONDITION = 'InPlaceResize';

/** What the resizer needs of the extender's PlacementState (lib/runtime/extender/placement-state.ts). */
export interface ResizablePlacement {
  holding(uid: string): Allocation | undefined;
  isReserved(uid: string): boolean;
  /** Undefined when the share is not held; `overQuota` when its namespace's quota has no room for the growth. */
  resize(
    uid: string,
    amounts: ShareAmounts,
    recordPending?: boolean,
  ): AllocateResult | { readonly ok: false; readonly overQuota: string } | undefined;
  device(gpu: string): DeviceInfo | undefined;
}

export interface ShareResizerOptions {
  /** The controller's own client (the integrity policy admits its pod patches). */
  readonly cluster: Pick<Cluster, 'jsonPatch' | 'recordEvent' | 'get' | 'replaceStatus'>;
  readonly state: ResizablePlacement;
  readonly workloads: () => Workload[];
  /** The workload's pods as cached, by `namespace/name` of the workload. */
  readonly pods: (workloadKey: string) => K8sObject[];
  /** This replica's extender is the one its scheduler calls (only that allocator may change shares). */
  readonly active: () => boolean | Promise<boolean>;
  /** @default Date.now */
  readonly now?: () => number;
  readonly logger?: Logger;
}

const amountsOf = (a: Resources): ShareAmounts => ({
  tflopsRequest: a.tflopsRequest,
  tflopsLimit: a.tflopsLimit,
  vramRequest: a.vramRequest,
  vramLimit: a.vramLimit,
});

/** `old -> new` for each amount that changes, in the annotations' words. */
function describeChange(old: Resources, next: Resources): string {
  return changedAmounts(old, next)
    .map((c) => `${c.key} ${c.from} -> ${c.to}`)
    .join(', ');
}

export class ShareResizer {
  private readonly now: () => number;

  constructor(private readonly opts: ShareResizerOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** One pass over every workload whose requests or limits are autoscaled; nothing unless active. */
  async tick(): Promise<void> {
    if (!(await this.opts.active())) return;
    for (const wl of this.opts.workloads()) {
      try {
        await this.reconcile(wl);
      } catch (err) {
        this.opts.logger?.warn({ workload: keyOf(wl.metadata), err: String(err) }, 'in-place resize failed; retrying next tick');
      }
    }
  }

  private async reconcile(wl: Workload): Promise<void> {
    const { settings } = decodeAutoScalingConfig(wl.spec?.autoScalingConfig);
    const recommended = recommendationOf(wl);
    if (!appliesToShares(settings) || !recommended) return;
    const blocked: string[] = [];
    const hard: string[] = [];
    const claimed: string[] = [];
    let resized = 0;
    for (const pod of this.opts.pods(keyOf(wl.metadata))) {
      const uid = pod.metadata.uid;
      if (!uid || isTerminal(pod) || this.opts.state.isReserved(uid)) continue;
      const held = this.opts.state.holding(uid);
      if (!held || held.gpuIds.length === 0) {
        if (await this.refuseClaim(pod, settings, recommended)) claimed.push(pod.metadata.name!);
        continue;
      }
      const next = applyRecommendation(settings, recommended, held);
      if (sameResources(next, held)) continue;
      if (deliveredByAgent(pod)) {
        hard.push(pod.metadata.name!);
        await this.opts.cluster.recordEvent(pod, {
          type: 'Warning',
          reason: 'ShareNotResized',
          message: `GPU share not resized in place (${describeChange(held, next)}): hard isolation's limits live in the pod's MPS daemon, which gives new limits only to new clients; recreate the pod to take the recommendation`,
        });
        continue;
      }
      const why = await this.resizePod(pod, held, next);
      if (why === undefined) resized++;
      else blocked.push(`pod ${pod.metadata.name} on ${held.node}: ${why}`);
    }
    const cur = wl.status?.conditions?.find((c) => c.type === RESIZE_CONDITION);
    if (hard.length > 0 || claimed.length > 0) {
      const stays = [
        ...(hard.length
          ? [`${hard.length} pod(s) of a hard pool, whose MPS limits change only when the pod is recreated: ${hard.join(', ')}`]
          : []),
        ...(claimed.length
          ? [`${claimed.length} pod(s) of a DRA pool, whose claim's allocation cannot change once made: ${claimed.join(', ')}`]
          : []),
      ];
      await this.setCondition(wl, {
        type: RESIZE_CONDITION,
        status: 'False',
        reason: hard.length ? 'HardIsolation' : 'DraClaim',
        message: `the recommendation stays in status for ${stays.join('; and ')}${blocked.length ? `; and ${blocked.length} whose GPUs have no room: ${blocked.join('; ')}` : ''}`,
      });
    } else if (blocked.length > 0) {
      await this.setCondition(wl, {
        type: RESIZE_CONDITION,
        status: 'False',
        reason: 'NoRoomOnGpu',
        message: `the recommendation stays in status for ${blocked.length} pod(s) whose GPUs have no room: ${blocked.join('; ')}`,
      });
    } else if (resized > 0 || cur?.status === 'False') {
      await this.setCondition(wl, {
        type: RESIZE_CONDITION,
        status: 'True',
        reason: 'Resized',
        message: 'every bound pod holds the recommended share',
      });
    }
  }

  /**
   * A bound DRA pod whose share the recommendation would change: a Warning Event, and true. Its share
   * record holds its amounts (its claim, what kube-scheduler allocated); the extender holds none.
   */
  private async refuseClaim(pod: K8sObject, settings: AutoscaleSettings, recommended: Resources): Promise<boolean> {
    const share = draShareOf(pod);
    if (!share || !boundNode(pod)) return false;
    const next = applyRecommendation(settings, recommended, share);
    if (sameResources(next, share)) return false;
    await this.opts.cluster.recordEvent(pod, {
      type: 'Warning',
      reason: 'ShareNotResized',
      message: `GPU share not resized in place (${describeChange(share, next)}): its pool delivers shares by DRA, and kube-scheduler allocated its ResourceClaim, whose allocation cannot change once made; recreate the pod to take the recommendation`,
    });
    return true;
  }

  /** Resizes one pod's share; undefined when done, else why not (its GPUs have no room). */
  private async resizePod(pod: K8sObject, held: Allocation, next: Resources): Promise<string | undefined> {
    const { state, cluster } = this.opts;
    const uid = held.id;
    const union: ShareAmounts = {
      tflopsRequest: Math.max(held.tflopsRequest, next.tflopsRequest),
      tflopsLimit: Math.max(held.tflopsLimit, next.tflopsLimit),
      vramRequest: Math.max(held.vramRequest, next.vramRequest),
      vramLimit: Math.max(held.vramLimit, next.vramLimit),
    };
    const grown = state.resize(uid, union, true);
    if (!grown) return 'its share is not held by this extender';
    if (!grown.ok) return 'overQuota' in grown ? grown.overQuota : grown.reasons.map((r) => r.message).join('; ');
    const record: Allocation = { ...held, ...amountsOf(next) };
    const annotations = bindingAnnotations(record, (g) => state.device(g), mpsParts(shareOf(pod)));
    const ops: JsonPatchOp[] = [
      // The pod of that UID only: a pod recreated under the same name holds another share.
      { op: 'test', path: '/metadata/uid', value: uid },
      ...Object.entries(annotations).map(([k, value]): JsonPatchOp => ({
        op: 'add',
        path: `/metadata/annotations/${escapePathComponent(k)}`,
        value,
      })),
    ];
    try {
      await cluster.jsonPatch(RESOURCES.pods, { namespace: pod.metadata.namespace, name: pod.metadata.name! }, ops);
    } catch (err) {
      state.resize(uid, amountsOf(held));
      throw err;
    }
    state.resize(uid, amountsOf(next));
    const change = describeChange(held, next);
    this.opts.logger?.info({ pod: keyOf(pod.metadata), node: held.node, change }, 'share resized in place');
    await cluster.recordEvent(pod, {
      type: 'Normal',
      reason: 'ShareResized',
      message: `GPU share resized in place on ${held.node} (${held.gpuIds.join(', ')}): ${change}; MPS limits in ${LIMITS_MOUNT_PATH} now, in the environment at the next restart`,
    });
    return undefined;
  }

  private async setCondition(wl: Workload, c: Omit<Condition, 'lastTransitionTime'>): Promise<void> {
    const at = new Date(this.now()).toISOString();
    const rt = RESOURCES.tensorfusionworkloads;
    await updateWithRetry<Workload>(
      this.opts.cluster as Cluster,
      rt,
      { namespace: wl.metadata.namespace, name: wl.metadata.name! },
      (cur) => {
        const status = { workerCount: 0, ...cur.status } as NonNullable<Workload['status']>;
        const next = { ...status, conditions: setCondition(status.conditions, c, at) } as Workload['status'];
        return JSON.stringify(next) === JSON.stringify(cur.status) ? undefined : { ...cur, status: next };
      },
      (obj) => this.opts.cluster.replaceStatus(rt, obj),
      { cached: wl },
    );
  }
}

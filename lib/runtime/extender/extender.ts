/**
 * The scheduler extender's decisions. kube-scheduler has already applied every constraint of the pod
 * (nodeName, selectors, affinity, taints, cordons, CPU and memory, topology spread) when it calls
 * filter with the nodes that remain; we decide GPU fit and GPU choice:
 *
 * - filter narrows the nodes to the one the pool's placement mode chooses among them ("filter to
 *   best"), so the scheduler's own scoring cannot trade placement quality away, and reserves the share
 *   there for the bind to come; when none can take the share, each node gets a reason. A pod of our
 *   scheduler without a share whose feasible nodes are all of one pool is placed the same way, as a
 *   share of no GPU: the CPU and memory it takes decide which GPUs stay usable;
 * - prioritize (only called when several nodes pass, which filter avoids but for DRA pods) scores the
 *   node the pool's mode chooses 10, a DRA pod's too (its claim's GPUs are kube-scheduler's choice);
 * - bind chooses the GPUs and binds with the allocation in the Binding's annotations, so the record
 *   reaches the pod in the same atomic update as `spec.nodeName`.
 *
 * After a pause (a restart, or this replica's scheduler just took the lease) the state is rebuilt from
 * a fresh list of the pods before anything is answered, unless this replica's scheduler has held the
 * lease since the last such list.
 */
import type { Logger } from 'pino';
import { EXTENDER_HTTP_TIMEOUT_SECONDS } from '../../contract/env';
import { ENABLED_LABEL } from '../../model/metadata-keys';
import type { AllocationRequest } from '../../allocator';
import { Cluster, isConflict, isOutcomeUnknown, K8sObject, ObjectRef } from '../kube/cluster';
import type { Informer } from '../kube/informer';
import { RESOURCES } from '../kube/resources';
import { boundNode, isActivePod } from '../shared/pod-lifecycle';
import { podRequests } from '../shared/pod-requests';
import { allocationRequest, cpuOnlyRequest, mpsParts, shareOf } from '../shared/share';
import { hasDraClaim } from '../shared/dra/pod-claim';
import {
  ExtenderArgs,
  ExtenderBindingArgs,
  ExtenderBindingResult,
  ExtenderFilterResult,
  HostPriority,
  MAX_EXTENDER_PRIORITY,
  nodeNamesOf,
} from './protocol';
import { BIND_UNCONFIRMED, nodeReason, reasonKind, WAIT_KINDS } from './node-reasons';
import { bindingAnnotations } from '../shared/pod-share/record';
import type { PlacementState } from './placement-state';
import { TurnedAway } from './turned-away';

export interface ExtenderOptions {
  state: PlacementState;
  cluster: Pick<Cluster, 'bind' | 'list' | 'get'>;
  /** The controller's pod cache, to find a pod's share at bind without a round trip. */
  pods: Informer<K8sObject>;
  logger?: Logger;
  /** A call after this long without one first re-reads the pods. @default 5000 */
  resyncAfterIdleMs?: number;
  /**
   * This replica's tenure of the scheduler Lease (`schedulerTenure` in lease-holder.ts). A call after
   * a pause skips the fresh list when the tenure is the one read at the last call after a pause that
   * listed: no other scheduler placed anything since. Without it, every call after a pause lists.
   */
  schedulerTenure?: () => Promise<string | undefined>;
  /** @default Date.now */
  now?: () => number;
}

/**
 * How long after a list (and rebuild) that took `lastMs` a refusal may list again: twenty times as
 * long, at least a second and at most a minute. Pods left waiting for room are retried on cluster
 * events, each one a refusal, and in a cluster of 10,000 GPU pods a list is some 57 MB that takes
 * seconds to serve and parse; listing a twentieth of the time at most bounds what waiting pods cost,
 * and backs off by itself when the API server is slow. The minute keeps one very slow list (the API
 * server restarting) from leaving a stalled watch's pods unrecovered for long.
 */
export function refusalListSpacingMs(lastMs: number): number {
  return Math.min(60_000, Math.max(1_000, 20 * lastMs));
}

/** The same reason for every node: one not about a node (a quota, a bind not yet confirmed). */
function everyNode(nodes: readonly string[], reason: string): Record<string, string> {
  return Object.fromEntries(nodes.map((n) => [n, reason]));
}

function result(nodes: string[], unresolvable: Record<string, string> = {}): ExtenderFilterResult {
  return { Nodes: null, NodeNames: nodes, FailedNodes: {}, FailedAndUnresolvableNodes: unresolvable, Error: '' };
}

export class Extender {
  private lastCall = -Infinity;
  private readonly turnedAway = new TurnedAway();
  private lastResync = -Infinity;
  /** How long the last list and rebuild took, ms. */
  private resyncMs = 0;
  private resyncing?: Promise<void>;
  /** The scheduler's tenure read at the last call after a pause, if this replica held the Lease then. */
  private tenure?: string;
  private readonly now: () => number;
  /** DRA pods' Bindings on the wire, by pod UID (see bindClaim). */
  private readonly claimBinds = new Map<string, { node: string; answer: Promise<ExtenderBindingResult> }>();

  constructor(private readonly opts: ExtenderOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** True when the scheduler called within `ms` (this replica's scheduler is the one scheduling). */
  calledWithin(ms: number): boolean {
    return this.now() - this.lastCall <= ms;
  }

  /** True while a pod filter turned away may still be waiting for room. */
  hasWaiting(): boolean {
    return this.turnedAway.size > 0;
  }

  /** Room was announced at `at` (ms): pods turned away before then are being retried. */
  announced(at: number): void {
    this.turnedAway.announced(at);
  }

  /** The pods filter turned away that still wait, by pool and reason kind. */
  waiting(): { pool: string; reason: string; pods: number }[] {
    return this.turnedAway.waitingCounts((p) => this.isWaiting(p));
  }

  private isWaiting({ namespace, name, uid }: { namespace: string; name: string; uid: string }): boolean {
    const pod = this.opts.pods.get(`${namespace}/${name}`);
    return pod?.metadata.uid === uid && !boundNode(pod) && isActivePod(pod);
  }

  /** A node where a pod filter turned away fits now, to announce (see TurnedAway). */
  sweep(): string | undefined {
    return this.turnedAway.sweep({
      // A pod whose bind is not confirmed yet waits for that, not for room (see filter).
      fits: (request, nodes, pod) => {
        const { state } = this.opts;
        if (state.isBinding(request.id) || state.quotaRefusal(pod.namespace, request)) return undefined;
        return state.best(request, nodes);
      },
      waiting: (p) => this.isWaiting(p),
      now: this.now(),
    });
  }

  /**
   * Rebuilds the state from a consistent list of opted-in pods when the extender was idle, unless this
   * replica's scheduler has held the Lease throughout: then its state already has every share placed
   * (each went through this extender), and the list, of every GPU pod in the cluster, is not worth
   * making at the start of each burst of pods.
   */
  private async fresh(): Promise<void> {
    const idle = this.now() - this.lastCall > (this.opts.resyncAfterIdleMs ?? 5_000);
    this.lastCall = this.now();
    if (!idle) return;
    // Read before the list, so that a tenure that began after it cannot vouch for it.
    const tenure = await this.opts.schedulerTenure?.().catch(() => undefined);
    if (tenure !== undefined && tenure === this.tenure) return;
    await this.resync();
    this.tenure = tenure;
  }

  private async resync(): Promise<void> {
    this.resyncing ??= (async () => {
      const listedAt = this.now();
      // Its cost, as time taken on this machine (not the injectable clock, which decides the rest).
      const started = performance.now();
      try {
        const pods = await this.opts.cluster.list(RESOURCES.pods, { labelSelector: `${ENABLED_LABEL}=true` });
        this.opts.state.resetFromPods(pods.items, listedAt);
        this.opts.logger?.debug({ pods: pods.items.length, ...this.opts.state.stats() }, 'placement state rebuilt from pods');
      } finally {
        // A failed list counts too: refusals while the API server fails them must not list each time.
        this.resyncMs = performance.now() - started;
        this.lastResync = this.now();
      }
    })().finally(() => {
      this.resyncing = undefined;
    });
    await this.resyncing;
  }

  /**
   * Before saying no room: the scheduler retries a pod on the event of another pod leaving, which
   * may reach it before it reaches our cache, or never while our pod watch is stalled; a refusal then
   * would leave the pod waiting (RetrySignal covers the first case once the event arrives). So a
   * refusal is made on a fresh list, spaced by what the last one cost (refusalListSpacingMs).
   */
  private async freshBeforeRefusal(): Promise<boolean> {
    if (this.now() - this.lastResync < refusalListSpacingMs(this.resyncMs)) return false;
    await this.resync();
    return true;
  }

  async filter(args: ExtenderArgs): Promise<ExtenderFilterResult> {
    await this.fresh();
    const nodes = nodeNamesOf(args);
    const pod = args.Pod;
    const uid = pod?.metadata?.uid;
    const share = pod && shareOf(pod);
    if (!uid) return result(nodes);
    if (!share) return this.filterWithoutShare(pod, uid, nodes);
    const { state } = this.opts;
    const request = allocationRequest(uid, share, podRequests(pod));
    state.learn(request);
    if (hasDraClaim(pod)) return this.filterClaim(pod, request, nodes);
    // kube-scheduler gave up waiting for our bind (its timeout) or got an error of unknown outcome:
    // the Binding may still land, so the pod waits until that is known rather than reserve twice.
    if (state.isBinding(uid)) return this.refuse(pod, request, nodes, everyNode(nodes, BIND_UNCONFIRMED), WAIT_KINDS.bindUnconfirmed);
    state.cancel(uid);
    const namespace = pod.metadata.namespace ?? '';
    // A namespace over its quota waits whatever the nodes have: no node judged, no list made.
    const overQuota = state.quotaRefusal(namespace, request);
    if (overQuota) return this.refuse(pod, request, nodes, everyNode(nodes, overQuota), WAIT_KINDS.overQuota);
    let best = state.best(request, nodes);
    if (best === undefined && (await this.freshBeforeRefusal())) best = state.best(request, nodes);
    if (best === undefined) {
      // Only a refusal shows kube-scheduler's per-node reasons (`kubectl describe pod`), so only a
      // refusal pays for judging every node.
      const unfit: Record<string, string> = {};
      let kind: string = WAIT_KINDS.noRoom;
      for (const [node, reasons] of state.choose(request, nodes).unfit) {
        unfit[node] = nodeReason(reasons, share.gpuCount);
        if (kind === WAIT_KINDS.noRoom) kind = reasonKind(reasons);
      }
      return this.refuse(pod, request, nodes, unfit, kind);
    }
    // The quota again, counted with the reservation: another pod may have taken the room while a list was made.
    const reserved = state.reserve(request, best, namespace);
    if (!reserved.ok)
      return this.refuse(
        pod,
        request,
        nodes,
        'overQuota' in reserved ? everyNode(nodes, reserved.overQuota) : { [best]: nodeReason(reserved.reasons, share.gpuCount) },
        'overQuota' in reserved ? WAIT_KINDS.overQuota : reasonKind(reserved.reasons),
      );
    this.turnedAway.forget(uid);
    return result([best]);
  }

  /**
   * A DRA pod: kube-scheduler's allocator found the nodes where its claim fits (only they reach us) and
   * chooses its GPU, so every node passes; only its namespace's quota is ours to keep.
   */
  private filterClaim(pod: K8sObject, request: AllocationRequest, nodes: string[]): ExtenderFilterResult {
    // Filtered again after its Binding was sent: see bindClaim. Its share is still counted.
    const sent = this.opts.state.claimSentTo(request.id);
    if (sent) return result(nodes.includes(sent.node) ? [sent.node] : nodes);
    const overQuota = this.opts.state.reserveClaim(pod.metadata.namespace ?? '', request);
    if (overQuota) return this.refuse(pod, request, nodes, everyNode(nodes, overQuota), WAIT_KINDS.overQuota);
    this.turnedAway.forget(request.id);
    return result(nodes);
  }

  private refuse(
    pod: K8sObject,
    request: AllocationRequest,
    nodes: string[],
    unfit: Record<string, string>,
    reason: string,
  ): ExtenderFilterResult {
    const { namespace = '', name = '', uid = '' } = pod.metadata;
    this.turnedAway.record({ namespace, name, uid }, request, nodes, this.now(), reason);
    return result([], unfit);
  }

  /**
   * A pod of our scheduler that the webhook did not mark. Among nodes of one pool, the pool's mode
   * chooses where its CPU and memory go (FGD places CPU-only pods too); anywhere else, or when the
   * pod asks for nothing, every node kube-scheduler found will do.
   */
  private filterWithoutShare(pod: K8sObject, uid: string, nodes: string[]): ExtenderFilterResult {
    const { state } = this.opts;
    const pool = state.poolOfAll(nodes);
    const { cpu, memory } = podRequests(pod);
    if (pool === undefined || (cpu === 0 && memory === 0)) return result(nodes);
    state.cancel(uid);
    const request = cpuOnlyRequest(uid, pool, { cpu, memory });
    state.learn(request);
    const best = state.best(request, nodes);
    // kube-scheduler counted the node's CPU and memory already; an allocator that disagrees (a pod
    // it has not seen yet) must not turn the pod away.
    if (best === undefined || !state.reserve(request, best).ok) return result(nodes);
    return result([best]);
  }

  /**
   * The node the pool's mode prefers scores {@link MAX_EXTENDER_PRIORITY}, the others 0. A DRA pod's
   * nodes are all those where kube-scheduler's allocator found room for its claim (filter passed
   * them all): ranked here on the GPUs the claims hold, with nothing reserved, since kube-scheduler
   * then picks the GPU within the node (first fit) and writes it in the claim.
   */
  async prioritize(args: ExtenderArgs): Promise<HostPriority[]> {
    await this.fresh();
    const nodes = nodeNamesOf(args);
    const pod = args.Pod;
    const uid = pod?.metadata?.uid;
    const share = pod && shareOf(pod);
    const { state } = this.opts;
    const request = share && uid ? allocationRequest(uid, share, podRequests(pod)) : undefined;
    // A DRA pod holds nothing here (filterClaim reserves no GPU): its best node is judged each time.
    const best = request && (state.holding(request.id)?.node ?? state.best(request, nodes));
    return nodes.map((n) => ({ Host: n, Score: n === best ? MAX_EXTENDER_PRIORITY : 0 }));
  }

  async bind(args: ExtenderBindingArgs): Promise<ExtenderBindingResult> {
    const ref = { namespace: args.PodNamespace, name: args.PodName, uid: args.PodUID };
    const known = this.opts.pods.get(`${ref.namespace}/${ref.name}`);
    // A DRA pod's bind reads no placement state, so it does not wait for the list after an idle spell:
    // every second counts against kube-scheduler's wait (see bindClaim).
    if (known?.metadata.uid === ref.uid && shareOf(known) && hasDraClaim(known)) return this.bindClaim(ref, args.Node);
    await this.fresh();
    const { state, cluster } = this.opts;
    let reserved = state.startBinding(args.PodUID);
    if (reserved && reserved.node !== args.Node) {
      state.cancel(args.PodUID);
      reserved = undefined;
    }
    let sent = false;
    const started = this.now();
    const send = (annotations?: Record<string, string>) => {
      sent = true;
      return this.createBinding(ref, args.Node, started, annotations);
    };
    try {
      // A cached pod of another UID is one the cache has not seen replaced yet: read the one bound.
      const cached = this.opts.pods.get(`${ref.namespace}/${ref.name}`);
      const pod = cached?.metadata.uid === ref.uid ? cached : await cluster.get(RESOURCES.pods, ref);
      const share = pod && pod.metadata.uid === ref.uid ? shareOf(pod) : undefined;
      if (share && hasDraClaim(pod!)) return await this.bindClaim(ref, args.Node);
      if (!reserved) {
        // No reservation for this node (the extender restarted since filter): place on the scheduler's node now.
        if (!share) {
          await send();
          return { Error: '' };
        }
        const r = state.reserve(allocationRequest(ref.uid, share, podRequests(pod!)), args.Node, ref.namespace);
        if (!r.ok) {
          const why = 'overQuota' in r ? r.overQuota : nodeReason(r.reasons, share.gpuCount);
          return { Error: `GPU share does not fit on node ${args.Node}: ${why}` };
        }
        reserved = state.startBinding(ref.uid)!;
      }
      if (reserved.gpuIds.length === 0) {
        // Reserved by filterWithoutShare: no GPU, so nothing to record on the pod.
        await send();
        state.commitBackground(ref.uid);
        return { Error: '' };
      }
      await send(bindingAnnotations(reserved, (gpu) => state.device(gpu), mpsParts(share)));
      state.commit(ref.uid, reserved);
      return { Error: '' };
    } catch (err) {
      // A Binding that may have landed keeps its share counted (for a reservation's time, or until the
      // pod's record arrives); only a refusal frees it at once.
      const unknown = sent && isOutcomeUnknown(err);
      if (unknown) state.startBinding(ref.uid);
      else {
        state.cancel(ref.uid);
        state.claimBound(ref.uid, false);
      }
      this.opts.logger?.warn(
        { pod: `${ref.namespace}/${ref.name}`, node: args.Node, err: String(err), unknownOutcome: unknown },
        'bind failed',
      );
      return { Error: err instanceof Error ? err.message : String(err) };
    }
  }

  /**
   * Binds a DRA pod; its GPU is in its claim, allocated by kube-scheduler (PreBind) before this call,
   * so there is nothing to record. When kube-scheduler stops waiting for our answer (httpTimeout), it
   * unreserves the claim and schedules the pod again, while our Binding may still land. Were that
   * cycle to fail (our quota turning the pod away, say), kube-scheduler's DRA plugin would deallocate
   * the claim, now reserved for nobody (its PostFilter), and a pod bound meanwhile would have no
   * device. So a pod whose Binding was sent passes filter on that node (filterClaim), and a bind asked
   * again answers with the first Binding's outcome: a pod is bound only once.
   */
  private bindClaim(ref: ObjectRef & { uid: string }, node: string): Promise<ExtenderBindingResult> {
    const inFlight = this.claimBinds.get(ref.uid);
    if (inFlight)
      return inFlight.node === node
        ? inFlight.answer
        : Promise.resolve({ Error: `the Binding of pod ${ref.namespace}/${ref.name} to node ${inFlight.node} is not answered yet` });
    const sent = this.opts.state.claimSentTo(ref.uid);
    if (sent?.landed)
      return Promise.resolve(
        sent.node === node ? { Error: '' } : { Error: `pod ${ref.namespace}/${ref.name} is bound to node ${sent.node}` },
      );
    const answer = this.sendClaimBinding(ref, node).finally(() => this.claimBinds.delete(ref.uid));
    this.claimBinds.set(ref.uid, { node, answer });
    return answer;
  }

  private async sendClaimBinding(ref: ObjectRef & { uid: string }, node: string): Promise<ExtenderBindingResult> {
    const { state, cluster } = this.opts;
    state.claimBinding(ref.uid, node);
    try {
      try {
        await this.createBinding(ref, node, this.now());
      } catch (err) {
        // Refused as already assigned: our earlier Binding (sent before a restart of this extender) landed there.
        const pod = isConflict(err) ? await cluster.get(RESOURCES.pods, ref) : undefined;
        if (pod?.metadata.uid !== ref.uid || boundNode(pod) !== node) throw err;
      }
      state.claimBound(ref.uid, true);
      return { Error: '' };
    } catch (err) {
      // One that may have landed keeps the share counted, and the pod passing filter on that node.
      const unknown = isOutcomeUnknown(err);
      if (!unknown) state.claimBound(ref.uid, false);
      this.opts.logger?.warn({ pod: `${ref.namespace}/${ref.name}`, node, err: String(err), unknownOutcome: unknown }, 'bind failed');
      return { Error: err instanceof Error ? err.message : String(err) };
    }
  }

  /**
   * Creates the Binding. When its answer is lost (see isOutcomeUnknown) while kube-scheduler still
   * waits for ours, it is sent once more: a pod is bound only once, so the second either lands or is
   * refused as already assigned, and then the pod shows whether the first one (with these
   * annotations, on this node) was ours. Not later: a Binding sent after kube-scheduler gave up could
   * land after another replica's scheduler took over and listed the pods.
   */
  private async createBinding(
    ref: ObjectRef & { uid: string },
    node: string,
    started: number,
    annotations?: Record<string, string>,
  ): Promise<void> {
    const { cluster } = this.opts;
    try {
      await cluster.bind(ref, node, annotations);
    } catch (err) {
      if (!isOutcomeUnknown(err) || this.now() - started >= EXTENDER_HTTP_TIMEOUT_SECONDS * 1000) throw err;
      try {
        await cluster.bind(ref, node, annotations);
      } catch (again) {
        if (!isConflict(again)) throw again;
        const pod = await cluster.get(RESOURCES.pods, ref);
        const ours =
          pod?.metadata.uid === ref.uid &&
          boundNode(pod) === node &&
          Object.entries(annotations ?? {}).every(([k, v]) => pod.metadata.annotations?.[k] === v);
        if (!ours) throw again;
      }
    }
  }
}

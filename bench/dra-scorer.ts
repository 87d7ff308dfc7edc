/**
 * The node-scoring lever of bench:schedule's DRA side (fgd): the product's scheduler extender
 * (lib/runtime/extender: its placement state, filter, prioritize, bind and HTTP server) on loopback,
 * called by the lever's kube-scheduler as the install configures it. Its state reads the lever's
 * nodes as the controller would make GPU objects of them (their GPU Feature Discovery labels, the
 * pool), and the lever's pods and ResourceClaims from informers, as the controller's caches: the GPUs
 * a claim holds count as used once its allocation reaches the claims informer. No webhook runs on
 * this side, so the pods (the informer's and those kube-scheduler sends) get the share label and
 * annotation the webhook would have given them here.
 */
import type { GPUPool } from '../lib/api';
import { CONTROLLER_PATHS } from '../lib/contract/env';
import { ENABLED_LABEL, SHARE_ANNOTATION } from '../lib/model/metadata-keys';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import { Informer, stripManagedFields } from '../lib/runtime/kube/informer';
import { RESOURCES } from '../lib/runtime/kube/resources';
import { fixedCaches } from '../lib/runtime/cli/cluster-objects';
import { clusterFromManifests } from '../lib/runtime/cli/manifests';
import { ResourceClaim, slimClaim } from '../lib/runtime/shared/dra/claim-results';
import { encodeShare, ShareRequest } from '../lib/runtime/shared/share';
import { PlacementSources, PlacementState } from '../lib/runtime/extender/placement-state';
import { Extender } from '../lib/runtime/extender/extender';
import { ExtenderServer } from '../lib/runtime/extender/extender-server';
import type { ExtenderArgs, ExtenderFilterResult, HostPriority } from '../lib/runtime/extender/protocol';

/** The pod as the webhook admits it: opted in, with its share (none for a pod of no GPU). */
function admitted(pod: K8sObject, share: ShareRequest | undefined): K8sObject {
  if (!share) return pod;
  const metadata = {
    ...pod.metadata,
    labels: { ...pod.metadata.labels, [ENABLED_LABEL]: 'true' },
    annotations: { ...pod.metadata.annotations, [SHARE_ANNOTATION]: encodeShare(share) },
  };
  return { ...pod, metadata };
}

/** The extender, called with the pods as the webhook would have admitted them. */
class AdmittedPodExtender extends Extender {
  constructor(
    opts: ConstructorParameters<typeof Extender>[0],
    private readonly admit: (pod: K8sObject) => K8sObject,
  ) {
    super(opts);
  }

  override filter(args: ExtenderArgs): Promise<ExtenderFilterResult> {
    return super.filter(args.Pod ? { ...args, Pod: this.admit(args.Pod) } : args);
  }

  /** The node prioritize scored highest, by pod name (the last answer). */
  readonly chose = new Map<string, string>();

  override async prioritize(args: ExtenderArgs): Promise<HostPriority[]> {
    const scores = await super.prioritize(args.Pod ? { ...args, Pod: this.admit(args.Pod) } : args);
    const top = scores.find((s) => s.Score > 0);
    if (args.Pod?.metadata?.name && top) this.chose.set(args.Pod.metadata.name, top.Host);
    return scores;
  }
}

export class DraScorer {
  private readonly pods: Informer<K8sObject>;
  private readonly claims: Informer<ResourceClaim>;
  private readonly server: ExtenderServer;
  private readonly extender: AdmittedPodExtender;
  /** prioritize answers, for the figures. */
  calls = 0;

  /**
   * `nodes`: the lever's Node objects with {@link gpuNodeLabels}' labels for `pool`; `shareOf`: the
   * share the webhook would record on a pod of the lever (undefined for one without a GPU).
   */
  constructor(
    admin: HttpCluster,
    namespace: string,
    nodes: readonly K8sObject[],
    pool: GPUPool & K8sObject,
    shareOf: (pod: K8sObject) => ShareRequest | undefined,
  ) {
    const admit = (pod: K8sObject) => admitted(pod, shareOf(pod));
    this.pods = new Informer<K8sObject>(admin, RESOURCES.pods, { namespace, transform: (p) => admit(stripManagedFields(p)) });
    this.claims = new Informer<ResourceClaim>(admin, RESOURCES.resourceclaims, { namespace, transform: slimClaim });
    const fixed = fixedCaches(clusterFromManifests([pool, ...nodes]));
    if (fixed.gpus.list().length === 0)
      throw new Error(`scorer: no GPU object made of ${nodes.length} nodes for pool ${pool.metadata.name}`);
    const sources: PlacementSources = { ...fixed, pods: this.pods, claims: this.claims };
    const state = new PlacementState({ sources });
    const pods = this.pods;
    // A list after an idle spell reads the same informer: the pods in the cluster carry no opt-in label.
    const list = async () => ({ items: pods.list(), resourceVersion: '' }) as never;
    const cluster = { list, bind: admin.bind.bind(admin), get: admin.get.bind(admin) };
    this.extender = new AdmittedPodExtender({ state, cluster, pods }, admit);
    this.server = new ExtenderServer({
      extender: this.extender,
      prefix: CONTROLLER_PATHS.extender,
      port: 0,
      observe: () => this.calls++,
    });
  }

  /** The node our extender scored highest for pod `name`, if it was asked. */
  choice(name: string): string | undefined {
    return this.extender.chose.get(name);
  }

  /** Starts the informers and serves the extender on loopback; returns the urlPrefix. */
  async start(): Promise<string> {
    for (const i of [this.pods, this.claims]) i.start();
    await Promise.all([this.pods.waitForSync(), this.claims.waitForSync()]);
    const port = await this.server.listen();
    return `http://127.0.0.1:${port}${CONTROLLER_PATHS.extender}`;
  }

  /**
   * Waits until the informers show `pod` bound and its claim (if any) allocated, so that the next pod
   * is scored knowing where this one went (in a cluster, pods come faster than that; here each one
   * is placed alone, to compare placement, not cache lag).
   */
  async seen(pod: K8sObject, claim: string | undefined): Promise<void> {
    const ns = pod.metadata.namespace;
    for (;;) {
      const p = this.pods.get(`${ns}/${pod.metadata.name}`);
      const c = claim === undefined ? undefined : this.claims.get(`${ns}/${claim}`);
      if ((p?.spec as { nodeName?: string } | undefined)?.nodeName && (claim === undefined || c?.status?.allocation)) return;
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async stop(): Promise<void> {
    await this.server.close();
    await Promise.all([this.pods.stop(), this.claims.stop()]);
  }
}

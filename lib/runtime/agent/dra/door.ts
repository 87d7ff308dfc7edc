/**
 * The DRA front door: the kubelet's DRA plugin API for our driver. The kubelet names each claim to
 * prepare (namespace, name, UID) before the pod's containers start, and calls unprepare once they
 * are all gone; a claim names its devices and its pod, so nothing is guessed. Prepare reads the claim
 * and its pod, has the share machinery (../share/delivery.ts) make the share's daemon answer with its
 * limits and write the claim's CDI spec, and answers that CDI device. Unprepare ends the share's
 * clients and removes the spec. Each claim gets its own answer, an error saying what is wrong.
 */
import type * as grpc from '@grpc/grpc-js';
import { join } from 'node:path';
import { DRA_DRIVER } from '../../../model/dra';
import type { Cluster } from '../../kube/cluster';
import { RESOURCES } from '../../kube/resources';
import { cdiDeviceName } from '../cdi/spec';
import { closeUnix, registrationService, serveUnix } from '../kubelet/plugin-registration';
import type { SmiGpu } from '../nvidia-smi';
import type { ShareDelivery } from '../share/delivery';
import {
  Claim,
  DRA_PLUGIN_SERVICE,
  DRA_PLUGIN_TYPE,
  draApi,
  NodePrepareResourceResponse,
  NodePrepareResourcesRequest,
  NodePrepareResourcesResponse,
  NodeUnprepareResourceResponse,
  NodeUnprepareResourcesRequest,
  NodeUnprepareResourcesResponse,
} from './api';
import { ClaimPod, claimShare, named, nodeResults, reservedPod } from './claim-share';
import type { ResourceClaim } from '../../shared/dra/claim-results';

/** The CDI device of a claim: one per claim, given to every container that names the claim. */
export function claimDevice(uid: string): string {
  return `claim-${uid}`;
}

export interface DraDoorOptions {
  readonly cluster: Cluster;
  readonly nodeName: string;
  readonly delivery: ShareDelivery;
  /** The kubelet's plugin watcher folder (`/var/lib/kubelet/plugins_registry`). */
  readonly registryDir: string;
  /** The driver's own folder, where its service socket goes (`/var/lib/kubelet/plugins/gpu.tensor-fusion.ai`). */
  readonly pluginDir: string;
  /** Physical TFLOPS of a GPU (0 when unknown). */
  readonly tflopsOf: (gpu: SmiGpu) => number;
  /** Publishes the node's devices: started and stopped with the door, refreshed when the GPUs or their readiness change. */
  readonly slices?: { start(): Promise<void>; refresh(): Promise<void>; stop(): Promise<void> };
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export class DraDoor {
  private servers: grpc.Server[] = [];

  constructor(private readonly opts: DraDoorOptions) {}

  /** The service socket the kubelet calls. */
  get endpoint(): string {
    return join(this.opts.pluginDir, 'dra.sock');
  }

  /** The registration socket the kubelet's plugin watcher finds. */
  get registrationSocket(): string {
    return join(this.opts.registryDir, `${DRA_DRIVER}-reg.sock`);
  }

  /** Serves the DRA service, then the registration socket (so the kubelet never finds an endpoint that does not answer). */
  async start(): Promise<void> {
    const draImpl = {
      NodePrepareResources: (
        call: grpc.ServerUnaryCall<NodePrepareResourcesRequest, unknown>,
        cb: grpc.sendUnaryData<NodePrepareResourcesResponse>,
      ) => void this.prepare(call.request.claims).then((claims) => cb(null, { claims })),
      NodeUnprepareResources: (
        call: grpc.ServerUnaryCall<NodeUnprepareResourcesRequest, unknown>,
        cb: grpc.sendUnaryData<NodeUnprepareResourcesResponse>,
      ) => void this.unprepare(call.request.claims).then((claims) => cb(null, { claims })),
    };
    this.servers.push(await serveUnix(this.endpoint, [[draApi().service, draImpl]]));
    const info = { type: DRA_PLUGIN_TYPE, name: DRA_DRIVER, endpoint: this.endpoint, supported_versions: [DRA_PLUGIN_SERVICE] };
    await this.opts.slices?.start();
    this.servers.push(
      await serveUnix(this.registrationSocket, [
        registrationService(info, (s) => {
          this.opts.log?.(s.plugin_registered ? 'DRA plugin registered with the kubelet' : 'the kubelet refused the DRA plugin', {
            driver: DRA_DRIVER,
            ...(s.error ? { err: s.error } : {}),
          });
          // A (re)started kubelet deletes the node's slices of drivers not yet registered: publish again.
          if (s.plugin_registered) this.update();
        }),
      ]),
    );
  }

  /** The GPUs or their readiness changed. */
  update(): void {
    void this.opts.slices?.refresh();
  }

  /** Stops serving; the shares keep running (a new agent serves them again). */
  async stop(): Promise<void> {
    const [dra, reg] = this.servers;
    this.servers = [];
    await this.opts.slices?.stop();
    await closeUnix(reg, this.registrationSocket);
    await closeUnix(dra, this.endpoint);
  }

  /** Prepares each claim on its own: one claim's error is its own answer. */
  async prepare(claims: Claim[]): Promise<Record<string, NodePrepareResourceResponse>> {
    const answers = await Promise.all(
      claims.map((c) =>
        this.prepareOne(c).catch((err: Error) => {
          this.opts.log?.('NodePrepareResources refused', { claim: `${c.namespace}/${c.name}`, err: err.message });
          return { devices: [], error: err.message };
        }),
      ),
    );
    return Object.fromEntries(claims.map((c, i) => [c.uid, answers[i]]));
  }

  /** Ends each claim's share; a claim never prepared here (or already unprepared) is done. */
  async unprepare(claims: Claim[]): Promise<Record<string, NodeUnprepareResourceResponse>> {
    const answers = await Promise.all(
      claims.map(async (c) => {
        try {
          const pod = await this.opts.delivery.withdraw(claimDevice(c.uid));
          if (pod) this.opts.log?.("claim unprepared: its share's clients ended", { claim: `${c.namespace}/${c.name}`, podUid: pod });
          return { error: '' };
        } catch (err) {
          return { error: `claim ${c.namespace}/${c.name}: ending its share failed: ${(err as Error).message}` };
        }
      }),
    );
    return Object.fromEntries(claims.map((c, i) => [c.uid, answers[i]]));
  }

  private async prepareOne(c: Claim): Promise<NodePrepareResourceResponse> {
    const { cluster, nodeName } = this.opts;
    const claim = await cluster.get<ResourceClaim>(RESOURCES.resourceclaims, { namespace: c.namespace, name: c.name });
    if (!claim) throw new Error(`claim ${c.namespace}/${c.name} is not in the API`);
    if (claim.metadata.uid !== c.uid)
      throw new Error(`claim ${c.namespace}/${c.name} has UID ${claim.metadata.uid}, not ${c.uid}: it was deleted and made again`);
    const results = nodeResults(claim, nodeName);
    if (results.length === 0)
      throw new Error(`claim ${named(claim)} is allocated no device of driver ${DRA_DRIVER} on node ${nodeName} (pool ${nodeName})`);
    const ref = reservedPod(claim);
    const pod = await cluster.get<ClaimPod>(RESOURCES.pods, { namespace: c.namespace, name: ref.name });
    if (!pod || pod.metadata.uid !== ref.uid)
      throw new Error(`pod ${c.namespace}/${ref.name} (UID ${ref.uid}), which claim ${named(claim)} is reserved for, is not in the API`);
    if (pod.spec?.nodeName !== nodeName)
      throw new Error(`pod ${named(pod)} is bound to ${pod.spec?.nodeName ? `node ${pod.spec.nodeName}` : 'no node'}, not ${nodeName}`);
    const share = claimShare(claim, pod, results, await this.opts.delivery.gpus(), this.opts.tflopsOf);
    await this.opts.delivery.deliverShare(claimDevice(c.uid), share, { 'tensor-fusion.ai/claim': named(claim) });
    // One CDI device holds the whole share: named on the first device only, so the runtime gets it once.
    return {
      devices: results.map((r, i) => ({
        request_names: [r.request],
        pool_name: r.pool,
        device_name: r.device,
        cdi_device_ids: i === 0 ? [cdiDeviceName(claimDevice(c.uid))] : [],
        ...(r.shareID ? { share_id: r.shareID } : {}),
      })),
      error: '',
    };
  }
}

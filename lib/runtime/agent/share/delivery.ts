/**
 * The share machinery both front doors use, once the kubelet has named the pod: the pod's record is
 * read and checked, its share's daemon is made to answer with the pod's limits, and only then is
 * the CDI spec written that the container runtime applies to the container. A pod without a valid
 * record gets an error that says why, and its container does not start.
 */
import { SHARE_RESOURCE } from '../../../model/metadata-keys';
import { allocationOf } from '../../shared/pod-share/record';
import { CdiSpec } from '../cdi/spec';
import { CdiWriter } from '../cdi/writer';
import type { MpsShare, MpsSupervisor } from '../mps/supervisor';
import type { SmiGpu } from '../nvidia-smi';
import { shareEdits, ShareHost } from './container-edits';
import { mpsShareOf, PodLike, shareContainerNames } from './mps-share';

export interface ShareDeliveryOptions {
  readonly nodeName: string;
  readonly supervisor: MpsSupervisor;
  readonly cdi: CdiWriter;
  /** The node's GPUs now. */
  readonly gpus: () => Promise<readonly SmiGpu[]>;
  /** Device nodes, minors and driver libraries as the host has them now. */
  readonly host: () => ShareHost;
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export class ShareDelivery {
  constructor(private readonly opts: ShareDeliveryOptions) {}

  /**
   * Delivers `pod`'s share to its container `container` as the CDI device `device`.
   * @throws Error naming the pod and what is wrong: the kubelet reports it, and the container does not start
   */
  async deliver(device: string, pod: PodLike, container: string): Promise<CdiSpec> {
    const name = `${pod.metadata.namespace}/${pod.metadata.name}`;
    if (pod.spec?.nodeName !== this.opts.nodeName)
      throw new Error(`pod ${name} is bound to ${pod.spec?.nodeName ? `node ${pod.spec.nodeName}` : 'no node'}, not ${this.opts.nodeName}`);
    if (!allocationOf(pod))
      throw new Error(
        `pod ${name} requests ${SHARE_RESOURCE} but holds no share admitted by the tensor-fusion webhook and placed by its scheduler: refused`,
      );
    if (!shareContainerNames(pod).includes(container))
      throw new Error(`container ${container} of pod ${name} is not one the webhook gave ${SHARE_RESOURCE}: refused`);
    return this.deliverShare(device, mpsShareOf(pod, await this.opts.gpus()), { 'tensor-fusion.ai/container': container });
  }

  /**
   * Makes `share`'s daemon answer with its limits, then writes the CDI spec of `device` for it (the
   * last step of both doors, once the share is known). `annotations` say what the spec was written for.
   */
  async deliverShare(device: string, share: MpsShare, annotations: Record<string, string> = {}): Promise<CdiSpec> {
    const dirs = await this.opts.supervisor.ensure(share);
    const spec = this.opts.cdi.write(device, shareEdits(share, dirs.pipeDir, this.opts.host()), share.id, {
      'tensor-fusion.ai/pod': share.pod,
      ...annotations,
    });
    this.opts.log?.('share delivered', { pod: share.pod, device, gpus: share.gpuUuids, ...annotations });
    return spec;
  }

  /** The node's GPUs now. */
  gpus(): Promise<readonly SmiGpu[]> {
    return this.opts.gpus();
  }

  /**
   * Ends the share of the pod whose spec `device` is (its clients through its daemon) and removes
   * the spec. @returns the pod (its share id) the spec was written for; undefined when there is no such spec
   */
  async withdraw(device: string): Promise<string | undefined> {
    const podUid = this.opts.cdi.podOf(device);
    if (podUid) await this.opts.supervisor.release(podUid);
    this.opts.cdi.remove(device);
    return podUid;
  }

  /** Removes the CDI specs of pods that `live` does not know; their daemons are the supervisor's to end. */
  prune(live: (podUid: string) => boolean): void {
    for (const device of this.opts.cdi.prune(live)) this.opts.log?.('CDI spec of a finished pod removed', { device });
  }
}

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
import type { MpsSupervisor } from '../mps/supervisor';
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
    const share = mpsShareOf(pod, await this.opts.gpus());
    const dirs = await this.opts.supervisor.ensure(share);
    const spec = this.opts.cdi.write(device, shareEdits(share, dirs.pipeDir, this.opts.host()), share.id, {
      'tensor-fusion.ai/pod': name,
      'tensor-fusion.ai/container': container,
    });
    this.opts.log?.('share delivered', { pod: name, container, device, gpus: share.gpuUuids });
    return spec;
  }

  /** Removes the CDI specs of pods that `live` does not know; their daemons are the supervisor's to end. */
  prune(live: (podUid: string) => boolean): void {
    for (const device of this.opts.cdi.prune(live)) this.opts.log?.('CDI spec of a finished pod removed', { device });
  }
}

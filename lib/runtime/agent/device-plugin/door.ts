/**
 * The device-plugin front door: `tensor-fusion.ai/share` served to the kubelet without guessing.
 * Allocate names device ids only, so its answer depends on nothing else: a CDI device named after
 * those ids. Before the container starts, PreStartContainer asks the kubelet's PodResources API
 * which pod and container hold the ids, and the share machinery (../share/delivery.ts) writes that
 * device's spec for that pod's share, once its daemon answers with the pod's limits.
 */
import { createHash } from 'node:crypto';
import { Histogram, Registry } from 'prom-client';
import { SHARE_RESOURCE } from '../../../model/metadata-keys';
import type { Cluster } from '../../kube/cluster';
import { RESOURCES } from '../../kube/resources';
import { AGENT_METRICS } from '../../../contract/agent';
import { cdiDeviceName } from '../cdi/spec';
import { holderOf, listPodResources } from '../kubelet/pod-resources';
import type { ShareDelivery } from '../share/delivery';
import type { PodLike } from '../share/mps-share';
import type { ContainerAllocateResponse, Device } from './api';
import { DevicePluginServer } from './server';

const SOCKET_NAME = 'tensor-fusion-share.sock';

/** The CDI device name of a container's ids: the same ids always give the same name, on every restart. */
export function deviceKey(ids: readonly string[]): string {
  return `ids-${createHash('sha256')
    .update([...ids].sort().join(','))
    .digest('hex')
    .slice(0, 20)}`;
}

/** Allocate's answer: the CDI device of these ids, nothing else (the spec is written at PreStartContainer). */
export function allocateAnswer(ids: readonly string[]): ContainerAllocateResponse {
  return { envs: {}, mounts: [], devices: [], annotations: {}, cdi_devices: [{ name: cdiDeviceName(deviceKey(ids)) }] };
}

export interface DevicePluginDoorOptions {
  readonly cluster: Cluster;
  readonly delivery: ShareDelivery;
  readonly pluginDir: string;
  readonly podResourcesSocket: string;
  /** The devices to advertise now. */
  readonly devices: () => Device[];
  readonly registry: Registry;
  readonly log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export class DevicePluginDoor {
  private readonly server: DevicePluginServer;
  private readonly seconds: Histogram<'method' | 'outcome'>;

  constructor(private readonly opts: DevicePluginDoorOptions) {
    this.seconds = new Histogram({
      name: AGENT_METRICS.devicePluginSeconds,
      help: "Time the agent takes to answer the kubelet's device-plugin calls",
      labelNames: ['method', 'outcome'],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [opts.registry],
    });
    this.server = new DevicePluginServer({
      pluginDir: opts.pluginDir,
      resourceName: SHARE_RESOURCE,
      socketName: SOCKET_NAME,
      devices: opts.devices,
      allocate: (ids) => {
        const end = this.seconds.startTimer({ method: 'Allocate' });
        const answer = allocateAnswer(ids);
        end({ outcome: 'ok' });
        return answer;
      },
      preStart: (ids) => this.timed('PreStartContainer', () => this.preStart(ids)),
      log: opts.log,
    });
  }

  start(): Promise<void> {
    return this.server.start();
  }

  /** Registered with the kubelet now running (the agent's readiness). */
  get registered(): boolean {
    return this.server.isRegistered;
  }

  /** The advertised devices changed (health, GPUs). */
  update(): void {
    this.server.update();
  }

  stop(): Promise<void> {
    return this.server.stop();
  }

  /** Names the pod through the kubelet and delivers its share to the container as the ids' CDI device. */
  async preStart(ids: string[]): Promise<void> {
    const holder = holderOf(await listPodResources(this.opts.podResourcesSocket), SHARE_RESOURCE, ids);
    if (!holder) throw new Error(`the kubelet's PodResources API names no container holding ${SHARE_RESOURCE} devices ${ids.join(', ')}`);
    const pod = await this.opts.cluster.get<PodLike>(RESOURCES.pods, { namespace: holder.namespace, name: holder.pod });
    if (!pod)
      throw new Error(`pod ${holder.namespace}/${holder.pod}, which holds ${SHARE_RESOURCE} devices ${ids.join(', ')}, is not in the API`);
    await this.opts.delivery.deliver(deviceKey(ids), pod, holder.container);
  }

  private async timed(method: string, f: () => Promise<void>): Promise<void> {
    const end = this.seconds.startTimer({ method });
    try {
      await f();
      end({ outcome: 'ok' });
    } catch (err) {
      end({ outcome: 'refused' });
      this.opts.log?.(`${method} refused`, { err: (err as Error).message });
      throw err;
    }
  }
}

/**
 * A pod's CPU and memory requests as kube-scheduler counts them (NodeResourcesFit): the larger of the
 * containers' sum and the largest init container, plus the pod overhead. The extender needs them so
 * that GPU placement sees what CPU and memory a node has left, as the trace protocol and the
 * scheduler do: a GPU on a node whose CPU is taken is stranded. (Restartable init containers are
 * counted as plain init containers: an over-estimate of nothing, an under-estimate of sidecars.)
 */
import { parseQuantity } from '../../k8s/quantity';
import type { K8sObject } from '../kube/cluster';

export interface PodRequests {
  /** Millicores. */
  cpu: number;
  /** Bytes. */
  memory: number;
}

interface ContainerLike {
  resources?: { requests?: Record<string, string | number> };
}

/**
 * Millicores of a CPU quantity, rounded up as Kubernetes does; nanocores (its finest unit) first, so
 * that a double's error does not round `32200m` (32.2 * 1000 = 32200.000000000004) up to 32201.
 */
const millicores = (cores: number) => Math.ceil(Math.round(cores * 1e9) / 1e6);

function of(c: ContainerLike | undefined): PodRequests {
  const r = c?.resources?.requests ?? {};
  return { cpu: millicores(parseQuantity(r.cpu ?? 0) ?? 0), memory: Math.ceil(parseQuantity(r.memory ?? 0) ?? 0) };
}

export function podRequests(pod: K8sObject): PodRequests {
  const spec = (pod.spec ?? {}) as { containers?: ContainerLike[]; initContainers?: ContainerLike[]; overhead?: Record<string, string> };
  const sum = { cpu: 0, memory: 0 };
  for (const c of spec.containers ?? []) {
    const r = of(c);
    sum.cpu += r.cpu;
    sum.memory += r.memory;
  }
  for (const c of spec.initContainers ?? []) {
    const r = of(c);
    sum.cpu = Math.max(sum.cpu, r.cpu);
    sum.memory = Math.max(sum.memory, r.memory);
  }
  const overhead = of({ resources: { requests: spec.overhead } });
  return { cpu: sum.cpu + overhead.cpu, memory: sum.memory + overhead.memory };
}

/** The totals as one container's requests: what a slim pod cache keeps of the spec. */
export function requestsAsContainer(r: PodRequests): { resources: { requests: { cpu: string; memory: string } } } {
  return { resources: { requests: { cpu: `${r.cpu}m`, memory: String(r.memory) } } };
}

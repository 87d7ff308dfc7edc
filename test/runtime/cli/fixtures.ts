/** A small platform and pods for the kubectl plugin's unit tests: two nodes of two A100s (312 TFLOPS, 80Gi). */
import type { Allocation } from '../../../lib/allocator';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import { renderGpuPool } from '../../../lib/render/gpu-pool';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { clusterFromManifests } from '../../../lib/runtime/cli/manifests';
import type { ClusterObjects } from '../../../lib/runtime/cli/cluster-objects';
import { CliIo, run } from '../../../lib/runtime/cli/main';
import { a100Labels } from '../../support/control-plane/install';
import { allocatedClaim } from '../../support/dra-claim';

export const POOL = 'pool-a';
export const GI = 2 ** 30;
type Obj = Record<string, any>;

export function platform(extra: Obj[] = [], nodes = ['n-0', 'n-1']): Obj[] {
  return [
    {
      ...renderGpuPool(POOL, { tflopsOversellRatio: 100 }),
      metadata: { name: POOL, annotations: { 'tensor-fusion.ai/is-default-pool': 'true' } },
    },
    ...nodes.map((name) => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: a100Labels(POOL, 2) },
      status: { allocatable: { cpu: '8', memory: '64Gi' } },
    })),
    ...extra,
  ];
}

/** A GPU pod as a user writes it (before admission). */
export function gpuPod(name: string, tflops: string, vram = '10Gi', namespace = 'ml', extra: Record<string, string> = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: { 'tensor-fusion.ai/tflops-request': tflops, 'tensor-fusion.ai/vram-request': vram, ...extra },
    },
    spec: { containers: [{ name: 'main', image: 'x', resources: { requests: { cpu: '100m' } } }] },
  };
}

/** A pod that holds `tflops` and `vram` bytes on `gpus` of `node`, as the extender's bind leaves it. */
export function heldPod(name: string, node: string, gpus: string[], tflops: number, vram: number, namespace = 'ml'): K8sObject {
  const uid = `uid-${name}`;
  const a: Allocation = {
    id: uid,
    pool: POOL,
    node,
    gpuIds: gpus,
    tflopsRequest: tflops,
    tflopsLimit: tflops,
    vramRequest: vram,
    vramLimit: vram,
    cpu: 0,
    memory: 0,
    qos: 'medium',
  };
  const share = {
    pool: POOL,
    qos: 'medium',
    gpuCount: gpus.length,
    tflopsRequest: tflops,
    tflopsLimit: tflops,
    vramRequest: vram,
    vramLimit: vram,
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      uid,
      labels: { [ENABLED_LABEL]: 'true' },
      annotations: { [ALLOCATION_ANNOTATION]: JSON.stringify(a), [SHARE_ANNOTATION]: JSON.stringify(share) },
    },
    spec: { nodeName: node, containers: [] },
    status: { phase: 'Running' },
  };
}

/**
 * A bound pod of a DRA pool (its share record of `tflops` and `vram` bytes, our claim, no allocation
 * record) and its claim as kube-scheduler allocates it: `consumed` of device `gpu-<index>` of `node`.
 */
export function draPod(
  name: string,
  node: string,
  index: number,
  share: { tflops: number; vram: number },
  consumed: { tflops: string; memory: string },
): { pod: K8sObject; claim: K8sObject } {
  const held = heldPod(name, node, [`${node}-gpu-${index}`], share.tflops, share.vram);
  const uid = held.metadata.uid!;
  const pod: K8sObject = {
    ...held,
    metadata: { ...held.metadata, annotations: { [SHARE_ANNOTATION]: held.metadata.annotations![SHARE_ANNOTATION] } },
    spec: { nodeName: node, resourceClaims: [{ name: 'tensor-fusion-gpu', resourceClaimTemplateName: 'tf-0123456789ab' }], containers: [] },
  };
  const claim = allocatedClaim({
    name: `${name}-tensor-fusion-gpu-x1`,
    namespace: 'ml',
    pod: { name, uid },
    at: { node, index, consumed, shareID: 's' },
    reserved: true,
  });
  return { pod, claim };
}

/** The platform as the cluster would hold it, with `pods` in it. */
export function cluster(pods: K8sObject[] = [], extra: Obj[] = []): ClusterObjects {
  return { ...clusterFromManifests(platform(extra) as K8sObject[]), pods };
}

/** Runs a command line with files and a cluster in memory; returns what it printed and wrote. */
export async function tf(argv: string[], files: Record<string, string> = {}, objects = cluster(), override: Partial<CliIo> = {}) {
  const out = { stdout: '', stderr: '', written: {} as Record<string, string> };
  const lists: Record<string, readonly K8sObject[]> = {
    pods: objects.pods,
    nodes: objects.nodes,
    gpupools: objects.pools,
    gpunodes: objects.gpuNodes,
    gpus: objects.gpus,
    tensorfusionworkloads: objects.workloads,
    workloadprofiles: objects.profiles,
    gpuresourcequotas: objects.quotas,
    resourceclaims: objects.claims ?? [],
    resourceslices: objects.slices ?? [],
  };
  const io: CliIo = {
    stdout: (t) => void (out.stdout += t),
    stderr: (t) => void (out.stderr += t),
    connect: async () =>
      ({
        list: async <T extends K8sObject>(rt: { plural: string }) => ({
          items: [...(lists[rt.plural] ?? [])] as T[],
          resourceVersion: '1',
        }),
        get: async <T extends K8sObject>(rt: { plural: string }, ref: { namespace?: string; name: string }) =>
          lists[rt.plural]?.find(
            (o) => o.metadata.name === ref.name && (ref.namespace === undefined || o.metadata.namespace === ref.namespace),
          ) as T | undefined,
      }) as never,
    writeFile: (p, text) => void (out.written[p] = text),
    readFile: (p) => {
      if (!(p in files)) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
      return files[p];
    },
  };
  const code = await run(argv, { ...io, ...override });
  return { code, ...out };
}

/**
 * Karpenter's KWOK provider as the growth suite and `bench:growth` drive it: GPU instance types, the
 * one KWOKNodeClass made Ready by hand (no controller of the provider readies it), and NodePools of
 * GPU nodes. Start Karpenter itself with {@link ControlPlane.startKarpenter}.
 */
import type { ControlPlane } from './control-plane';
import type { Obj } from './control-plane/install';

/** The label Karpenter puts on every node it adds: the NodePool's name. */
export const NODEPOOL_LABEL = 'karpenter.sh/nodepool';

const NODE_CLASS = { apiVersion: 'karpenter.kwok.sh/v1alpha1', kind: 'KWOKNodeClass', metadata: { name: 'default' } };

/**
 * An instance type of the provider's file: `gpus` nvidia.com/gpu (none for 0: a DRA pool's nodes
 * publish their GPUs as devices instead), 32 CPUs, on demand in one zone at `price`.
 */
export function gpuInstanceType(name: string, gpus: number, price = 10): Obj {
  return {
    name,
    architecture: 'amd64',
    operatingSystems: ['linux'],
    resources: { cpu: '32', memory: '256Gi', pods: '110', ...(gpus > 0 ? { 'nvidia.com/gpu': String(gpus) } : {}) },
    offerings: [
      {
        Price: price,
        Available: true,
        Requirements: [
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['test-zone-a'] },
        ],
      },
    ],
  };
}

/** Applies the KWOKNodeClass `default` and sets its Ready condition, which a NodePool waits for. */
export async function readyNodeClass(cp: ControlPlane): Promise<void> {
  await cp.kubectlOk(['apply', '--server-side', '-f', '-'], { input: JSON.stringify(NODE_CLASS) });
  const ready = {
    type: 'Ready',
    status: 'True',
    reason: 'Ready',
    message: '',
    observedGeneration: 1,
    lastTransitionTime: new Date().toISOString(),
  };
  await cp.kubectlOk([
    'patch',
    'kwoknodeclass',
    'default',
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status: { conditions: [ready] } }),
  ]);
}

/** What {@link gpuNodePool} makes. */
export interface GpuNodePoolSpec {
  name: string;
  /** The instance type its nodes are. */
  instanceType: string;
  /** Labels of its nodes, as a cloud's node template sets them. */
  labels: Record<string, string>;
  /** The most nvidia.com/gpu its nodes may add up to. */
  gpuLimit: number;
}

/**
 * A NodePool of one instance type whose empty nodes go 5 s after they empty, all at once (no
 * disruption budget), and never expire.
 */
export function gpuNodePool(p: GpuNodePoolSpec): Obj {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: p.name },
    spec: {
      template: {
        metadata: { labels: p.labels },
        spec: {
          requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: [p.instanceType] }],
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          expireAfter: 'Never',
        },
      },
      disruption: { consolidationPolicy: 'WhenEmpty', consolidateAfter: '5s', budgets: [{ nodes: '100%' }] },
      limits: { 'nvidia.com/gpu': String(p.gpuLimit) },
    },
  };
}

/**
 * The batch window the growth runs give Karpenter: long enough for every placeholder of a burst
 * (made over a few growth passes as kube-scheduler refuses the shares) to be packed together, as its
 * 10 s default does.
 */
export const GROWTH_BATCH = { BATCH_IDLE_DURATION: '5s', BATCH_MAX_DURATION: '20s' } as const;

/** A share of a quarter of an 80 GiB A100 (as `a100Labels` describes one) by VRAM: four take one GPU. */
export const QUARTER_A100 = { tflops: '10', vram: '20Gi' } as const;

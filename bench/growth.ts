/**
 * npm run bench:growth — a pool that grows under a real Karpenter (v1.15.0's KWOK provider, as
 * test/e2e/karpenter-growth.test.ts runs it), against plain GPU pods under the same Karpenter, in one
 * run on the real control plane (kube-scheduler, kube-controller-manager, KWOK, the controller with its
 * kube-scheduler and extender).
 *
 * Both sides start from one 4-GPU node of their own and grow through a NodePool of their own of the
 * same 4-GPU instance type, with the same batch window and consolidation (5 s after empty):
 * 1. share: `--pods` quarter-GPU shares of a device-plugin pool with `growth: { gpusPerNode: 4 }`. The
 *    pool's node takes 16; the growth reconciler asks for the rest in whole GPUs (placeholders) and
 *    the new nodes join the pool by their labels. Then the shares are deleted and the empty nodes go.
 * 2. plain: `--pods` pods asking `nvidia.com/gpu: 1` each, no pool, bound by the default
 *    kube-scheduler. Their node selector keeps them to their own node and NodePool: the pool's node
 *    offers no nvidia.com/gpu, and nodes of the share NodePool carry the pool's label, not theirs.
 * Per side: seconds from the burst's create to every pod Running (the extender's refusals, the growth
 * pass and the new nodes joining are all inside the share side's figure), to the first placeholder
 * (share side), to the first and the last node Karpenter added, the nodes it added, and seconds from
 * deleting the pods to the last added node gone. The share side goes first (`--plain-first`: the
 * other), so it alone meets a Karpenter that has added no node yet.
 *
 * `npm run bench:growth [-- --pods=40] [--plain-first]`. Needs the envtest binaries and Karpenter (`npm run
 * envtest:setup`). Prints figures and ends with one JSON line.
 */
import * as os from 'node:os';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import { Informer } from '../lib/runtime/kube/informer';
import { RESOURCES } from '../lib/runtime/kube/resources';
import { renderGpuPool } from '../lib/render/gpu-pool';
import { ENABLED_LABEL, GROWTH_POOL_LABEL } from '../lib/model/metadata-keys';
import { ControlPlane } from '../test/support/control-plane';
import { waitFor } from '../test/support/control-plane/process';
import {
  a100Labels,
  controllerIdentity,
  installWithPool,
  kwokNode,
  localGpuPod,
  type Obj,
  type RunningController,
  synthToTemp,
} from '../test/support/e2e';
import { GROWTH_BATCH, gpuInstanceType, gpuNodePool, NODEPOOL_LABEL, QUARTER_A100, readyNodeClass } from '../test/support/karpenter';
import { intFlag } from './flags';

const PODS = intFlag('pods', 40);
const POOL = 'grows';
const GPUS_PER_NODE = 4;
const SHARES_PER_GPU = 4;
const INSTANCE_TYPE = 'a100x4';
/** The label that keeps the plain side to its own nodes. */
const PLAIN_LABEL = 'bench.tensor-fusion.ai/plain';
/** The label that names a pod's side. */
const SIDE_LABEL = 'bench.tensor-fusion.ai/side';
type Side = 'share' | 'plain';
const SIDES: readonly Side[] = ['share', 'plain'];
/** `--plain-first`: the plain burst first, to see what going first (a cold Karpenter, a cold controller) costs. */
const ORDER: readonly Side[] = process.argv.includes('--plain-first') ? ['plain', 'share'] : SIDES;
/** Every pod of a burst Running within this, or the bench fails. */
const RUNNING_LIMIT_MS = 900_000;
/** Every added node gone within this after the pods are deleted, or the bench fails. */
const SCALE_DOWN_LIMIT_MS = 600_000;

/** Nodes either side may add: room for a burst of whole GPUs, and some. */
const GPU_LIMIT = GPUS_PER_NODE * (Math.ceil(PODS / GPUS_PER_NODE) + 2);

/** Each side's existing node, and its NodePool (named after the side). */
const SETUP: Record<Side, { node: Obj; nodePool: Obj }> = {
  share: {
    node: kwokNode({ name: 'gpu-0', cpu: '32', labels: a100Labels(POOL, GPUS_PER_NODE) }),
    nodePool: gpuNodePool({ name: 'share', instanceType: INSTANCE_TYPE, labels: a100Labels(POOL, GPUS_PER_NODE), gpuLimit: GPU_LIMIT }),
  },
  plain: {
    node: kwokNode({
      name: 'plain-0',
      cpu: '32',
      labels: { [PLAIN_LABEL]: 'true' },
      extended: { 'nvidia.com/gpu': String(GPUS_PER_NODE) },
    }),
    nodePool: gpuNodePool({ name: 'plain', instanceType: INSTANCE_TYPE, labels: { [PLAIN_LABEL]: 'true' }, gpuLimit: GPU_LIMIT }),
  },
};

function pod(side: Side, i: number): Obj {
  const labels = { [SIDE_LABEL]: side };
  if (side === 'share') return localGpuPod({ name: `share-${i}`, namespace: side, pool: POOL, ...QUARTER_A100, labels });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `plain-${i}`, namespace: side, labels: { ...labels, [ENABLED_LABEL]: 'false' } },
    spec: {
      nodeSelector: { [PLAIN_LABEL]: 'true' },
      containers: [
        { name: 'main', image: 'example.io/app:1', resources: { requests: { cpu: '100m' }, limits: { 'nvidia.com/gpu': '1' } } },
      ],
    },
  };
}

/** Nodes each side's NodePool may add at least: its existing node's room first, then whole new nodes. */
function nodesNeeded(side: Side): number {
  const perGpu = side === 'share' ? SHARES_PER_GPU : 1;
  return Math.ceil(Math.max(0, PODS - GPUS_PER_NODE * perGpu) / (GPUS_PER_NODE * perGpu));
}

interface Burst {
  runningS: number;
  /** The share side's first placeholder, after the extender refused the overflow. */
  firstPlaceholderS: number | null;
  firstNodeS: number | null;
  lastNodeS: number | null;
  nodesAdded: number;
  scaleDownS: number;
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

async function main(): Promise<void> {
  const synth = synthToTemp();
  const { user } = controllerIdentity(synth.controller);
  const load0 = os.loadavg()[0];
  const cp = await ControlPlane.start({ controllerManager: true, scheduler: true, karpenter: true, users: [user] });
  let ctl: RunningController | undefined;
  const stop = async () => {
    await ctl?.stop();
    await cp.stop();
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  const admin = cp.cluster('admin', 'bench-growth');
  const pods = new Informer<K8sObject>(admin, RESOURCES.pods, { labelSelector: SIDE_LABEL });
  const nodes = new Informer<K8sObject>(admin, RESOURCES.nodes, { labelSelector: NODEPOOL_LABEL });
  const placeholders = new Informer<K8sObject>(admin, RESOURCES.pods, { labelSelector: GROWTH_POOL_LABEL });
  try {
    console.log(`control plane started in ${cp.startMs} ms`);
    const docs = [
      renderGpuPool(POOL, { tflopsOversellRatio: 100, growth: { gpusPerNode: GPUS_PER_NODE } }),
      ...SIDES.map((side) => SETUP[side].node),
      ...SIDES.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
    ];
    ctl = await installWithPool(cp, synth, 'growth.yaml', docs, POOL, { totalNodes: 1, totalGPUs: GPUS_PER_NODE });
    await cp.startKarpenter([gpuInstanceType(INSTANCE_TYPE, GPUS_PER_NODE)], GROWTH_BATCH);
    await readyNodeClass(cp);
    await cp.kubectlOk(['apply', '--server-side', '-f', '-'], {
      input: SIDES.map((side) => JSON.stringify(SETUP[side].nodePool)).join('\n'),
    });
    await Promise.all([pods, nodes, placeholders].map((i) => i.start().waitForSync()));
    const sideNodes = (side: Side) => nodes.list().filter((n) => n.metadata.labels?.[NODEPOOL_LABEL] === side);

    const burst = async (side: Side): Promise<Burst> => {
      const added = new Set<string>();
      let firstNodeMs: number | undefined;
      let lastNodeMs: number | undefined;
      let placeholderMs: number | undefined;
      const t0 = performance.now();
      const sawNode = (n: K8sObject) => {
        if (n.metadata.labels?.[NODEPOOL_LABEL] !== side) return;
        added.add(n.metadata.name!);
        lastNodeMs = performance.now() - t0;
        firstNodeMs ??= lastNodeMs;
      };
      nodes.on({ add: sawNode });
      placeholders.on({ add: () => (placeholderMs ??= performance.now() - t0) });
      await cp.kubectlOk(['create', '-f', '-'], { input: Array.from({ length: PODS }, (_, i) => JSON.stringify(pod(side, i))).join('\n') });
      const running = () =>
        pods.list().filter((p) => p.metadata.namespace === side && (p.status as { phase?: string } | undefined)?.phase === 'Running')
          .length;
      await waitFor(`${side}: ${PODS} pods Running`, async () => running() === PODS, RUNNING_LIMIT_MS, 100);
      const runningMs = performance.now() - t0;
      const on = new Set(
        pods
          .list()
          .filter((p) => p.metadata.namespace === side)
          .map((p) => (p.spec as { nodeName?: string }).nodeName),
      );
      const grown = [...on].filter((n) => n && added.has(n)).length;
      const at = (ms: number | undefined) => (ms === undefined ? null : seconds(ms));
      console.log(
        `${side}: ${PODS} pods Running in ${seconds(runningMs)} s; first placeholder at ${at(placeholderMs) ?? '-'} s, ` +
          `new nodes from ${at(firstNodeMs) ?? '-'} s to ${at(lastNodeMs) ?? '-'} s; ` +
          `Karpenter added ${added.size} node(s) (${nodesNeeded(side)} needed), ${grown} with pods`,
      );
      const t1 = performance.now();
      await cp.kubectlOk(['delete', 'pods', '--all', '-n', side, '--wait=false']);
      await waitFor(
        `${side}: the nodes Karpenter added gone`,
        async () => sideNodes(side).length === 0 && pods.list().every((p) => p.metadata.namespace !== side),
        SCALE_DOWN_LIMIT_MS,
        100,
      );
      const scaleDownMs = performance.now() - t1;
      const claims = JSON.parse(await cp.kubectlOk(['get', 'nodeclaims', '-o', 'json'])).items.length;
      console.log(`${side}: pods deleted; the ${added.size} added node(s) gone in ${seconds(scaleDownMs)} s (${claims} NodeClaims left)`);
      return {
        runningS: seconds(runningMs),
        firstPlaceholderS: at(placeholderMs),
        firstNodeS: at(firstNodeMs),
        lastNodeS: at(lastNodeMs),
        nodesAdded: added.size,
        scaleDownS: seconds(scaleDownMs),
      };
    };

    const bursts = {} as Record<Side, Burst>;
    for (const side of ORDER) {
      bursts[side] = await burst(side);
      if (side !== 'share') continue;
      const gpuNodes = JSON.parse(await cp.kubectlOk(['get', 'gpunodes', '-o', 'json'])).items.map((g: Obj) => g.metadata.name);
      console.log(`after scale-down: ${placeholders.size()} placeholders left, GPUNodes ${gpuNodes.join(', ')}`);
    }
    const { share, plain } = bursts;
    const ratio = Math.round((share.runningS / plain.runningS) * 100) / 100;
    console.log(`share/plain time to all Running: ${ratio}× (goal: at most 1.3×)`);
    console.log(
      `nodes added: ${share.nodesAdded} for ${PODS} quarter-GPU shares against ${plain.nodesAdded} for ${PODS} whole GPUs (each side's own node took ${GPUS_PER_NODE * SHARES_PER_GPU} and ${GPUS_PER_NODE} first)`,
    );
    console.log(
      JSON.stringify({
        sharePodsRunningS: share.runningS,
        plainPodsRunningS: plain.runningS,
        shareNodesAdded: share.nodesAdded,
        plainNodesAdded: plain.nodesAdded,
        scaleDownS: share.scaleDownS,
        plainScaleDownS: plain.scaleDownS,
        ratio,
        shareFirstPlaceholderS: share.firstPlaceholderS,
        shareFirstNodeS: share.firstNodeS,
        plainFirstNodeS: plain.firstNodeS,
        shareLastNodeS: share.lastNodeS,
        plainLastNodeS: plain.lastNodeS,
        order: ORDER.join(','),
        shareNodesNeeded: nodesNeeded('share'),
        plainNodesNeeded: nodesNeeded('plain'),
        pods: PODS,
        gpusPerNode: GPUS_PER_NODE,
        sharesPerGpu: SHARES_PER_GPU,
        controlPlaneStartMs: cp.startMs,
        loadAverage1m: { start: Math.round(load0 * 100) / 100, end: Math.round(os.loadavg()[0] * 100) / 100 },
      }),
    );
  } finally {
    await Promise.all([pods, nodes, placeholders].map((i) => i.stop()));
    await stop();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});

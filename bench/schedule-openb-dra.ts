/**
 * The DRA side of bench:schedule's openb replay (`--openb=DIR --dra`): the same trace nodes as KWOK
 * nodes whose GPUs are ResourceSlices exactly as the node agent publishes them (resourceSlice), the
 * same pods with a claim from the ResourceClaimTemplate the webhook would give them (claimTemplate),
 * kube-controller-manager making the claims and kube-scheduler's DRA allocator allocating them. Each
 * lever that can steer first fit gets its own copy of the nodes (a node label and taint keep every
 * side's pods on its own nodes), its own namespace and its own replay, so all run in one control plane:
 *
 * - plain: kube-scheduler's default profile, slices in device index order;
 * - ordered: the slice republished after each allocation with the most-used GPU first (what the agent
 *   can do from the claims it prepared), so first fit becomes best fit within a node;
 * - fgd: the product as it is: slices as the agent publishes them (index order), and our extender as
 *   the install configures it (served by dra-scorer.ts): it scores a DRA pod's nodes in prioritize and
 *   places CPU-only pods in filter;
 * - binpack: ordered, and kube-scheduler's NodeResourcesFit scoring MostAllocated (CPU and memory).
 *
 * Unallocated GPU % at 100% arrived is computed from the claims' allocations: what each bound pod's
 * claim consumed (TFLOPS, in milli-GPU of a 1000-TFLOPS GPU), with trace-replay's formula.
 */
import type { K8sObject } from '../lib/runtime/kube/cluster';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import { Informer } from '../lib/runtime/kube/informer';
import { RESOURCES } from '../lib/runtime/kube/resources';
import { renderGpuPool } from '../lib/render/gpu-pool';
import type { GPUPool } from '../lib/api';
import { DRA_API_VERSION, DRA_DEVICE_CLASS, DRA_DRIVER, DRA_POD_CLAIM } from '../lib/model/dra';
import { claimTemplate, ClaimTemplate } from '../lib/runtime/shared/dra/claim-template';
import { deviceIndex, resourceSlice, ResourceSlice, SliceGpu } from '../lib/runtime/shared/dra/resource-slice';
import { claimGpus, HeldGpu, ResourceClaim } from '../lib/runtime/shared/dra/claim-results';
import type { ShareRequest } from '../lib/runtime/shared/share';
import { renderSchedulerConfiguration } from '../lib/render/controller/kube-scheduler';
import type { ControlPlane } from '../test/support/control-plane';
import { kwokNode, writeYaml } from '../test/support/control-plane/install';
import { kwokGpuUuid } from '../test/support/dra-slices';
import { allocatorRun, replayTaken, TraceNode, TracePod } from './trace-replay';
import type { PlacementMode } from '../lib/model/rules';
import { Decisions, NotScheduled } from './scheduler-decisions';
import { GPU_TFLOPS, GPU_VRAM_MIB, gpuNodeLabels, openbPool } from './openb-gpu';
import { DraScorer } from './dra-scorer';
import { percentile } from './stats';

/** The levers, in the order they are reported. */
export const DRA_LEVERS = ['plain', 'ordered', 'fgd', 'binpack'] as const;
export type DraLever = (typeof DRA_LEVERS)[number];

/** The levers whose slices are republished most-used GPU first after each allocation. */
const REORDERS: ReadonlySet<DraLever> = new Set(['ordered', 'binpack']);

const LEVER_LABELS: Record<DraLever, string> = {
  plain: 'plain DRA (default profile, slices in index order)',
  ordered: 'slices republished most-used GPU first',
  fgd: 'our extender (nodes scored in prioritize), slices in index order',
  binpack: 'ordered + NodeResourcesFit MostAllocated',
};

/** The node label and taint that keep a side's pods on its own nodes. */
const SIDE_KEY = 'bench.tensor-fusion.ai/side';
const POOL = 'openb-dra';
const SLICES = RESOURCES.resourceslices;
const CLAIMS = RESOURCES.resourceclaims;
const VRAM_BYTES = GPU_VRAM_MIB * 2 ** 20;

/** The pool the slices are published for: the extender side's settings (TFLOPS not oversold). */
const draPool = renderGpuPool(POOL, { tflopsOversellRatio: 100 }) as unknown as GPUPool;

/** kube-scheduler's default profile, for the throughput comparison (draThroughput). */
const THROUGHPUT_SCHEDULER = 'dra-throughput';
const namespaceOf = (lever: DraLever) => `openb-dra-${lever}`;
const schedulerOf = (lever: DraLever) => `dra-${lever}`;
const nodeOf = (lever: DraLever, sn: string) => `${lever}-${sn}`;

/**
 * A refusal kube-scheduler makes while the pod's claim is not made yet, and retries by itself once it
 * is: not a decision.
 */
const claimPending = (c: NotScheduled) => /waiting for|not found|does not exist|to be created/i.test(c.message ?? '');

/** The share a trace pod asks for, as the webhook resolves it (1000-TFLOPS, 16000-MiB GPUs). */
function shareFor(p: TracePod): ShareRequest {
  const tflops = (p.g / 1000) * GPU_TFLOPS;
  const vram = (p.g / 1000) * VRAM_BYTES;
  return { pool: POOL, qos: 'medium', gpuCount: p.n, tflopsRequest: tflops, tflopsLimit: tflops, vramRequest: vram, vramLimit: vram };
}

/** The claim template the webhook gives a trace pod's share. */
const templateFor = (namespace: string, p: TracePod): ClaimTemplate => claimTemplate(namespace, shareFor(p));

function sliceGpus(node: string, n: TraceNode): SliceGpu[] {
  return Array.from({ length: n.gpus }, (_, i) => ({
    uuid: kwokGpuUuid(node, i),
    model: n.model,
    index: i,
    tflops: GPU_TFLOPS,
    vram: VRAM_BYTES,
  }));
}

/** One side's nodes: the trace's, its GPUs published as a slice each, its pods' templates. */
interface Side {
  lever: DraLever;
  nodes: Map<string, TraceNode>;
  /** TFLOPS used per device index, per node. */
  used: Map<string, number[]>;
  /** The last slice written per node (for its resourceVersion and generation). */
  slices: Map<string, ResourceSlice & { metadata: { resourceVersion?: string } }>;
  templates: Map<string, ClaimTemplate>;
  scorer?: DraScorer;
}

/** The figures of one lever. */
export interface DraFigures {
  lever: DraLever;
  label: string;
  pods: number;
  bound: number;
  unallocated100: number;
  allocatedEnd: number;
  /** Bound GPU pods whose claim's devices are not the request (count, amounts, node), and devices past capacity. */
  recordMismatches: number;
  overcommittedDevices: number;
  /** Slice updates made (ordered levers). */
  republished: number;
  /** GPU pods whose devices are not the first that fit in the order last published (as when kube-scheduler's view of the slice lags). */
  notFirstFit: number;
  /** GPU pods bound elsewhere than the node our extender scored highest (fgd). */
  notExtenderNode: number;
  otherFailures: Record<string, number>;
  placeSeconds: number;
  p50Ms: number;
  p99Ms: number;
}

/** Our extender's entry in the install's scheduler configuration (verbs, weight, timeout). */
const ourExtender = renderSchedulerConfiguration('bench').extenders[0];

/** The DRA schedulers: one with the levers' profiles, one with the scoring extender. */
async function startSchedulers(cp: ControlPlane, levers: readonly DraLever[], scorerUrl: string | undefined): Promise<void> {
  const profile = (lever: DraLever) =>
    lever === 'binpack'
      ? {
          schedulerName: schedulerOf(lever),
          pluginConfig: [
            {
              name: 'NodeResourcesFit',
              args: {
                scoringStrategy: {
                  type: 'MostAllocated',
                  resources: [
                    { name: 'cpu', weight: 1 },
                    { name: 'memory', weight: 1 },
                  ],
                },
              },
            },
          ],
        }
      : { schedulerName: schedulerOf(lever) };
  // Every feasible node scored, as our extender sees every feasible node; the throughput comparison's
  // default profile beside the levers' own.
  const profiles = [...levers.filter((l) => l !== 'fgd').map(profile), { schedulerName: THROUGHPUT_SCHEDULER }];
  await cp.startScheduler({ profiles, percentageOfNodesToScore: 100 }, 'kube-scheduler-dra');
  if (scorerUrl) {
    await cp.startScheduler(
      {
        profiles: [profile('fgd')],
        percentageOfNodesToScore: 100,
        // Our extender as the install configures it: a DRA pod's nodes are scored by prioritize, a
        // CPU-only pod is placed by filter as the pool's mode would.
        extenders: [{ ...ourExtender, urlPrefix: scorerUrl }],
      },
      'kube-scheduler-dra-fgd',
    );
  }
}

/** The DeviceClass, the sides' namespaces, templates, nodes and slices; then their schedulers. */
export async function setUpDra(
  cp: ControlPlane,
  admin: HttpCluster,
  dir: string,
  nodes: readonly TraceNode[],
  pods: readonly TracePod[],
  levers: readonly DraLever[],
  log: (l: string) => void,
): Promise<Side[]> {
  const t0 = performance.now();
  const sides: Side[] = levers.map((lever) => {
    const templates = new Map<string, ClaimTemplate>();
    for (const p of pods) {
      if (p.n === 0) continue;
      const t = templateFor(namespaceOf(lever), p);
      templates.set(t.metadata.name, t);
    }
    return {
      lever,
      nodes: new Map(nodes.map((n) => [nodeOf(lever, n.sn), n])),
      used: new Map(nodes.map((n) => [nodeOf(lever, n.sn), new Array<number>(n.gpus).fill(0)])),
      slices: new Map(),
      templates,
    };
  });
  const deviceClass = {
    apiVersion: DRA_API_VERSION,
    kind: 'DeviceClass',
    metadata: { name: DRA_DEVICE_CLASS },
    spec: { selectors: [{ cel: { expression: `device.driver == ${JSON.stringify(DRA_DRIVER)}` } }] },
  };
  const namespaces = levers.map((l) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespaceOf(l) } }));
  await cp.kubectlOk(['apply', '--server-side', '-f', writeYaml(dir, 'openb-dra.yaml', [deviceClass, ...namespaces])]);
  await cp.kubectlOk([
    'apply',
    '--server-side',
    '-f',
    writeYaml(
      dir,
      'openb-dra-templates.yaml',
      sides.flatMap((s) => [...s.templates.values()]),
    ),
  ]);
  const work = sides.flatMap((s) => [...s.nodes].map(([name, n]) => ({ s, name, n })));
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < work.length) {
        const { s, name, n } = work[next++];
        await admin.create(RESOURCES.nodes, nodeObject(s.lever, name, n));
        const slice = await admin.create(SLICES, resourceSlice({ nodeName: name, pool: draPool, gpus: sliceGpus(name, n) }) as never);
        s.slices.set(name, slice as never);
      }
    }),
  );
  const fgd = sides.find((s) => s.lever === 'fgd');
  let url: string | undefined;
  if (fgd) {
    // The scorer's state makes its GPU objects of the nodes' GPU Feature Discovery labels, kept out of
    // the cluster: there the extender side's controller would take the nodes for GPU nodes.
    const labelled = [...fgd.nodes].map(([name, n]) => {
      const o = nodeObject('fgd', name, n);
      return { ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, ...gpuNodeLabels(n, POOL) } } };
    });
    const pool = openbPool(
      POOL,
      nodes.map((n) => n.model),
    ) as unknown as GPUPool & K8sObject;
    fgd.scorer = new DraScorer(admin, namespaceOf('fgd'), labelled, pool, (pod) => {
      const p = pods[Number(pod.metadata.name?.slice('pod-'.length))];
      return p && p.n > 0 ? shareFor(p) : undefined;
    });
    url = await fgd.scorer.start();
  }
  await startSchedulers(cp, levers, url);
  log(
    `DRA: ${levers.length} sides of ${nodes.length} KWOK nodes with a ResourceSlice each, ${sides[0]?.templates.size ?? 0} claim templates per side, ready in ${Math.round(performance.now() - t0)} ms`,
  );
  return sides;
}

/** A side's KWOK node for trace node `n`: the side's label and taint keep other sides' pods off it. */
function nodeObject(lever: DraLever, name: string, n: TraceNode): K8sObject {
  return kwokNode({
    name,
    cpu: `${n.cpu}m`,
    memory: `${n.mem}Mi`,
    extended: { pods: '1000' },
    labels: { [SIDE_KEY]: lever },
    taints: [{ key: SIDE_KEY, value: lever, effect: 'NoSchedule' }],
  }) as K8sObject;
}

/** The pod of trace pod `i` on a side: its claim from the template, kept on the side's nodes. */
function draPod(side: Side, i: number, p: TracePod): K8sObject {
  const namespace = namespaceOf(side.lever);
  const claims = p.n > 0 ? [{ name: DRA_POD_CLAIM }] : undefined;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `pod-${i}`, namespace },
    spec: {
      schedulerName: schedulerOf(side.lever),
      nodeSelector: { [SIDE_KEY]: side.lever },
      tolerations: [{ key: SIDE_KEY, operator: 'Equal', value: side.lever, effect: 'NoSchedule' }],
      ...(p.n > 0 ? { resourceClaims: [{ name: DRA_POD_CLAIM, resourceClaimTemplateName: templateFor(namespace, p).metadata.name }] } : {}),
      containers: [
        {
          name: 'main',
          image: 'example.io/app:1',
          resources: { requests: { cpu: `${p.cpu}m`, memory: `${p.mem}Mi` }, ...(claims ? { claims } : {}) },
        },
      ],
    },
  };
}

/** Device indices, most-used first (ties by index): first fit then takes the fullest GPU that fits. */
function mostUsedFirst(used: readonly number[]): number[] {
  return used.map((_u, i) => i).sort((a, b) => used[b] - used[a] || a - b);
}

/** The GPU indices of a slice's devices, in the order it lists them. */
const sliceOrder = (slice: ResourceSlice): number[] => slice.spec.devices.map((d) => deviceIndex(d.name)!);

/** Republishes a node's slice in most-used-first order when that order changed; true when it wrote. */
async function republish(admin: HttpCluster, side: Side, node: string): Promise<boolean> {
  const order = mostUsedFirst(side.used.get(node)!);
  const last = side.slices.get(node)!;
  const current = sliceOrder(last);
  if (order.every((x, i) => x === current[i])) return false;
  const next = resourceSlice({
    nodeName: node,
    pool: draPool,
    gpus: sliceGpus(node, side.nodes.get(node)!),
    order,
    generation: last.spec.pool.generation + 1,
  });
  const written = await admin.replace(SLICES, {
    ...next,
    metadata: { ...next.metadata, resourceVersion: last.metadata.resourceVersion },
  } as never);
  side.slices.set(node, written as never);
  return true;
}

/** Replays the pods on one side, each tried once; always stops its informer. */
export async function placeDra(admin: HttpCluster, side: Side, pods: readonly TracePod[], log: (l: string) => void): Promise<DraFigures> {
  const namespace = namespaceOf(side.lever);
  const informer = new Informer<K8sObject>(admin, RESOURCES.pods, { namespace });
  const decisions = new Decisions(informer, claimPending);
  informer.start();
  await informer.waitForSync();
  const taken: number[] = [];
  const latencies: number[] = [];
  const otherFailures: Record<string, number> = {};
  let mismatches = 0;
  let republished = 0;
  let notFirstFit = 0;
  let notExtenderNode = 0;
  let bound = 0;
  const started = performance.now();
  try {
    for (let i = 0; i < pods.length; i++) {
      const p = pods[i];
      const obj = draPod(side, i, p);
      const name = obj.metadata.name as string;
      const d = await decisions.create(admin, obj);
      latencies.push(d.ms);
      if (!d.node) {
        if (d.reason !== 'Unschedulable') otherFailures[d.reason ?? ''] = (otherFailures[d.reason ?? ''] ?? 0) + 1;
        await admin.delete(RESOURCES.pods, { namespace, name });
        taken.push(0);
        continue;
      }
      bound++;
      let results: HeldGpu[] = [];
      let claimName: string | undefined;
      if (p.n > 0) {
        const statuses = (d.pod.status as { resourceClaimStatuses?: { name: string; resourceClaimName?: string }[] }).resourceClaimStatuses;
        claimName = statuses?.find((c) => c.name === DRA_POD_CLAIM)?.resourceClaimName;
        const claim = claimName ? await admin.get<ResourceClaim>(CLAIMS, { namespace, name: claimName }) : undefined;
        results = claim ? claimGpus(claim) : [];
        const tflops = (p.g / 1000) * GPU_TFLOPS;
        const vram = (p.g / 1000) * VRAM_BYTES;
        if (
          results.length !== p.n ||
          new Set(results.map((r) => r.index)).size !== p.n ||
          results.some((r) => r.node !== d.node || r.tflops !== tflops || r.vram !== vram)
        )
          mismatches++;
        const used = side.used.get(d.node);
        if (used) {
          const expect = sliceOrder(side.slices.get(d.node)!)
            .filter((x) => used[x] + tflops <= GPU_TFLOPS + 1e-9)
            .slice(0, p.n)
            .sort((a, b) => a - b);
          const got = results.map((r) => r.index).sort((a, b) => a - b);
          if (expect.join() !== got.join()) notFirstFit++;
        }
        const chose = side.scorer?.choice(name);
        if (side.scorer && chose !== undefined && chose !== d.node) notExtenderNode++;
        for (const r of results) if (used && r.node === d.node) used[r.index] += r.tflops;
        if (REORDERS.has(side.lever) && (await republish(admin, side, d.node))) republished++;
      }
      await side.scorer?.seen(d.pod, claimName);
      // Milli-GPU: TFLOPS consumed over each device's capacity (both ways of counting agree when no record mismatches).
      taken.push(results.reduce((s, r) => s + (1000 * r.tflops) / GPU_TFLOPS, 0));
      if ((i + 1) % 500 === 0) {
        const s = (performance.now() - started) / 1000;
        log(`  DRA ${side.lever}: ${i + 1} pods in ${s.toFixed(0)} s (${((i + 1) / s).toFixed(1)}/s), ${bound} bound`);
      }
    }
  } finally {
    await informer.stop();
  }
  const cap = [...side.nodes.values()].reduce((s, n) => s + 1000 * n.gpus, 0);
  const over = [...side.used.values()].flat().filter((t) => t > GPU_TFLOPS).length;
  const lat = [...latencies].sort((a, b) => a - b);
  return {
    lever: side.lever,
    label: LEVER_LABELS[side.lever],
    pods: pods.length,
    bound,
    unallocated100: replayTaken(pods, cap, (i) => taken[i]).unallocated100,
    allocatedEnd: (100 * taken.reduce((s, t) => s + t, 0)) / cap,
    recordMismatches: mismatches,
    overcommittedDevices: over,
    republished,
    notFirstFit,
    notExtenderNode,
    otherFailures,
    placeSeconds: (performance.now() - started) / 1000,
    p50Ms: percentile(lat, 50),
    p99Ms: percentile(lat, 99),
  };
}

/**
 * Unallocated GPU % at 100% arrived of the allocator in process as the fgd side's extender ranks: the
 * side's node names and the seed of the extender's allocator (PlacementState gives none: 0), learning
 * the mix. Equal scores fall to a node rank hashed from name and seed, so the same trace on other
 * names places otherwise: on the thinned trace the figure moves by half a point with the names.
 */
export function inProcessAsFgd(nodes: readonly TraceNode[], stream: readonly TracePod[], mode: PlacementMode): number {
  const named = nodes.map((n) => ({ ...n, sn: nodeOf('fgd', n.sn) }));
  return allocatorRun(named, stream, undefined, mode, 0).unallocated100;
}

/** Stops what setUpDra started in this process (the schedulers stop with the control plane). */
export async function stopDra(sides: readonly Side[]): Promise<void> {
  await Promise.all(sides.map((s) => s.scorer?.stop()));
}

/** Pods bound per second: `count` pods made by `make` with 32 in flight, timed to the last bound. */
async function boundPerSec(admin: HttpCluster, namespace: string, count: number, make: (i: number) => K8sObject): Promise<number> {
  const informer = new Informer<K8sObject>(admin, RESOURCES.pods, { namespace });
  let last = 0;
  let bound = 0;
  let done: () => void = () => undefined;
  const all = new Promise<void>((r) => (done = r));
  const seen = new Set<string>();
  const on = (p: K8sObject) => {
    if (!(p.spec as { nodeName?: string }).nodeName || seen.has(p.metadata.name!)) return;
    seen.add(p.metadata.name!);
    last = performance.now();
    if (++bound === count) done();
  };
  informer.on({ add: on, update: (_o, p) => on(p) });
  informer.start();
  await informer.waitForSync();
  const started = performance.now();
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < count) await admin.create(RESOURCES.pods, make(next++));
      }),
    );
    await all;
  } finally {
    await informer.stop();
  }
  return Math.round((count / ((last - started) / 1000)) * 10) / 10;
}

/**
 * Throughput of kube-scheduler's default profile: `count` one-GPU DRA pods (a tenth of a GPU each)
 * against `count` pods asking `nvidia.com/gpu: 1`, on 200 fresh 8-GPU nodes that carry both.
 */
export async function draThroughput(cp: ControlPlane, admin: HttpCluster, dir: string, count: number) {
  const lever = 'tp';
  const ns = { dra: 'bench-tp-dra', plain: 'bench-tp-plain' };
  const gpu: TraceNode = { sn: '', cpu: 128_000, mem: 1024 * 1024, gpus: 8, model: 'A100' };
  const template = templateFor(ns.dra, { name: '', cpu: 0, mem: 0, n: 1, g: 100, spec: [] });
  await cp.kubectlOk([
    'apply',
    '--server-side',
    '-f',
    writeYaml(dir, 'openb-dra-tp.yaml', [
      ...Object.values(ns).map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
      template,
    ]),
  ]);
  for (let k = 0; k < 200; k++) {
    const name = `tp-${k}`;
    await admin.create(
      RESOURCES.nodes,
      kwokNode({
        name,
        extended: { pods: '1000', 'nvidia.com/gpu': '8' },
        labels: { [SIDE_KEY]: lever },
        taints: [{ key: SIDE_KEY, value: lever, effect: 'NoSchedule' }],
      }) as K8sObject,
    );
    await admin.create(SLICES, resourceSlice({ nodeName: name, pool: draPool, gpus: sliceGpus(name, gpu) }) as never);
  }
  const pod = (namespace: string, i: number, resources: Record<string, unknown>, claims?: unknown): K8sObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `p-${i}`, namespace },
    spec: {
      schedulerName: THROUGHPUT_SCHEDULER,
      nodeSelector: { [SIDE_KEY]: lever },
      tolerations: [{ key: SIDE_KEY, operator: 'Equal', value: lever, effect: 'NoSchedule' }],
      ...(claims ? { resourceClaims: claims } : {}),
      containers: [{ name: 'main', image: 'example.io/app:1', resources }],
    },
  });
  // The DRA pods go first: whatever the cluster learns on the way, the plain pods get it.
  const dra = await boundPerSec(admin, ns.dra, count, (i) =>
    pod(ns.dra, i, { requests: { cpu: '10m' }, claims: [{ name: DRA_POD_CLAIM }] }, [
      { name: DRA_POD_CLAIM, resourceClaimTemplateName: template.metadata.name },
    ]),
  );
  const plain = await boundPerSec(admin, ns.plain, count, (i) =>
    pod(ns.plain, i, { requests: { cpu: '10m' }, limits: { 'nvidia.com/gpu': '1' } }),
  );
  return { draBoundPerSec: dra, plainBoundPerSec: plain };
}

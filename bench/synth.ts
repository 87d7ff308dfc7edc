/**
 * `npm run bench:synth [nodes] [workloads] [rounds]`: synthesis cost of our components against the
 * same objects written as raw framework objects, in one process. cdk8s: GpuNode + gpuWorkload on
 * ApiObject Deployments vs raw ApiObjects, synthesized with chart.toJson(). Pulumi (mocks): GpuNode +
 * gpuWorkload args vs raw NodePatch / Deployment registrations, timed until every registration reached
 * the mock. Warm-up first, then ours and raw alternate; medians are reported. Ends with one JSON line.
 */
import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { ApiObject, Chart, Testing } from 'cdk8s';
import { GpuNode as Cdk8sGpuNode, gpuWorkload as cdk8sGpuWorkload } from '../components/cdk8s';
import { GpuNode as PulumiGpuNode, gpuWorkload as pulumiGpuWorkload } from '../components/pulumi';
import type { GpuWorkloadOptions } from '../lib/annotations';
import type { GpuNodeProps } from '../lib/render/gpu-node';
import type { KubeObject } from '../lib/k8s/object';
import { median } from './stats';

const NODES = Number(process.argv[2] ?? 1000);
const WORKLOADS = Number(process.argv[3] ?? 10000);
const ROUNDS = Number(process.argv[4] ?? 3);

const nodeProps = (i: number): GpuNodeProps => ({
  nodeName: `gpu-${i}`,
  pools: ['default-pool'],
  gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' },
});
const options: GpuWorkloadOptions = {
  pool: 'default-pool',
  injectContainers: ['python'],
  replicas: 1,
  tflopsRequest: '10',
  tflopsLimit: '20',
  vramRequest: '4Gi',
  vramLimit: '4Gi',
  qos: 'medium',
  workloadProfile: 'default-profile',
};
const deploymentArgs = (i: number) => ({
  metadata: { name: `train-${i}`, namespace: 'ml' },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: `train-${i}` } },
    template: { metadata: { labels: { app: `train-${i}` } }, spec: { containers: [{ name: 'python', image: 'pytorch/pytorch' }] } },
  },
});

// ---- cdk8s ----
function cdk8sOurs(): unknown[] {
  const chart = new Chart(Testing.app(), 'bench');
  for (let i = 0; i < NODES; i++) new Cdk8sGpuNode(chart, `n${i}`, nodeProps(i));
  for (let i = 0; i < WORKLOADS; i++) {
    cdk8sGpuWorkload(new ApiObject(chart, `d${i}`, { apiVersion: 'apps/v1', kind: 'Deployment', ...deploymentArgs(i) }), options);
  }
  return chart.toJson();
}

/** The final objects, written out by hand in a real repo; built once, outside the timings. */
const finalObjects = cdk8sOurs() as KubeObject[];
const rawNodes = finalObjects.filter((o) => o.kind === 'Node');
const rawDeployments = finalObjects.filter((o) => o.kind === 'Deployment');

function cdk8sRaw(): unknown[] {
  const chart = new Chart(Testing.app(), 'bench');
  rawNodes.forEach((o, i) => new ApiObject(chart, `n${i}`, o));
  rawDeployments.forEach((o, i) => new ApiObject(chart, `d${i}`, o));
  return chart.toJson();
}

// ---- Pulumi under mocks ----
let registered = 0;
/** Each run is a stack of its own: the same node names in two runs are not duplicates. */
function freshStack(): void {
  void pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered++;
        return { id: `${args.name}-id`, state: {} };
      },
      call: (args) => args.inputs,
    },
    'bench',
    'bench',
    false,
  );
}

async function settle(expected: number): Promise<void> {
  while (registered < expected) await new Promise((r) => setImmediate(r));
}

let run = 0;
async function pulumiOurs(): Promise<void> {
  const tag = `o${run++}`;
  freshStack();
  const start = registered;
  for (let i = 0; i < NODES; i++) new PulumiGpuNode(`${tag}-n${i}`, nodeProps(i));
  for (let i = 0; i < WORKLOADS; i++) new k8s.apps.v1.Deployment(`${tag}-d${i}`, pulumiGpuWorkload(deploymentArgs(i), options));
  await settle(start + 2 * NODES + WORKLOADS); // GpuNode is a component plus its NodePatch
}

async function pulumiRaw(): Promise<void> {
  const tag = `r${run++}`;
  freshStack();
  const start = registered;
  rawNodes.forEach((o, i) => new k8s.core.v1.NodePatch(`${tag}-n${i}`, { metadata: o.metadata }));
  rawDeployments.forEach(
    (o, i) => new k8s.apps.v1.Deployment(`${tag}-d${i}`, { metadata: o.metadata, spec: o.spec as k8s.types.input.apps.v1.DeploymentSpec }),
  );
  await settle(start + NODES + WORKLOADS);
}

// ---- timing ----
async function time(fn: () => unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}
const round2 = (x: number) => Math.round(x * 100) / 100;

async function compare(label: string, ours: () => unknown, raw: () => unknown): Promise<{ ours: number; raw: number; ratio: number }> {
  await time(ours);
  await time(raw);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order so neither side always runs on a warmer (or fuller) heap.
    if (r % 2 === 0) {
      a.push(await time(ours));
      b.push(await time(raw));
    } else {
      b.push(await time(raw));
      a.push(await time(ours));
    }
  }
  const result = { ours: median(a), raw: median(b), ratio: median(a) / median(b) };
  console.log(
    `${label}: ours ${result.ours.toFixed(0)} ms, raw ${result.raw.toFixed(0)} ms, ratio ${result.ratio.toFixed(2)}x (medians of ${ROUNDS}; ours ${a.map((x) => x.toFixed(0)).join('/')}, raw ${b.map((x) => x.toFixed(0)).join('/')})`,
  );
  return result;
}

async function main(): Promise<void> {
  console.log(`${NODES} GpuNodes + ${WORKLOADS} GPU Deployments, ${ROUNDS} rounds after one warm-up`);
  const c = await compare('cdk8s ', cdk8sOurs, cdk8sRaw);
  // BENCH_ONLY=cdk8s skips the (slow) Pulumi half while profiling.
  const p = process.env.BENCH_ONLY === 'cdk8s' ? { ours: NaN, raw: NaN, ratio: NaN } : await compare('pulumi', pulumiOurs, pulumiRaw);
  console.log(
    JSON.stringify({
      cdk8sRatio: round2(c.ratio),
      pulumiRatio: round2(p.ratio),
      cdk8sMs: Math.round(c.ours),
      rawCdk8sMs: Math.round(c.raw),
      pulumiMs: Math.round(p.ours),
      rawPulumiMs: Math.round(p.raw),
      nodes: NODES,
      workloads: WORKLOADS,
      rounds: ROUNDS,
    }),
  );
}

void main();

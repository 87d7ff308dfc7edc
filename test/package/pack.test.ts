/**
 * The packed package works from a platform repo: `npm pack` of the compiled package, installed into a
 * fresh project whose peer dependencies are the repo's own (symlinked: no network), a TypeScript
 * program importing `tensor-fusion-iac`, `/cdk8s` and `/pulumi` compiled with node16 resolution
 * (so `exports` and their `types` are what TypeScript and Node use), then run to synthesize a chart.
 */
import { execFileSync } from 'child_process';
import { readFileSync } from 'fs';
import { join } from 'path';
import { parseAllDocuments } from 'yaml';
import { compile, consumer, pack, Packed } from './packed';

const CONSUMER = `
import { ApiObject, App, Chart } from 'cdk8s';
import { GpuNode, GpuPool, gpuWorkload, WorkloadProfile } from 'tensor-fusion-iac/cdk8s';
import type { GpuPoolProps } from 'tensor-fusion-iac/cdk8s';
import * as tfPulumi from 'tensor-fusion-iac/pulumi';
import type { GpuPoolArgs } from 'tensor-fusion-iac/pulumi';
import { encodeGpuWorkload, ValidationError } from 'tensor-fusion-iac';

const poolArgs: GpuPoolProps = { isDefault: true, defaultQos: 'medium' };
// The same props are valid Pulumi args (which also take Inputs).
export const pulumiArgs: GpuPoolArgs = poolArgs;
const app = new App({ outdir: process.argv[2] });
const chart = new Chart(app, 'platform', { namespace: 'ml' });
new GpuPool(chart, 'default-pool', poolArgs);
new GpuNode(chart, 'a100', { nodeName: 'gpu-a100-0', pools: ['default-pool'], gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' } });
new WorkloadProfile(chart, 'default-profile', { qos: 'medium' });
const deployment = new ApiObject(chart, 'train', {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'train' },
  spec: {
    selector: { matchLabels: { app: 'train' } },
    template: { metadata: { labels: { app: 'train' } }, spec: { containers: [{ name: 'python', image: 'pytorch/pytorch' }] } },
  },
});
gpuWorkload(deployment, { pool: 'default-pool', tflopsRequest: 10, vramRequest: '4Gi', workloadProfile: 'default-profile' });
let rejected = '';
try {
  gpuWorkload(deployment, { qos: 'urgent' as never });
} catch (err) {
  rejected = err instanceof ValidationError ? err.message : 'not a ValidationError';
}
app.synth();
console.log(JSON.stringify({
  pulumiComponents: [typeof tfPulumi.GpuPool, typeof tfPulumi.GpuNode, typeof tfPulumi.gpuWorkload],
  annotations: encodeGpuWorkload({ tflopsRequest: 10 }).annotations,
  rejected,
}));
`;

describe('npm pack -> install -> compile -> synthesize', () => {
  let packed: Packed;
  let entries: string[];

  beforeAll(() => {
    packed = pack();
    entries = packed.entries;
  }, 300_000);

  afterAll(() => packed?.remove());

  it('contains compiled JS and type declarations for every entry point, the LICENSE, and no sources, tests or examples', () => {
    for (const f of ['build/lib/index', 'build/components/cdk8s/index', 'build/components/pulumi/index']) {
      expect(entries).toContain(`package/${f}.js`);
      expect(entries).toContain(`package/${f}.d.ts`);
    }
    expect(entries).toContain('package/package.json');
    expect(entries).toContain('package/LICENSE');
    expect(entries.filter((e) => /^package\/(test|examples|bench|scripts)\//.test(e))).toEqual([]);
    expect(entries.filter((e) => e.endsWith('.ts') && !e.endsWith('.d.ts'))).toEqual([]);
  });

  it('speaks of behaviour, not of the source documents: no "seed 00x" or "the seeds" in the README, CRDs or declarations', () => {
    const stage = join(packed.work, 'stage');
    const shipped = entries.map((e) => e.replace(/^package\//, '')).filter((f) => /\.(d\.ts|md|yaml)$/.test(f));
    expect(shipped.length).toBeGreaterThan(50);
    const mentions = shipped.filter((f) => /seed 0\d\d|\bthe seeds\b|\bseed's\b/i.test(readFileSync(join(stage, f), 'utf8')));
    expect(mentions).toEqual([]);
  });

  it('ships the kubectl-tf bin, which runs without the runtime-only dependencies (bundled)', () => {
    const project = consumer(packed, 'plugin', {
      'platform.yaml': [
        'apiVersion: tensor-fusion.ai/v1\nkind: GPUPool\nmetadata: {name: a, annotations: {tensor-fusion.ai/is-default-pool: "true"}}',
        'spec: {nodeManagerConfig: {nodeSelector: {nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: Exists}]}]}}}\n---',
        'apiVersion: v1\nkind: Node\nmetadata: {name: gpu-0, labels: {gpu: "1", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.count: "1", nvidia.com/gpu.memory: "81920"}}',
      ].join('\n'),
      'pods.yaml':
        'apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {tensor-fusion.ai/enabled: "true"}, annotations: {tensor-fusion.ai/tflops-request: "10", tensor-fusion.ai/vram-request: 1Gi}}\nspec: {containers: [{name: m, image: x}]}\n',
    });
    const pkg = JSON.parse(readFileSync(join(project, 'node_modules/tensor-fusion-iac/package.json'), 'utf8'));
    const bin = join(project, 'node_modules/tensor-fusion-iac', pkg.bin['kubectl-tf']);
    expect(execFileSync(process.execPath, [bin, 'help'], { cwd: project, encoding: 'utf8' })).toMatch(
      /^kubectl tf: GPU pools, shares and plans/,
    );
    const plan = execFileSync(process.execPath, [bin, 'plan', '-f', 'pods.yaml', '--from', 'platform.yaml', '-o', 'json'], {
      cwd: project,
      encoding: 'utf8',
    });
    expect(JSON.parse(plan)).toMatchObject({ placed: 1, unplaced: 0, pods: [{ name: 'p', node: 'gpu-0', gpus: ['gpu-0-gpu-0'] }] });
  });

  it('compiles and runs a program importing tensor-fusion-iac, /cdk8s and /pulumi, which synthesizes a chart (without the runtime-only dependencies)', () => {
    const project = consumer(packed, 'consumer', {
      'tsconfig.json': JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'node16',
          moduleResolution: 'node16',
          strict: true,
          types: ['node'],
          skipLibCheck: true,
          outDir: 'out',
        },
        files: ['main.ts'],
      }),
      'main.ts': CONSUMER,
    });
    const errors = compile(project);
    if (errors) throw new Error(`consumer does not compile:\n${errors}`);
    const dist = join(project, 'dist');
    const stdout = execFileSync(process.execPath, [join(project, 'out/main.js'), dist], { cwd: project, encoding: 'utf8' });

    const report = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(report).toEqual({
      pulumiComponents: ['function', 'function', 'function'],
      annotations: { 'tensor-fusion.ai/tflops-request': '10' },
      rejected: 'gpuWorkload platform/train: qos: got "urgent", expected one of low, medium, high, critical',
    });
    const docs = parseAllDocuments(readFileSync(join(dist, 'platform.k8s.yaml'), 'utf8')).map((d) => d.toJS());
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}/${d.metadata.namespace ?? '-'}`)).toEqual([
      'GPUPool/default-pool/-',
      'Node/gpu-a100-0/-',
      'WorkloadProfile/default-profile/ml',
      'Deployment/train/ml',
    ]);
    expect(docs[3].spec.template.metadata.annotations).toEqual({
      'tensor-fusion.ai/gpupool': 'default-pool',
      'tensor-fusion.ai/tflops-request': '10',
      'tensor-fusion.ai/vram-request': '4Gi',
      'tensor-fusion.ai/workload-profile': 'default-profile',
    });
    expect(docs[1].metadata.labels['nvidia.com/gpu.memory']).toBe('81920');
  }, 300_000);
});

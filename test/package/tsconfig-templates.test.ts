/**
 * The packed package compiles in the projects users start from: `cdk8s init typescript-app` (module
 * CommonJS with classic node resolution, lib es2016, no skipLibCheck) and `pulumi new
 * kubernetes-typescript` (nodenext), with their tsconfigs as those templates write them. With
 * TypeScript 5.x (the repo's) and 6.x (the devDependency `typescript6`, an alias of typescript@6).
 */
import { existsSync } from 'fs';
import { join } from 'path';
import { compile, consumer, pack, Packed, REPO } from './packed';

/** tsconfig.json of cdk8s-cli's typescript-app template. */
const CDK8S_INIT = {
  compilerOptions: {
    alwaysStrict: true,
    declaration: true,
    experimentalDecorators: true,
    inlineSourceMap: true,
    inlineSources: true,
    lib: ['es2016'],
    module: 'CommonJS',
    noEmit: false,
    noEmitOnError: true,
    noFallthroughCasesInSwitch: true,
    noImplicitAny: true,
    noImplicitReturns: true,
    noImplicitThis: true,
    noUnusedLocals: true,
    noUnusedParameters: true,
    resolveJsonModule: true,
    strict: true,
    strictNullChecks: true,
    strictPropertyInitialization: true,
    stripInternal: true,
    target: 'ES2017',
  },
  include: ['**/*.ts'],
  exclude: ['node_modules'],
};

/** tsconfig.json of pulumi/templates' kubernetes-typescript. */
const PULUMI_NEW = {
  compilerOptions: {
    strict: true,
    outDir: 'bin',
    target: 'es2020',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    sourceMap: true,
    experimentalDecorators: true,
    pretty: true,
    noFallthroughCasesInSwitch: true,
    noImplicitReturns: true,
    forceConsistentCasingInFileNames: true,
  },
  files: ['index.ts'],
};

const CDK8S_MAIN = `
import { App, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuNode, GpuPool, gpuWorkload, t9kPoolNodes, TensorFusionController, WorkloadProfile } from 'tensor-fusion-iac/cdk8s';
import { encodeGpuWorkload, GpuWorkloadOptions } from 'tensor-fusion-iac';
import { k8s } from 'cdk8s-plus-31';

export class Platform extends Chart {
  constructor(scope: Construct, id: string) {
    super(scope, id, { namespace: 'ml' });
    new TensorFusionController(this, 'tensor-fusion', { image: 'registry.example.com/tf:1' });
    const pool = new GpuPool(this, 'default-pool', { isDefault: true });
    new GpuNode(this, 'a100', { nodeName: 'gpu-a100-0', pools: [pool.poolName] });
    new WorkloadProfile(this, 'profile', { qos: 'medium', resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } } });
    const options: GpuWorkloadOptions = { pool: pool.poolName, tflopsRequest: 10, vramRequest: '4Gi' };
    gpuWorkload(new k8s.KubeDeployment(this, 'train', {
      spec: { selector: { matchLabels: { app: 'train' } }, template: { metadata: { labels: { app: 'train' } }, spec: { containers: [{ name: 'python', image: 'pytorch' }] } } },
    }), options);
    if (t9kPoolNodes('default-pool', [{ nodeName: 'gpu-a100-0', pools: ['default-pool'] }]).length !== 1) throw new Error('t9kPoolNodes');
    if (!encodeGpuWorkload(options).annotations) throw new Error('encode');
  }
}

const app = new App();
new Platform(app, 'platform');
app.synth();
`;

const PULUMI_INDEX = `
import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { GpuNode, GpuPool, gpuWorkload, TensorFusionController, WorkloadProfile } from 'tensor-fusion-iac/pulumi';

const config = new pulumi.Config();
const controller = new TensorFusionController('tensor-fusion', { image: 'registry.example.com/tf:1' });
const pool = new GpuPool('default-pool', { isDefault: true, defaultQos: config.get('qos') === 'high' ? 'high' : 'medium' }, { dependsOn: controller.crds });
new GpuNode('a100', { nodeName: pulumi.output('gpu-a100-0'), pools: [pool.poolName] });
new WorkloadProfile('profile', { namespace: 'ml', qos: 'medium' }, { dependsOn: controller.crds });
new k8s.apps.v1.Deployment('train', gpuWorkload({
  metadata: { namespace: 'ml' },
  spec: { selector: { matchLabels: { app: 'train' } }, template: { metadata: { labels: { app: 'train' } }, spec: { containers: [{ name: 'python', image: 'pytorch' }] } } },
}, { pool: 'default-pool', tflopsRequest: 10 }), { dependsOn: controller });
export const poolName: pulumi.Output<string> = pool.poolName;
export const namespace: pulumi.Output<string> = controller.namespace;
`;

const TSC6 = join(REPO, 'node_modules/typescript6/bin/tsc');
// A node_modules installed before the alias was added lacks it: skipped locally, said in the title
// (run `npm ci`); in CI it must be there, so the test fails rather than skip.
const TSC6_MISSING = !existsSync(TSC6) && !process.env.CI;

const TYPESCRIPTS: [string, string | undefined][] = [
  ['TypeScript 5 (the repo)', undefined],
  [TSC6_MISSING ? 'TypeScript 6 (SKIPPED: typescript6 not installed, run npm ci)' : 'TypeScript 6', TSC6],
];

describe.each(TYPESCRIPTS)('the packed package compiles in template projects with %s', (name, tsc) => {
  const it = name.includes('SKIPPED') ? global.it.skip : global.it;
  let packed: Packed;
  beforeAll(() => {
    packed = pack();
  }, 300_000);
  afterAll(() => packed?.remove());

  it('a `cdk8s init typescript-app` project importing tensor-fusion-iac/cdk8s and tensor-fusion-iac', () => {
    const project = consumer(packed, 'cdk8s-app', { 'tsconfig.json': JSON.stringify(CDK8S_INIT), 'main.ts': CDK8S_MAIN });
    expect(compile(project, tsc)).toBe('');
  }, 120_000);

  it('a `pulumi new kubernetes-typescript` project importing tensor-fusion-iac/pulumi', () => {
    const project = consumer(packed, 'pulumi-app', { 'tsconfig.json': JSON.stringify(PULUMI_NEW), 'index.ts': PULUMI_INDEX });
    expect(compile(project, tsc)).toBe('');
  }, 120_000);
});

/**
 * `kubectl tf plan` against any file a user can hand it: every malformed object or field is one line
 * naming the file, the document and the field, exit 2; what the webhook would refuse is reported as
 * refused; pod counts are bounded; the SVG is well-formed for any name; and a fuzz test of random and
 * truncated manifests never gets a stack trace, a JavaScript error or an undocumented exit code.
 */
import fc from 'fast-check';
import { stringify } from 'yaml';
import { XML_FORBIDDEN } from '../../../lib/runtime/shared/gpu-bars';
import { gpuPod, platform, tf } from './fixtures';

type Obj = Record<string, any>;
const yamlOf = (docs: unknown[]) => docs.map((d) => stringify(d)).join('---\n');
const P = { 'p.yaml': yamlOf(platform()) };
const plan = (workloads: string, extra: string[] = [], files: Record<string, string> = {}) =>
  tf(['plan', '-f', 'w.yaml', '--from', 'p.yaml', ...extra], { ...P, 'w.yaml': workloads, ...files });

const deployment = (spec: unknown): Obj => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'ml' }, spec });
const withSpec = (spec: unknown): Obj => ({ ...gpuPod('p', '10'), spec });

describe('kubectl tf plan: malformed objects are one line naming the file, the document and the field, exit 2', () => {
  test.each([
    [
      'a null item in a List',
      [{ apiVersion: 'v1', kind: 'List', items: [gpuPod('a', '10'), null] }],
      'document 1: items[1]: got null, expected a Kubernetes object with a kind',
    ],
    ['items that are not a list', [{ kind: 'PodList', items: 'x' }], 'document 1: items: got "x", expected a list of objects'],
    ['spec: null', [gpuPod('a', '10'), deployment(null)], 'document 2: spec: got null, expected the spec of a Deployment'],
    [
      'a template with spec: null',
      [deployment({ template: { spec: null } })],
      'document 1: spec.template.spec: got null, expected a pod spec (an object with containers)',
    ],
    [
      'containers a string',
      [withSpec({ containers: 'main' })],
      'document 1: spec.containers: got "main", expected a list of containers, at least one',
    ],
    [
      'a container that is not an object',
      [withSpec({ containers: [1] })],
      'document 1: spec.containers[0]: got 1, expected a container (an object with a name)',
    ],
    [
      'a container without a name',
      [withSpec({ containers: [{ image: 'x' }] })],
      'document 1: spec.containers[0].name: got nothing, expected a container name',
    ],
    [
      'requests not a map',
      [withSpec({ containers: [{ name: 'm', resources: { requests: [] } }] })],
      'document 1: spec.containers[0].resources.requests: got [], expected a map of quantities',
    ],
    ['an empty kind', [{ ...gpuPod('a', '10'), kind: '' }], 'document 1: kind: got "", expected a kind, such as Deployment'],
    [
      'labels not strings',
      [{ ...gpuPod('a', '10'), metadata: { name: 'a', labels: { x: 1 } } }],
      'document 1: metadata.labels["x"]: got 1, expected a string',
    ],
    [
      'a replica count past the bound',
      [deployment({ replicas: 1e9, template: { spec: { containers: [{ name: 'm' }] } } })],
      'document 1: spec.replicas: got 1000000000, expected a whole number of pods from 0 to 100000',
    ],
    [
      'a fractional parallelism',
      [{ kind: 'Job', metadata: { name: 'j' }, spec: { parallelism: 1.5, template: { spec: { containers: [{ name: 'm' }] } } } }],
      'document 1: spec.parallelism: got 1.5, expected a whole number of pods from 0 to 100000',
    ],
  ])('%s', async (_what, docs, message) => {
    expect(await plan(yamlOf(docs))).toMatchObject({ code: 2, stdout: '', stderr: `error: w.yaml: ${message}\n` });
  });

  test('a GPUPool of the platform is checked against its schema, naming the field', async () => {
    const pool = {
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'GPUPool',
      metadata: { name: 'bad' },
      spec: { nodeManagerConfig: {}, capacityConfig: { gpuTflops: { A100: 'lots' } } },
    };
    const r = await tf(['plan', '-f', 'w.yaml', '--from', 'q.yaml'], { 'w.yaml': stringify(gpuPod('a', '10')), 'q.yaml': yamlOf([pool]) });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "error: q.yaml: document 1: spec.capacityConfig.gpuTflops.A100: got \"lots\", expected a Kubernetes quantity such as '10', '0.5' or 500m (fractions as strings)\n",
    );
  });

  test('a YAML built to exhaust the parser names the file and the document', async () => {
    const bomb = [
      'a: &a [x,x,x,x,x,x,x,x,x]',
      ...'bcdefgh'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefg'[i]}`).join(',')}]`),
      'kind: Pod',
    ].join('\n');
    const r = await plan(bomb);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(/^error: w\.yaml: document 1: Excessive alias count indicates a resource exhaustion attack\n$/);
  });
});

describe('kubectl tf plan: what the webhook would refuse is refused, never planned', () => {
  test('a GPU pod of another scheduler, and one naming a container it does not have', async () => {
    const local = gpuPod('other', '10', '10Gi', 'ml', { 'tensor-fusion.ai/is-local-gpu': 'true' });
    const other = { ...local, spec: { schedulerName: 'volcano', containers: [{ name: 'main' }] } };
    const missing = gpuPod('missing', '10', '10Gi', 'ml', { 'tensor-fusion.ai/inject-container': 'gpu' });
    const r = await plan(yamlOf([other, missing]), ['-o', 'json']);
    expect(r.code).toBe(3);
    const pods = JSON.parse(r.stdout).pods as Obj[];
    expect(pods.map((p) => [p.name, p.node, p.reason?.startsWith('refused at admission: ')])).toEqual([
      ['other', undefined, true],
      ['missing', undefined, true],
    ]);
    expect(pods[0].reason).toContain('spec.schedulerName: got "volcano"');
    expect(pods[1].reason).toContain('tensor-fusion.ai/inject-container: got "gpu"');
  });
});

describe("kubectl tf plan: a pool's own TFLOPS by product", () => {
  test('a dedicated pod naming the model takes exactly one GPU of the figure the pool gives it, and a 50 % pod half of it', async () => {
    const [pool, ...nodes] = platform();
    const tuned = { ...pool, spec: { ...pool.spec, capacityConfig: { gpuTflops: { 'NVIDIA-A100-SXM4-80GB': '280' } } } };
    const pod = (name: string, extra: Record<string, string>) => {
      const p = gpuPod(name, '1', '1Gi', 'ml', { 'tensor-fusion.ai/gpu-model': 'A100', ...extra });
      delete p.metadata.annotations['tensor-fusion.ai/tflops-request'];
      return p;
    };
    const pods = [
      pod('whole', { 'tensor-fusion.ai/dedicated-gpu': 'true' }),
      pod('half-1', { 'tensor-fusion.ai/compute-percent-request': '50' }),
      pod('half-2', { 'tensor-fusion.ai/compute-percent-request': '50' }),
    ];
    const r = await tf(['plan', '-f', 'w.yaml', '--from', 'q.yaml', '-o', 'json'], {
      'w.yaml': yamlOf(pods),
      'q.yaml': yamlOf([tuned, ...nodes]),
    });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.pods.map((p: Obj) => [p.name, p.tflopsRequest, p.gpus.length])).toEqual([
      ['whole', 280, 1],
      ['half-1', 140, 1],
      ['half-2', 140, 1],
    ]);
    // The two halves share one GPU: exactly its 280 TFLOPS.
    expect(out.pods[1].gpus).toEqual(out.pods[2].gpus);
    expect(out.pools[0].tflopsCapacity).toBe(4 * 280);
  });
});

describe('kubectl tf plan --svg', () => {
  test('is well-formed XML for any name: characters XML forbids become U+FFFD', async () => {
    const name = 'a\u0001b\u001f\uD800c\uFFFE<&>"\'';
    const r = await plan(
      stringify({ ...gpuPod('x', '10', '10Gi', name), metadata: { ...gpuPod('x', '10').metadata, name: `p${name}`, namespace: name } }),
      ['--svg', 'out.svg'],
    );
    expect(r.code).toBe(0);
    const svg = r.written['out.svg'];
    expect(svg.match(XML_FORBIDDEN)).toBeNull();
    expect(svg).toContain('a\uFFFDb\uFFFD\uFFFDc\uFFFD&lt;&amp;&gt;&quot;&#39;');
  });

  test('an unwritable path is a usage error (exit 2) naming the path, not a cluster error', async () => {
    const r = await tf(
      ['plan', '-f', 'w.yaml', '--from', 'p.yaml', '--svg', '/nope/out.svg'],
      { ...P, 'w.yaml': stringify(gpuPod('a', '10')) },
      undefined,
      {
        writeFile: () => {
          throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
        },
      },
    );
    expect(r).toMatchObject({ code: 2, stderr: 'error: --svg: cannot write /nope/out.svg (EACCES)\n' });
  });
});

/** What no answer of the plugin may hold: a stack frame or the name or words of a JavaScript error. */
const INTERNAL =
  /\n\s+at |\b(TypeError|RangeError|ReferenceError|SyntaxError|InternalError)\b|Cannot read propert|is not a function|is not iterable|Maximum call stack/;

describe('kubectl tf plan: fuzz', () => {
  const key = fc.constantFrom(
    'kind',
    'apiVersion',
    'metadata',
    'spec',
    'items',
    'name',
    'namespace',
    'labels',
    'annotations',
    'replicas',
    'parallelism',
    'template',
    'jobTemplate',
    'containers',
    'initContainers',
    'resources',
    'requests',
    'limits',
    'schedulerName',
    'tensor-fusion.ai/enabled',
    'tensor-fusion.ai/tflops-request',
    'tensor-fusion.ai/vram-request',
    'tensor-fusion.ai/gpu-model',
    'tensor-fusion.ai/dedicated-gpu',
  );
  const leaf = fc.oneof(
    fc.constantFrom(
      null,
      true,
      'true',
      '',
      'Pod',
      'Deployment',
      'List',
      'Job',
      'CronJob',
      'GPUPool',
      '10',
      '1Gi',
      'A100',
      -1,
      0,
      1,
      2.5,
      1e12,
    ),
    fc.string({ maxLength: 8 }),
    fc.integer(),
  );
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.array(tie('node'), { maxLength: 3 }),
      fc.dictionary(key, tie('node'), { maxKeys: 4 }),
    ),
  })).node;
  const valid = yamlOf([
    gpuPod('a', '10'),
    deployment({
      replicas: 2,
      template: {
        metadata: {
          labels: { 'tensor-fusion.ai/enabled': 'true' },
          annotations: { 'tensor-fusion.ai/tflops-request': '5', 'tensor-fusion.ai/vram-request': '1Gi' },
        },
        spec: { containers: [{ name: 'm' }] },
      },
    }),
  ]);
  const file = fc.oneof(
    value.map((v) => stringify(v)),
    fc.array(value, { maxLength: 3 }).map(yamlOf),
    fc.nat(valid.length).map((n) => valid.slice(0, n)),
    fc.nat(P['p.yaml'].length).map((n) => P['p.yaml'].slice(0, n)),
    fc.string({ maxLength: 40 }),
  );

  test('random and truncated manifests: a documented exit code, one error line, never an internal error', async () => {
    await fc.assert(
      fc.asyncProperty(file, fc.boolean(), async (text, asPlatform) => {
        const r = asPlatform
          ? await tf(['plan', '-f', 'w.yaml', '--from', 'q.yaml', '-o', 'json'], { 'w.yaml': valid, 'q.yaml': text })
          : await plan(text, ['-o', 'json', '--svg', 'o.svg']);
        expect([0, 2, 3]).toContain(r.code);
        expect(`${r.stdout}${r.stderr}`).not.toMatch(INTERNAL);
        if (r.code === 2) expect(r.stderr).toMatch(/^error: [wq]\.yaml: [^\n]*\n$/);
      }),
      { numRuns: 400, seed: 54 },
    );
  });
});

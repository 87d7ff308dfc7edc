/**
 * The kubectl plugin's command line: usage errors (exact messages, exit codes, no stack traces), the
 * output formats, and the cluster reached through the injected connection.
 */
import { stringify } from 'yaml';
import { ApiError } from '../../../lib/runtime/kube/cluster';
import { CliIo, run, USAGE } from '../../../lib/runtime/cli/main';
import { cluster, gpuPod, heldPod, platform, tf } from './fixtures';

type Obj = Record<string, any>;

const yamlOf = (docs: Obj[]) => docs.map((d) => stringify(d)).join('---\n');

describe('kubectl tf: usage errors', () => {
  test.each([
    [[], '', 2],
    [['frob'], 'error: unknown command "frob": expected top, why or plan', 2],
    [['top', 'nodes'], 'error: top: got "nodes", expected one of pools, gpus, pods', 2],
    [['top'], 'error: top: got "", expected one of pools, gpus, pods', 2],
    [['top', 'gpus', '--svg', 'x.svg'], 'error: top does not take --svg', 2],
    [['top', 'gpus', '-o', 'xml'], 'error: -o: got "xml", expected one of table, json, yaml', 2],
    [['why'], 'error: why: expected one pod name, got 0', 2],
    [['why', 'a', 'b'], 'error: why: expected one pod name, got 2', 2],
    [['plan'], 'error: plan: -f FILE is required (the pods or workloads to place)', 2],
    [['plan', 'x.yaml'], 'error: plan: unexpected "x.yaml"; give the workloads with -f FILE', 2],
    [['plan', '-f', 'w.yaml', '--from', 'p.yaml', '--from-cluster'], 'error: plan: give --from FILE or --from-cluster, not both', 2],
    [['plan', '-f', 'missing.yaml', '--from', 'p.yaml'], 'error: missing.yaml: cannot be read (ENOENT)', 2],
  ])('%j', async (argv, first, code) => {
    const r = await tf(argv);
    expect(r.code).toBe(code);
    if (first) expect(r.stderr.split('\n')[0]).toBe(first);
    else expect(r).toMatchObject({ stdout: '', stderr: USAGE });
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  test('an unknown flag is named, with the usage', async () => {
    const r = await tf(['top', 'gpus', '--bogus']);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toContain("error: Unknown option '--bogus'");
    expect(r.stderr).toContain(USAGE.trimEnd());
  });

  test('help prints the usage with exit 0', async () => {
    expect(await tf(['help'])).toMatchObject({ code: 0, stdout: USAGE });
    expect(await tf(['--help'])).toMatchObject({ code: 0, stdout: USAGE });
  });

  test('manifests: a YAML error names the file and document, a bad field names the object', async () => {
    const files = {
      'bad.yaml': 'kind: Pod\n---\nkind: [\n',
      'list.yaml': '- 1\n',
      'neg.yaml': yamlOf([
        { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'ml' }, spec: { replicas: -1, template: {} } },
      ]),
      'p.yaml': yamlOf(platform()),
    };
    expect((await tf(['plan', '-f', 'bad.yaml', '--from', 'p.yaml'], files)).stderr.split('\n')[0]).toMatch(
      /^error: bad\.yaml: document 2: /,
    );
    expect((await tf(['plan', '-f', 'list.yaml', '--from', 'p.yaml'], files)).stderr).toBe(
      'error: list.yaml: document 1: got [1], expected a Kubernetes object with a kind\n',
    );
    expect(await tf(['plan', '-f', 'neg.yaml', '--from', 'p.yaml'], files)).toMatchObject({
      code: 2,
      stderr:
        'error: neg.yaml: document 1: spec.replicas: got -1, expected a whole number of pods from 0 to 100000; ' +
        'spec.template.spec: got nothing, expected a pod spec (an object with containers)\n',
    });
    expect(await tf(['plan', '-f', 'p.yaml', '--from', 'p.yaml', '--pool', 'nope'], files)).toMatchObject({
      code: 2,
      stderr: 'error: --pool: got "nope", expected the name of a GPUPool: pool-a\n',
    });
  });

  test('an API server refusal is one line with exit 1', async () => {
    const io = {
      stdout: () => undefined,
      stderr: jest.fn(),
      writeFile: () => undefined,
      readFile: () => '',
      connect: async () => {
        throw new ApiError(403, 'Forbidden', 'gpus.tensor-fusion.ai is forbidden: User "jane" cannot list resource "gpus"');
      },
    };
    expect(await run(['top', 'gpus'], io as unknown as CliIo)).toBe(1);
    expect(io.stderr).toHaveBeenCalledWith(
      'error: the API server answered 403 Forbidden: gpus.tensor-fusion.ai is forbidden: User "jane" cannot list resource "gpus"\n',
    );
  });
});

describe('kubectl tf: output', () => {
  const files = {
    'p.yaml': yamlOf(platform()),
    'w.yaml': yamlOf([
      { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'train' }, spec: { parallelism: 2, template: gpuPod('', '200') } },
      gpuPod('huge', '400'),
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' } },
    ]),
  };

  test('plan prints a table and a summary, draws the GPUs, and exits 3 when a pod does not fit', async () => {
    const r = await tf(['plan', '-f', 'w.yaml', '--from', 'p.yaml', '--svg', 'out.svg'], files);
    expect(r.code).toBe(3);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^POD\s+POOL\s+NODE\s+GPUS\s+TFLOPS\s+VRAM\s+RESULT$/);
    expect(lines[1]).toMatch(/^default\/train-0\s+pool-a\s+n-[01]\s+n-[01]-gpu-[01]\s+200\s+10Gi\s+fits$/);
    expect(lines[3]).toMatch(
      /^ml\/huge\s+pool-a\s+-\s+400\s+10Gi\s+tflops-limit 400 is above 312 TFLOPS, the most one GPU may be oversold to \(312 TFLOPS x 100%\); 4 GPUs: not enough free TFLOPS$/,
    );
    expect(lines).toContain('2 of 3 pods fit.');
    expect(lines).toContain('Left out: 1 Service.');
    expect(lines).toContain('pool pool-a: 67.9% of 1248 TFLOPS unallocated, 140Gi VRAM stranded (2 nodes, 4 GPUs)');
    expect(r.written['out.svg']).toMatch(/^<svg [^>]*>/);
    expect(r.written['out.svg']).toContain('2 of 3 pods fit; 67.9% of TFLOPS unallocated');
  });

  test('plan -o json and yaml give the same facts, with what was left out', async () => {
    const json = JSON.parse((await tf(['plan', '-f', 'w.yaml', '--from', 'p.yaml', '-o', 'json'], files)).stdout);
    expect(json).toMatchObject({ placed: 2, unplaced: 1, notGpuPods: 0, ignoredKinds: { Service: 1 } });
    expect(json.bars).toBeUndefined();
    const { parse } = await import('yaml');
    expect(parse((await tf(['plan', '-f', 'w.yaml', '--from', 'p.yaml', '-o', 'yaml'], files)).stdout)).toEqual(json);
  });

  test('top reads the cluster: gpus, pools and pods, as tables and JSON', async () => {
    const objects = cluster([
      heldPod('a', 'n-0', ['n-0-gpu-0'], 100, 10 * 2 ** 30),
      heldPod('b', 'n-1', ['n-1-gpu-1'], 50, 2 ** 30, 'other'),
    ]);
    const gpus = (await tf(['top', 'gpus'], {}, objects)).stdout.split('\n');
    expect(gpus[0]).toMatch(
      /^GPU\s+NODE\s+POOL\s+MODEL\s+SHARES\s+TFLOPS\s+REQUESTED\s+LIMITS\s+USED\s+VRAM\s+VRAM-REQUESTED\s+VRAM-USED$/,
    );
    expect(gpus[1]).toMatch(/^n-0-gpu-0\s+n-0\s+pool-a\s+A100\s+1\s+312\s+100 \(32%\)\s+100\s+-\s+80Gi\s+10Gi \(13%\)\s+-$/);
    expect(gpus[2]).toMatch(/^n-0-gpu-1\s+n-0\s+pool-a\s+A100\s+0\s+312\s+0 \(0%\)/);
    const pools = JSON.parse((await tf(['top', 'pools', '-o', 'json'], {}, objects)).stdout);
    expect(pools).toEqual([expect.objectContaining({ name: 'pool-a', gpus: 4, tflopsRequested: 150 })]);
    const pods = (await tf(['top', 'pods', '-n', 'other'], {}, objects)).stdout.split('\n');
    expect(pods.slice(1).filter(Boolean)).toEqual([expect.stringMatching(/^other\s+b\s+n-1\s+n-1-gpu-1\s+50\s+50\s+-\s+1Gi\s+1Gi\s+-$/)]);
  });

  test('why names a missing pod, exit 1', async () => {
    expect(await tf(['why', 'nope', '-n', 'ml'])).toMatchObject({ code: 1, stderr: 'error: pod "nope" not found in namespace "ml"\n' });
  });
});

#!/usr/bin/env node
/**
 * `kubectl tf`: the GPU pool seen from a terminal. Shipped as the `kubectl-tf` bin, so kubectl finds
 * it as a plugin once the package's bin folder is on PATH (`npm i -g`, or `npx kubectl-tf`). Reads the
 * cluster through the user's kubeconfig; writes nothing to it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { ValidationError } from '../../model/errors';
import { ApiError, Cluster, K8sObject } from '../kube/cluster';
import { HttpCluster } from '../kube/http-cluster';
import { RESOURCES } from '../kube/resources';
import { gpuBarsSvg } from '../shared/gpu-bars';
import { formatBytes } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import { CliError, EXIT } from './cli-error';
import { ClusterObjects, readCluster } from './cluster-objects';
import { clusterFromManifests, readManifests } from './manifests';
import { planPlacement, Plan } from './plan';
import { formatTable } from './table';
import { TopKind, TOP_KINDS, topRows } from './top';
import { readPodUsage } from '../shared/pod-usage';
import { PrometheusClient } from '../shared/prometheus';
import { whyPod } from './why';
import { WorkloadPods, workloadPods } from './workload-pods';

export const USAGE = `kubectl tf: GPU pools, shares and plans (tensor-fusion.ai)

  kubectl tf top pools|gpus|pods [-n NS] [--prometheus URL] [-o table|json|yaml]
      capacity, reserved (requests), limits and, with --prometheus, used TFLOPS and VRAM;
      pods (and the GPUs' shares) of all namespaces unless -n
  kubectl tf why POD [-n NS] [-o text|json|yaml]
      why a GPU pod is Pending and what would let it fit, or where its share is
  kubectl tf plan -f FILE... [--pool POOL] [--from-cluster | --from FILE...] [--svg OUT.svg] [-n NS] [-o table|json|yaml]
      places the pods of FILE offline, as the scheduler extender would, and says what fits

  --kubeconfig PATH   the kubeconfig to use (default: KUBECONFIG, then ~/.kube/config)
Exit codes: 0 done; 1 the cluster could not be read or an object is missing; 2 bad usage or input;
3 plan: some pods do not fit.
`;

/** Where output goes and how the cluster is reached: replaced in tests. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  connect(kubeconfig?: string): Promise<Pick<Cluster, 'list' | 'get'>>;
  writeFile(path: string, text: string): void;
  readFile(path: string): string;
}

const defaultIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  connect: async (kubeconfig) => {
    if (kubeconfig) process.env.KUBECONFIG = kubeconfig;
    // Loaded when used: client-node is an ES module, which the unit tests' CommonJS cannot load.
    const { loadConnection } = await import('../kube/kubeconfig');
    return new HttpCluster(await loadConnection('kubectl-tf'));
  },
  writeFile: (path, text) => writeFileSync(path, text),
  readFile: (path) => readFileSync(path, 'utf8'),
};

const OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  output: { type: 'string', short: 'o' },
  prometheus: { type: 'string' },
  filename: { type: 'string', short: 'f', multiple: true },
  pool: { type: 'string' },
  from: { type: 'string', multiple: true },
  'from-cluster': { type: 'boolean' },
  svg: { type: 'string' },
  kubeconfig: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = ReturnType<typeof parse>['values'];

function parse(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new CliError(`${(err as Error).message}\n\n${USAGE}`, EXIT.usage);
  }
}

function outputFormat(flags: Flags, allowed: readonly string[]): string {
  const o = flags.output ?? allowed[0];
  if (!allowed.includes(o)) throw new CliError(`-o: got ${JSON.stringify(o)}, expected one of ${allowed.join(', ')}`, EXIT.usage);
  return o;
}

function serialize(format: string, data: unknown): string {
  return format === 'json' ? `${JSON.stringify(data, null, 2)}\n` : stringify(data);
}

/** Flags that only some commands take are refused elsewhere, rather than silently ignored. */
function onlyFlags(command: string, flags: Flags, allowed: readonly (keyof typeof OPTIONS)[]): void {
  const extra = (Object.keys(flags) as (keyof typeof OPTIONS)[]).filter((f) => !allowed.includes(f) && f !== 'kubeconfig' && f !== 'help');
  if (extra.length > 0) throw new CliError(`${command} does not take --${extra[0]}\n\n${USAGE}`, EXIT.usage);
}

async function top(args: string[], flags: Flags, io: CliIo): Promise<number> {
  onlyFlags('top', flags, ['namespace', 'output', 'prometheus']);
  const kind = args[0] as TopKind;
  if (args.length !== 1 || !TOP_KINDS.includes(kind)) {
    throw new CliError(`top: got ${JSON.stringify(args.join(' '))}, expected one of ${TOP_KINDS.join(', ')}`, EXIT.usage);
  }
  const format = outputFormat(flags, ['table', 'json', 'yaml']);
  const cluster = await io.connect(flags.kubeconfig);
  const [objects, usage] = await Promise.all([
    readCluster(cluster),
    flags.prometheus ? readPodUsage(new PrometheusClient(flags.prometheus), Date.now() / 1000) : undefined,
  ]);
  const t = topRows(kind, objects, usage, flags.namespace);
  io.stdout(format === 'table' ? formatTable(t.headers, t.rows) : serialize(format, t.data));
  return EXIT.ok;
}

async function why(args: string[], flags: Flags, io: CliIo): Promise<number> {
  onlyFlags('why', flags, ['namespace', 'output']);
  if (args.length !== 1) throw new CliError(`why: expected one pod name, got ${args.length}\n\n${USAGE}`, EXIT.usage);
  const format = outputFormat(flags, ['text', 'json', 'yaml']);
  const namespace = flags.namespace ?? 'default';
  const cluster = await io.connect(flags.kubeconfig);
  const pod = await cluster.get<K8sObject>(RESOURCES.pods, { namespace, name: args[0] });
  if (!pod) throw new CliError(`pod ${JSON.stringify(args[0])} not found in namespace ${JSON.stringify(namespace)}`, EXIT.cluster);
  const answer = whyPod(pod, await readCluster(cluster));
  io.stdout(format === 'text' ? `${answer.lines.join('\n')}\n` : serialize(format, answer));
  return EXIT.ok;
}

/** What the manifests held that the plan left out, in words; empty when nothing was. */
function leftOut(w: WorkloadPods): string[] {
  const kinds = Object.entries(w.ignored).map(([kind, n]) => `${n} ${kind}`);
  const pods = w.notGpu > 0 ? [`${w.notGpu} pod${w.notGpu === 1 ? '' : 's'} neither GPU pods nor of tensor-fusion-scheduler`] : [];
  return pods.length + kinds.length > 0 ? [`Left out: ${[...pods, ...kinds].join(', ')}.`] : [];
}

function planTable(p: Plan, w: WorkloadPods): string {
  const rows = p.pods.map((x) => [
    `${x.namespace}/${x.name}`,
    x.pool ?? '',
    x.node ?? '-',
    x.gpus?.join(',') ?? '',
    x.tflopsRequest !== undefined ? formatTflops(x.tflopsRequest) : '',
    x.vramRequest !== undefined ? formatBytes(x.vramRequest) : '',
    x.reason ?? 'fits',
  ]);
  const pools = p.pools.map(
    (q) =>
      `pool ${q.name}: ${q.unallocatedPct.toFixed(1)}% of ${formatTflops(q.tflopsCapacity)} TFLOPS unallocated, ${formatBytes(q.strandedVram)} VRAM stranded (${q.nodes} nodes, ${q.gpus} GPUs)`,
  );
  return [
    formatTable(['pod', 'pool', 'node', 'gpus', 'tflops', 'vram', 'result'], rows),
    `${p.placed} of ${p.pods.length} pods fit.`,
    ...leftOut(w),
    ...pools,
    '',
  ].join('\n');
}

async function plan(args: string[], flags: Flags, io: CliIo): Promise<number> {
  onlyFlags('plan', flags, ['filename', 'pool', 'from', 'from-cluster', 'svg', 'namespace', 'output']);
  if (args.length > 0) throw new CliError(`plan: unexpected ${JSON.stringify(args[0])}; give the workloads with -f FILE`, EXIT.usage);
  if (!flags.filename?.length) throw new CliError(`plan: -f FILE is required (the pods or workloads to place)\n\n${USAGE}`, EXIT.usage);
  if (flags.from && flags['from-cluster']) throw new CliError('plan: give --from FILE or --from-cluster, not both', EXIT.usage);
  const format = outputFormat(flags, ['table', 'json', 'yaml']);
  const workloads = workloadPods(readManifests(flags.filename, io.readFile), flags.namespace);
  const objects: ClusterObjects = flags.from
    ? clusterFromManifests(readManifests(flags.from, io.readFile))
    : await readCluster(await io.connect(flags.kubeconfig));
  if (flags.pool !== undefined && !objects.pools.some((p) => p.metadata.name === flags.pool)) {
    const names = objects.pools.map((p) => p.metadata.name).join(', ');
    throw new CliError(
      `--pool: got ${JSON.stringify(flags.pool)}, expected the name of a GPUPool: ${names || 'there is none'}`,
      EXIT.usage,
    );
  }
  const p = await planPlacement(objects, workloads.pods, { pool: flags.pool });
  if (flags.svg) {
    const title = `${p.placed} of ${p.pods.length} pods fit; ${p.unallocatedPct.toFixed(1)}% of TFLOPS unallocated`;
    const svg = gpuBarsSvg(p.bars, { title });
    try {
      io.writeFile(flags.svg, svg);
    } catch (err) {
      throw new CliError(`--svg: cannot write ${flags.svg} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, EXIT.usage);
    }
  }
  const { bars: _bars, ...data } = p;
  io.stdout(
    format === 'table'
      ? planTable(p, workloads)
      : serialize(format, { ...data, notGpuPods: workloads.notGpu, ignoredKinds: workloads.ignored }),
  );
  return p.unplaced > 0 ? EXIT.unplaced : EXIT.ok;
}

const COMMANDS: Record<string, (args: string[], flags: Flags, io: CliIo) => Promise<number>> = { top, why, plan };

/** Runs one command line; returns the exit code. Errors are printed as one line, never a stack trace. */
export async function run(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  try {
    const { values, positionals } = parse(argv);
    const [command, ...args] = positionals;
    if (values.help || command === 'help' || command === undefined) {
      // Asked for, it is the answer; missing a command, it is a usage error.
      (command === undefined && !values.help ? io.stderr : io.stdout)(USAGE);
      return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
    }
    const fn = COMMANDS[command];
    if (!fn) throw new CliError(`unknown command ${JSON.stringify(command)}: expected top, why or plan\n\n${USAGE}`, EXIT.usage);
    return await fn(args, values, io);
  } catch (err) {
    const [message, code] =
      err instanceof CliError
        ? [err.message, err.exitCode]
        : err instanceof ValidationError
          ? [err.message, EXIT.usage]
          : err instanceof ApiError
            ? [`the API server answered ${err.message}`, EXIT.cluster]
            : [(err as Error).message ?? String(err), EXIT.cluster];
    io.stderr(`error: ${message.trimEnd()}\n`);
    return code;
  }
}

if (require.main === module) {
  void run(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}

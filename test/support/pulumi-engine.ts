/**
 * The real Pulumi engine for the real-engine suites: the CLI and the Kubernetes provider that
 * `npm run envtest:setup` builds from their Go modules, driven through the Automation API with inline
 * programs. An inline program runs in the test's own process, which serves the engine the language
 * runtime over gRPC: no Node.js language host is needed (its module is not served by the proxy).
 *
 * Each stack lives in a folder of its own: a local file backend, passphrase secrets, its own
 * PULUMI_HOME; no update checks and no plugin downloads (the provider is found on PATH).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { EngineEvent, LocalWorkspace, PulumiCommand, PulumiFn, Stack, StepEventMetadata } from '@pulumi/pulumi/automation';
import { Binary, binaryPath } from '../envtest/assets';
import { binariesAvailable, controlPlaneAvailable, describeControlPlane } from './control-plane';
import type { ControlPlane, ControlPlaneOptions } from './control-plane';
import { describeRealNode, NodeHarness } from './node';

const ENGINE: Binary[] = ['pulumi', 'pulumi-resource-kubernetes'];
const PROJECT = 'tensor-fusion-e2e';

/** Whether the engine's binaries are built; logs one line (or throws under CI) when not. */
export function engineAvailable(file: string): boolean {
  return binariesAvailable(file, ENGINE, 'real-engine', 'run `npm run envtest:setup` (needs Go)');
}

const testFile = (name: string): string => (expect.getState().testPath ?? name).replace(/^.*\/test\//, 'test/');

/** What {@link runInChild} reports of one operation. */
export interface ChildRun {
  ok: boolean;
  /** The engine's account of the failure (its stdout and stderr). */
  message?: string;
  /** Type tokens of the resources in the stack's state afterwards. */
  resources: string[];
}

/**
 * Runs one operation of a program from test/support/pulumi-engine-run.ts in a process of its own, as
 * `pulumi preview` runs a program: a program that fails leaves errors unhandled in its process, which
 * must not land in the test's.
 */
export function runInChild(program: string, op: 'preview' | 'up', kubeconfig: string): ChildRun {
  const result = spawnSync(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'pulumi-engine-run.ts'), program, op, kubeconfig],
    {
      encoding: 'utf8',
      cwd: path.join(__dirname, '../..'),
      timeout: 240_000,
    },
  );
  const last = result.stdout.trim().split('\n').pop() ?? '';
  if (!last.startsWith('{'))
    throw new Error(`pulumi-engine-run.ts ${program} ${op}: no result (exit ${result.status}):\n${result.stdout}\n${result.stderr}`);
  return JSON.parse(last) as ChildRun;
}

/** `describe` with a control plane, skipped (failed under CI) without the engine's binaries. */
export function describeEngine(name: string, opts: ControlPlaneOptions, body: (get: () => ControlPlane) => void): void {
  if (!engineAvailable(testFile(name)) || !controlPlaneAvailable(testFile(name), opts)) {
    describe.skip(name, () =>
      body(() => {
        throw new Error('skipped');
      }),
    );
    return;
  }
  describeControlPlane(name, opts, body);
}

/** `describeRealNode` (a control plane and a real node), skipped (failed under CI) without the engine's binaries. */
export function describeEngineOnNode(name: string, opts: ControlPlaneOptions, body: (get: () => NodeHarness) => void): void {
  if (!engineAvailable(testFile(name))) {
    describe.skip(name, () =>
      body(() => {
        throw new Error('skipped');
      }),
    );
    return;
  }
  describeRealNode(name, opts, {}, body);
}

/** The environment of every engine run against the cluster of `kubeconfig`. */
export function engineEnv(kubeconfig: string, home: string): Record<string, string> {
  return {
    PATH: `${path.dirname(binaryPath('pulumi-resource-kubernetes'))}:${process.env.PATH ?? ''}`,
    KUBECONFIG: kubeconfig,
    PULUMI_HOME: home,
    PULUMI_CONFIG_PASSPHRASE: 'e2e',
    PULUMI_SKIP_UPDATE_CHECK: '1',
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: 'true',
  };
}

/** One step of an engine operation: what it does to which resource, and the property paths that differ. */
export interface Step {
  op: string;
  /** The resource's type token, e.g. `kubernetes:tensor-fusion.ai/v1:GPUPool`. */
  type: string;
  /** The resource's name (the last part of its URN). */
  name: string;
  /** Paths of the properties that differ (`spec.capacityConfig.oversubscription.tflopsOversellRatio`), when the operation diffs. */
  detailedDiff: string[];
}

/** What one engine operation did, recorded from its events. */
export interface Recording {
  /** Options to pass to the operation. */
  options: { onOutput: (out: string) => void; onEvent: (event: EngineEvent) => void };
  /** Each step as the engine announced it (in a preview: what it would do). */
  steps: Step[];
  /** Each step's outcome (a refresh announces `refresh` and ends in `update` where it found drift). */
  outcomes: Step[];
}

/** A stack of its own folder and backend, and the folder to remove when done. */
export interface EngineStack {
  stack: Stack;
  dir: string;
  /** What the engine prints of every operation goes here too (`<dir>/engine.log`), and the tail of it into a failed test's message. */
  log: string;
  /**
   * Options for one up/preview/refresh/destroy: the engine's output appended to {@link log}, and each
   * step it takes (or would take, in a preview) recorded in `steps`.
   */
  record(): Recording;
  /** Removes the stack's folder (its state and PULUMI_HOME); the cluster is the caller's to clean. */
  remove(): void;
}

/** A new stack running `program` against the cluster of `kubeconfig` (a ControlPlane's). */
export async function engineStack(kubeconfig: string, stackName: string, program: PulumiFn): Promise<EngineStack> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-pulumi-'));
  const pulumiCommand = await PulumiCommand.get({ root: path.dirname(path.dirname(binaryPath('pulumi'))) });
  const stack = await LocalWorkspace.createStack(
    { projectName: PROJECT, stackName, program },
    {
      workDir: dir,
      pulumiCommand,
      envVars: engineEnv(kubeconfig, path.join(dir, 'home')),
      projectSettings: { name: PROJECT, runtime: 'nodejs', backend: { url: `file://${dir}` } },
    },
  );
  const log = path.join(dir, 'engine.log');
  const record = (): Recording => {
    const steps: Step[] = [];
    const outcomes: Step[] = [];
    const stepOf = (m: StepEventMetadata): Step => ({
      op: m.op,
      type: m.type,
      name: m.urn.slice(m.urn.lastIndexOf('::') + 2),
      detailedDiff: Object.keys(m.detailedDiff ?? {}),
    });
    const onEvent = (event: EngineEvent) => {
      if (event.resourcePreEvent) steps.push(stepOf(event.resourcePreEvent.metadata));
      if (event.resOutputsEvent) outcomes.push(stepOf(event.resOutputsEvent.metadata));
    };
    return { options: { onOutput: (out: string) => appendFileSync(log, out), onEvent }, steps, outcomes };
  };
  return { stack, dir, log, record, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

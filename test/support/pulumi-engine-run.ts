/**
 * Runs one operation of a named program with the real engine, in this process, and prints one JSON
 * line (test/support/pulumi-engine.ts, runInChild). Usage:
 * node -r ts-node/register/transpile-only <this> <program> <preview|up> <kubeconfig>.
 */
import * as pulumi from '@pulumi/pulumi';
import { GpuNode, GpuPool } from '../../components/pulumi';
import { ChildRun, engineStack } from './pulumi-engine';

const PROGRAMS: Record<string, () => void> = {
  'bad-plain-prop': () => void new GpuPool('gpu-pool', { defaultQos: 'urgent' as never }),
  'bad-output-prop': () => void new GpuPool('gpu-pool', { defaultQos: pulumi.output('urgent' as never) }),
  'missing-node': () => void new GpuNode('ghost', { nodeName: 'ghost-node', pools: ['default-pool'] }),
};

async function main(): Promise<void> {
  const [name, op, kubeconfig] = process.argv.slice(2);
  // What a failed program leaves unhandled is the engine's to report (as Pulumi's runner does): not a crash here.
  process.on('unhandledRejection', () => undefined);
  const engine = await engineStack(kubeconfig, name, async () => PROGRAMS[name]());
  const run: ChildRun = { ok: true, resources: [] };
  try {
    await (op === 'up' ? engine.stack.up(engine.record().options) : engine.stack.preview(engine.record().options));
  } catch (err) {
    Object.assign(run, { ok: false, message: (err as Error).message });
  }
  const state = (await engine.stack.exportStack()).deployment as { resources?: { type: string }[] };
  run.resources = (state.resources ?? []).map((r) => r.type);
  engine.remove();
  // eslint-disable-next-line no-console -- the one line runInChild reads
  console.log(JSON.stringify(run));
}

void main();

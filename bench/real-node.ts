/** The real node the node-side benches run on: control plane, node, controller, a GPU pool and the agent over fakes. */
import { renderGpuNode } from '../lib/render/gpu-node';
import { renderGpuPool } from '../lib/render/gpu-pool';
import { ControlPlane } from '../test/support/control-plane/control-plane';
import { waitFor } from '../test/support/control-plane/process';
import { controllerIdentity, installController, RunningController, synthToTemp, writeYaml } from '../test/support/control-plane/install';
import { defaultServiceAccount, NODE_NAME, RealNode } from '../test/support/node';
import { FakeGpuAgent, installFakeGpuAgent } from '../test/support/node/gpu-agent';
import { realNodeUnavailable } from '../test/support/node/node';

/** What a node bench runs on, and how to stop it all. */
export interface RealNodeBench {
  readonly synth: ReturnType<typeof synthToTemp>;
  readonly cp: ControlPlane;
  readonly node: RealNode;
  readonly ctl: RunningController;
  readonly agent: FakeGpuAgent;
  /** Stops the controller, the node and the control plane, and removes the agent's host folders. */
  stop(): Promise<void>;
}

/**
 * Starts the real node with the controller and the agent over `gpus` fake A100s, all in pool `pool`
 * (oversold 100 times), with namespace `ns` ready for pods; waits until the pool counts the GPUs.
 * Whatever started is stopped again when a later step fails. `bench` names the bench in the error a
 * machine without a real node gets.
 */
export async function startRealNodeBench(bench: string, opts: { gpus: number; pool: string; ns: string }): Promise<RealNodeBench> {
  const why = realNodeUnavailable();
  if (why) throw new Error(`${bench} needs a real node: ${why}`);
  const synth = synthToTemp();
  const { user } = controllerIdentity(synth.controller);
  const cp = await ControlPlane.start({ node: true, controllerManager: true, scheduler: true, users: [user] });
  let node: RealNode | undefined;
  let ctl: RunningController | undefined;
  let agent: FakeGpuAgent | undefined;
  const stop = async () => {
    await ctl?.stop();
    await node?.stop();
    await cp.stop();
    agent?.cleanUp();
  };
  try {
    node = await RealNode.start(cp);
    ctl = await installController(cp, synth.controller, synth.dir, { replicas: 1, schedulers: true });
    await cp.kubectlOk([
      'apply',
      '--server-side',
      '-f',
      writeYaml(synth.dir, 'bench.yaml', [
        renderGpuNode({
          nodeName: NODE_NAME,
          pools: [opts.pool],
          gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: opts.gpus, memory: '80Gi' },
        }),
        renderGpuPool(opts.pool, { tflopsOversellRatio: 100 }),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: opts.ns } },
      ]),
    ]);
    const running = ctl;
    await waitFor('controller ready', () => running.replicas[0].ready(), 60_000, 200);
    await defaultServiceAccount(cp, opts.ns);
    const gpus = Array.from({ length: opts.gpus }, (_, index) => ({ index, uuid: `GPU-bench-${index}`, name: 'NVIDIA A100-SXM4-80GB' }));
    agent = await installFakeGpuAgent(cp, gpus, (what, check) => waitFor(what, check, 120_000, 500));
    await waitFor(
      'GPU pool counted',
      async () =>
        (await cp.kubectl(['get', 'gpupool', opts.pool, '-o', 'jsonpath={.status.totalGPUs}'])).stdout.trim() === String(opts.gpus),
      60_000,
      500,
    );
    return { synth, cp, node, ctl, agent, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * What the end-to-end suites of the controller start from, in one import: {@link controllerSuite},
 * and the install helpers of ./control-plane/install.ts (the example synthesized, KWOK GPU nodes, GPU
 * pods, the controller started as processes).
 */
import type { ControlPlane } from './control-plane';
import { serviceAccountUser } from './control-plane/controller-process';
import { controllerIdentity, installController, type Obj, RunningController, synthToTemp, writeYaml } from './control-plane/install';
import { waitFor } from './control-plane/process';
import { eventually } from './poll';

export * from './control-plane/install';

/**
 * Sets the suite's time limit per test, synthesizes the example into a temp dir and reads the
 * controller's identity from it: its namespace, and its user for the control plane's `users`.
 */
export function controllerSuite(timeoutMs: number): {
  synth: ReturnType<typeof synthToTemp>;
  namespace: string;
  user: ReturnType<typeof serviceAccountUser>;
} {
  jest.setTimeout(timeoutMs);
  const synth = synthToTemp();
  return { synth, ...controllerIdentity(synth.controller) };
}

/**
 * Installs one controller replica with its kube-scheduler, applies `docs` (a pool, its nodes,
 * namespaces) as `file`, and waits until the replica is ready and `pool`'s status counts `expected`
 * nodes and GPUs (polled every `opts.intervalMs`). A failure stops what it started.
 */
export async function installWithPool(
  cp: ControlPlane,
  synth: ReturnType<typeof synthToTemp>,
  file: string,
  docs: Obj[],
  pool: string,
  expected: { totalNodes: number; totalGPUs: number },
  opts: { intervalMs?: number; env?: Record<string, string> } = {},
): Promise<RunningController> {
  const ctl = await installController(cp, synth.controller, synth.dir, { replicas: 1, schedulers: true, env: opts.env });
  try {
    await cp.kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, file, docs)]);
    await waitFor('controller ready', () => ctl.replicas[0].ready(), 60_000, 200);
    // No `expect`: the benches install this way too, outside jest.
    const counts = async () => {
      const { totalNodes, totalGPUs } = JSON.parse(await cp.kubectlOk(['get', 'gpupool', pool, '-o', 'json'])).status ?? {};
      return { totalNodes, totalGPUs };
    };
    await eventually(
      async () => {
        const got = await counts();
        if (got.totalNodes !== expected.totalNodes || got.totalGPUs !== expected.totalGPUs)
          throw new Error(`GPUPool ${pool}: status counts ${JSON.stringify(got)}, waiting for ${JSON.stringify(expected)}`);
      },
      60_000,
      opts.intervalMs,
    );
    return ctl;
  } catch (err) {
    await ctl.stop();
    throw err;
  }
}

/**
 * Force-deletes every pod of `namespace` until none is left: KWOK would delete them anyway, and a pod
 * held by a test's finalizer has it removed first.
 */
export async function deleteAllPods(cp: ControlPlane, namespace: string): Promise<void> {
  await eventually(async () => {
    await cp.kubectl(['delete', 'pods', '--all', '-n', namespace, '--grace-period=0', '--force', '--wait=false']);
    expect(JSON.parse(await cp.kubectlOk(['get', 'pods', '-n', namespace, '-o', 'json'])).items).toEqual([]);
  }, 240_000);
}

/** The real control plane the scheduling benches run on. */
import { ControlPlane } from '../test/support/control-plane';
import { controllerIdentity, synthToTemp, writeYaml } from '../test/support/control-plane/install';
import { renderGpuPool } from '../lib/render/gpu-pool';

/**
 * The example synthesized to a temp dir, and a control plane with KWOK nodes that knows the
 * controller's user and puts no limit on requests in flight: the benches measure placement, not
 * the API server's priority and fairness. `controllerManager`: with kube-controller-manager (which makes
 * DRA pods' claims from their templates).
 */
export async function startBenchControlPlane(
  opts: { controllerManager?: boolean } = {},
): Promise<{ synth: ReturnType<typeof synthToTemp>; cp: ControlPlane }> {
  const synth = synthToTemp();
  const { user } = controllerIdentity(synth.controller);
  const cp = await ControlPlane.start({
    kwok: true,
    controllerManager: opts.controllerManager,
    users: [user],
    apiServerFlags: ['--max-requests-inflight=0', '--max-mutating-requests-inflight=0', '--enable-priority-and-fairness=false'],
  });
  return { synth, cp };
}

/** Applies the benches' GPU pool (`pool`, oversold 100 times: room for many shares) and `namespaces`. */
export async function applyBenchPool(cp: ControlPlane, dir: string, pool: string, namespaces: readonly string[]): Promise<void> {
  await cp.kubectlOk([
    'apply',
    '--server-side',
    '-f',
    writeYaml(dir, 'bench.yaml', [
      renderGpuPool(pool, { tflopsOversellRatio: 100 }),
      ...namespaces.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
    ]),
  ]);
}

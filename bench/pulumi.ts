/**
 * The example platform brought up two ways on the same control plane and real node, in one run:
 *
 *  - `pulumi up` with the real engine and Kubernetes provider (test/support/pulumi-engine.ts), which
 *    orders the objects by their dependencies and awaits each (the controller Deployment until Ready,
 *    the GPU Deployment until its pod runs);
 *  - `cdk8s synth` of the same props, then `kubectl apply --server-side` of the controller, a wait for
 *    the CRDs, the platform, and `kubectl rollout status` of both Deployments: the same end state.
 *
 * Each is torn down before the other (`pulumi destroy`; `kubectl delete`, namespaces gone). The peak
 * resident memory of the engine (`pulumi`), the provider and kubectl is each process's high-water
 * mark (VmHWM), sampled every 100 ms while it lives.
 *
 * `npm run bench:pulumi`: runs inside the namespaces (scripts/in-netns.ts). Prints figures and ends
 * with one JSON line `{"pulumiUpS":...,"cdk8sApplyS":...,"ratio":...,...}`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, Chart } from 'cdk8s';
import { TensorFusionController } from '../components/cdk8s';
import { buildPlatform } from '../examples/cdk8s/main';
import { NAMESPACE } from '../examples/platform';
import { CONTROLLER_NAMES } from '../lib/contract/object-names';
import { ControlPlane } from '../test/support/control-plane/control-plane';
import { RealNode } from '../test/support/node';
import { realNodeUnavailable } from '../test/support/node/node';
import { engineAvailable, engineStack } from '../test/support/pulumi-engine';
import { createExampleNodes, exampleProgram, testController } from '../test/support/pulumi-example';

const CONTROLLER_NS = 'tensor-fusion-system';

/** Peak resident memory (MiB) of the processes whose executable is named in `names`, until stopped. */
function peakMemory(names: readonly string[]): { stop(): Record<string, number> } {
  const peaks: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  const sample = () => {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const exe = path.basename(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]);
        if (!names.includes(exe)) continue;
        const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
        peaks[exe] = Math.max(peaks[exe], kb / 1024);
      } catch {
        /* the process ended meanwhile */
      }
    }
  };
  const timer = setInterval(sample, 100);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peaks;
    },
  };
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = Date.now();
  const value = await fn();
  return [value, (Date.now() - started) / 1000];
}

async function namespacesGone(cp: ControlPlane): Promise<void> {
  for (const ns of [NAMESPACE, CONTROLLER_NS])
    await cp.kubectl(['wait', '--for=delete', `namespace/${ns}`, '--timeout=120s'], { timeoutMs: 130_000 });
}

async function main(): Promise<void> {
  const why = realNodeUnavailable() ?? (engineAvailable('bench/pulumi.ts') ? undefined : 'the engine is not built');
  if (why) throw new Error(`bench:pulumi needs a real node and the engine: ${why}`);
  const cp = await ControlPlane.start({ node: true, controllerManager: true, scheduler: true, kwok: true });
  let node: RealNode | undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-bench-pulumi-'));
  try {
    node = await RealNode.start(cp);
    await createExampleNodes(cp);

    const engine = await engineStack(cp.kubeconfig, 'bench', exampleProgram());
    const engineMemory = peakMemory(['pulumi', 'pulumi-resource-kubernetes']);
    const [up, pulumiUpS] = await timed(() => engine.stack.up(engine.record().options));
    const enginePeaks = engineMemory.stop();
    const created = up.summary.resourceChanges?.create ?? 0;
    console.log(
      `pulumi up:      ${pulumiUpS.toFixed(1)} s, ${created} resources; peak memory: engine ${enginePeaks.pulumi.toFixed(0)} MiB, provider ${enginePeaks['pulumi-resource-kubernetes'].toFixed(0)} MiB`,
    );
    const [, pulumiDestroyS] = await timed(async () => {
      await engine.stack.destroy(engine.record().options);
      await namespacesGone(cp);
    });
    console.log(`pulumi destroy: ${pulumiDestroyS.toFixed(1)} s (until the namespaces are gone)`);
    engine.remove();

    const [, synthS] = await timed(async () => {
      const app = new App({ outdir: dir });
      new TensorFusionController(new Chart(app, 'controller'), 'tensor-fusion', testController);
      buildPlatform(new Chart(app, 'platform'));
      app.synth();
    });
    const kubectlMemory = peakMemory(['kubectl']);
    const [, applyS] = await timed(async () => {
      await cp.kubectlOk(['apply', '--server-side', '-f', path.join(dir, 'controller.k8s.yaml')]);
      await cp.kubectlOk(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=60s']);
      await cp.kubectlOk(['rollout', 'status', '-n', CONTROLLER_NS, `deployment/${CONTROLLER_NAMES.controller}`, '--timeout=240s']);
      await cp.kubectlOk(['apply', '--server-side', '-f', path.join(dir, 'platform.k8s.yaml')]);
      await cp.kubectlOk(['rollout', 'status', '-n', NAMESPACE, 'deployment/pytorch-example', '--timeout=240s']);
    });
    const kubectlPeak = kubectlMemory.stop().kubectl;
    console.log(
      `cdk8s synth:    ${synthS.toFixed(1)} s; kubectl apply --server-side and rollouts: ${applyS.toFixed(1)} s; peak kubectl memory ${kubectlPeak.toFixed(0)} MiB`,
    );
    const cdk8sApplyS = synthS + applyS;
    const result = {
      pulumiUpS: round(pulumiUpS),
      cdk8sApplyS: round(cdk8sApplyS),
      ratio: round(pulumiUpS / cdk8sApplyS),
      resources: created,
      enginePeakMiB: Math.round(enginePeaks.pulumi),
      providerPeakMiB: Math.round(enginePeaks['pulumi-resource-kubernetes']),
      kubectlPeakMiB: Math.round(kubectlPeak),
      pulumiDestroyS: round(pulumiDestroyS),
    };
    console.log(`pulumi up / (cdk8s synth + kubectl apply): ${result.ratio}x`);
    console.log(JSON.stringify(result));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await node?.stop();
    await cp.stop();
  }
}

const round = (x: number): number => Math.round(x * 100) / 100;

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * The example platform with cdk8s: `npm run synth` writes it to dist/*.k8s.yaml, no cluster needed.
 * Apply server-side (so GpuNode's Node manifests own only their labels), the controller first: see the
 * README's quick start.
 */
import { ApiObject, App, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { GpuNode, GpuPool, GpuResourceQuota, TensorFusionController, WorkloadProfile } from '../../components/cdk8s';
import { gpuWorkload, t9kGpuWorkload } from '../../components/cdk8s';
import { controller, NAMESPACE, nodes, pool, profile, pytorchDeployment, pytorchGpu, quota, t9kPod, t9kPods } from '../platform';

/** Adds the example platform to a chart. */
export function buildPlatform(scope: Construct): void {
  new ApiObject(scope, 'namespace', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  new GpuPool(scope, 'default-pool', pool);
  for (const [id, props] of Object.entries(nodes)) new GpuNode(scope, id, props);
  new WorkloadProfile(scope, 'default-profile', profile);
  new GpuResourceQuota(scope, 'ml-quota', quota);
  gpuWorkload(new ApiObject(scope, 'pytorch-example', pytorchDeployment), pytorchGpu);
  for (const p of t9kPods) t9kGpuWorkload(new ApiObject(scope, p.name, t9kPod(p)), p.mode);
}

/** Adds the runtime controller (CRDs, RBAC, Deployment, webhook, ...) to a chart. */
export function buildController(scope: Construct): void {
  new TensorFusionController(scope, 'tensor-fusion', controller);
}

/**
 * Synthesizes the example app into `outdir`: `controller.k8s.yaml` (CRDs and the controller) and
 * `platform.k8s.yaml`. They are applied one after the other: in a single `kubectl apply -f dist/`,
 * kubectl maps every object before the CRDs exist ("no matches for kind GPUPool"), and opted-in pods
 * would reach the webhook before a controller replica serves it.
 */
export function synthExample(outdir = 'dist'): App {
  const app = new App({ outdir });
  buildController(new Chart(app, 'controller'));
  buildPlatform(new Chart(app, 'platform'));
  app.synth();
  return app;
}

if (require.main === module) synthExample(process.argv[2]);

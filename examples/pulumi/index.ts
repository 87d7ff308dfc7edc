/**
 * The example platform with Pulumi (`pulumi up`; Pulumi.yaml points here). It builds the same
 * objects as the cdk8s example; a parity test checks that under Pulumi's mocks.
 */
import * as k8s from '@pulumi/kubernetes';
import { GpuNode, GpuPool, GpuResourceQuota, TensorFusionController, WorkloadProfile } from '../../components/pulumi';
import { gpuWorkload, t9kGpuWorkload } from '../../components/pulumi';
import type { GpuWorkloadOptions } from '../../lib/annotations';
import type { GpuPoolProps } from '../../lib/render/gpu-pool';
import { controller, NAMESPACE, nodes, pool, profile, pytorchDeployment, pytorchGpu, quota, t9kPod, t9kPods } from '../platform';

/** The example's props that a stack may change (the real-engine suites change one at a time). */
export interface PlatformProps {
  pool: GpuPoolProps;
  pytorchGpu: GpuWorkloadOptions;
}

/**
 * Declares the example platform in the current stack. Pulumi orders resources only by dependencies:
 * the custom resources wait for the controller's CRDs, the objects in the namespace for the
 * Namespace, the GPU workload for the controller itself (its webhook must serve the pods).
 */
export function buildPlatform(controller?: TensorFusionController, props: PlatformProps = { pool, pytorchGpu }): void {
  const crds = controller?.crds ?? [];
  const namespace = new k8s.core.v1.Namespace('namespace', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  new GpuPool('default-pool', props.pool, { dependsOn: crds });
  for (const [id, node] of Object.entries(nodes)) new GpuNode(id, node);
  new WorkloadProfile('default-profile', profile, { dependsOn: [namespace, ...crds] });
  new GpuResourceQuota('ml-quota', quota, { dependsOn: [namespace, ...crds] });
  new k8s.apps.v1.Deployment('pytorch-example', gpuWorkload(pytorchDeployment, props.pytorchGpu), {
    dependsOn: [namespace, ...(controller ? [controller] : [])],
  });
  for (const p of t9kPods)
    new k8s.core.v1.Pod(p.name, t9kGpuWorkload(t9kPod(p), p.mode) as k8s.core.v1.PodArgs, { dependsOn: [namespace] });
}

/** Installs the runtime controller in the current stack. */
export function buildController(): TensorFusionController {
  return new TensorFusionController('tensor-fusion', controller);
}

if (!process.env.JEST_WORKER_ID) buildPlatform(buildController());

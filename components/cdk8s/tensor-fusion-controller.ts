import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { loadControllerBundle } from '../../lib/contract/bundle-loader';
import { CONTROLLER_NAMES, renderController, resolveControllerProps, TensorFusionControllerProps } from '../../lib/render/controller';
import { registerController } from './order';
import { addObjects, childPath, claimNames } from './register';

export type { TensorFusionControllerProps } from '../../lib/render/controller';

/**
 * The runtime controller, installed completely and securely: namespace, CRDs, QoS PriorityClasses,
 * least-privilege RBAC, a hardened Deployment (controller and kube-scheduler containers) with its
 * PodDisruptionBudget, Services, NetworkPolicy, the pod integrity admission policy, the mutating
 * webhook and its certificate. The controller code is the bundle shipped in this package (run on the
 * official Node.js image) unless `image` names a prebuilt one. Synthesize, then
 * `kubectl apply --server-side -f dist/`: the bundle ConfigMap is too large for client-side apply.
 * In its chart, it is synthesized before GpuPools, WorkloadProfiles, TensorFusionWorkloads and
 * `gpuWorkload` workloads, whatever the order they were declared in.
 *
 * @example
 * new TensorFusionController(chart, 'controller', { certificateMode: 'cert-manager', serviceMonitor: true });
 */
export class TensorFusionController extends Construct {
  /** Every object of the install, in apply order. */
  public readonly apiObjects: ApiObject[];
  /** Namespace the controller runs in. */
  public readonly namespace: string;
  /** Service of the admission webhook (port 443). */
  public readonly webhookServiceName: string;
  /** Service of /metrics (port 8080); undefined when `metrics` is false. */
  public readonly metricsServiceName?: string;
  /** ServiceAccount the controller runs as. */
  public readonly serviceAccountName: string;

  constructor(scope: Construct, id: string, props: TensorFusionControllerProps = {}) {
    // Validated and rendered before super(): bad props leave the construct tree untouched.
    const resolved = resolveControllerProps(props);
    const objects = renderController(props, resolved.image === undefined ? loadControllerBundle() : undefined);
    claimNames(scope, childPath(scope, id), objects, `TensorFusionController ${id}`);
    super(scope, id);
    this.apiObjects = addObjects(this, objects);
    registerController(this);
    this.namespace = resolved.namespace;
    this.webhookServiceName = CONTROLLER_NAMES.webhookService;
    this.metricsServiceName = resolved.metrics ? CONTROLLER_NAMES.metricsService : undefined;
    this.serviceAccountName = CONTROLLER_NAMES.controller;
  }
}

import * as pulumi from '@pulumi/pulumi';
import { loadControllerBundle } from '../../lib/controller-bundle';
import { CONTROLLER_NAMES, renderController, resolveControllerProps, TensorFusionControllerProps } from '../../lib/render/controller';
import { registerObjects } from './register';

/** Arguments of TensorFusionController: the same props as the cdk8s construct. */
export type TensorFusionControllerArgs = TensorFusionControllerProps;

/**
 * The runtime controller, installed completely and securely: namespace, CRDs, QoS PriorityClasses,
 * least-privilege RBAC, a hardened Deployment (controller and kube-scheduler containers) with its
 * PodDisruptionBudget, Services, NetworkPolicy, the pod integrity admission policy, the mutating
 * webhook and its certificate. The controller code is the bundle shipped in this package (run on the
 * official Node.js image) unless `image` names a prebuilt one, so `pulumi up` needs no registry.
 *
 * @example
 * new TensorFusionController('tensor-fusion', { certificateMode: 'cert-manager', serviceMonitor: true });
 */
export class TensorFusionController extends pulumi.ComponentResource {
  /** Namespace the controller runs in. */
  public readonly namespace: string;
  /** Service of the admission webhook (port 443). */
  public readonly webhookServiceName: string;
  /** Service of /metrics (port 8080); undefined when `metrics` is false. */
  public readonly metricsServiceName?: string;
  /** ServiceAccount the controller runs as. */
  public readonly serviceAccountName: string;
  /** Every child resource, in apply order. */
  public readonly resources: pulumi.CustomResource[];

  constructor(name: string, args: TensorFusionControllerArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    // Validated and rendered before super(): bad props register nothing, not even the component.
    const resolved = resolveControllerProps(args);
    const objects = renderController(args, resolved.image === undefined ? loadControllerBundle() : undefined);
    super('tensor-fusion:index:TensorFusionController', name, {}, opts);
    // Namespaced objects and custom resources need the Namespace and CRDs to exist first.
    const foundation = objects.filter((o) => o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition');
    // registerObjects names a lone object after the prefix alone; give it the name it has in a list,
    // so turning installCrds off never renames (and so replaces, emptying) the Namespace.
    const first = foundation.length === 1
      ? registerObjects(`${name}-namespace-${resolved.namespace}`, foundation, { parent: this })
      : registerObjects(name, foundation, { parent: this });
    const rest = registerObjects(name, objects.filter((o) => !foundation.includes(o)), { parent: this, dependsOn: first });
    this.resources = [...first, ...rest];
    this.namespace = resolved.namespace;
    this.webhookServiceName = CONTROLLER_NAMES.webhookService;
    this.metricsServiceName = resolved.metrics ? CONTROLLER_NAMES.metricsService : undefined;
    this.serviceAccountName = CONTROLLER_NAMES.controller;
    this.registerOutputs({
      namespace: this.namespace,
      webhookServiceName: this.webhookServiceName,
      metricsServiceName: this.metricsServiceName,
      serviceAccountName: this.serviceAccountName,
    });
  }
}

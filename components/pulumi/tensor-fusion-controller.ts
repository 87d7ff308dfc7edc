import * as pulumi from '@pulumi/pulumi';
import { loadControllerBundle } from '../../lib/contract/bundle-loader';
import { CONTROLLER_NAMES, renderController, resolveControllerProps, TensorFusionControllerProps } from '../../lib/render/controller';
import { claimNames, registerObjects } from './register';

/**
 * Arguments of TensorFusionController: the same props as the cdk8s construct, as plain values: they
 * decide which resources the install has (metrics, certificate mode, CRDs), and Pulumi must know the
 * resources of a program at preview.
 */
export type TensorFusionControllerArgs = TensorFusionControllerProps;

/**
 * The runtime controller, installed completely and securely: namespace, CRDs, QoS PriorityClasses,
 * least-privilege RBAC, a hardened Deployment (controller and kube-scheduler containers) with its
 * PodDisruptionBudget, Services, NetworkPolicy, the pod integrity admission policy, the mutating
 * webhook and its certificate. The controller code is the bundle shipped in this package (run on the
 * official Node.js image) unless `image` names a prebuilt one, so `pulumi up` needs no registry.
 *
 * Custom resources of the same stack (GpuPool, WorkloadProfile, TensorFusionWorkload) need its CRDs:
 * pass `{ dependsOn: controller.crds }` to them; GPU workloads need its webhook: pass
 * `{ dependsOn: controller }` to the Deployment, so its pods are created once a replica serves it.
 *
 * @example
 * const controller = new TensorFusionController('tensor-fusion', { certificateMode: 'cert-manager', serviceMonitor: true });
 * new GpuPool('default-pool', { isDefault: true }, { dependsOn: controller.crds });
 */
export class TensorFusionController extends pulumi.ComponentResource {
  /** Namespace the controller runs in. */
  public readonly namespace: pulumi.Output<string>;
  /** Service of the admission webhook (port 443). */
  public readonly webhookServiceName: pulumi.Output<string>;
  /** Service of /metrics (port 8080); undefined when `metrics` is false. */
  public readonly metricsServiceName: pulumi.Output<string | undefined>;
  /** ServiceAccount the controller runs as. */
  public readonly serviceAccountName: pulumi.Output<string>;
  /** Every child resource, in apply order (named as cdk8s's `apiObjects`). */
  public readonly apiObjects: pulumi.CustomResource[];
  /**
   * The Namespace, the CustomResourceDefinitions (none with `installCrds: false`) and the node
   * agent's Namespace (with `nodeAgent`): what custom resources of the same stack list in `dependsOn`.
   */
  public readonly crds: pulumi.CustomResource[];

  /**
   * The same as `apiObjects`.
   * @deprecated Use `apiObjects`, the name both frameworks use.
   */
  get resources(): pulumi.CustomResource[] {
    return this.apiObjects;
  }

  constructor(name: string, args: TensorFusionControllerArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    // Validated and rendered before super(): bad props register nothing, not even the component.
    const resolved = resolveControllerProps(args);
    const objects = renderController(args, resolved.image === undefined ? loadControllerBundle() : undefined);
    super('tensor-fusion:index:TensorFusionController', name, {}, opts);
    claimNames(this, `TensorFusionController ${name}`, objects);
    // Namespaced objects and custom resources need the Namespace and CRDs to exist first.
    const foundation = objects.filter((o) => o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition');
    // registerObjects names a lone object after the prefix alone; give it the name it has in a list,
    // so turning installCrds off never renames (and so replaces, emptying) the Namespace.
    const first =
      foundation.length === 1
        ? registerObjects(`${name}-namespace-${resolved.namespace}`, foundation, { parent: this })
        : registerObjects(name, foundation, { parent: this });
    const rest = registerObjects(
      name,
      objects.filter((o) => !foundation.includes(o)),
      { parent: this, dependsOn: first },
    );
    this.apiObjects = [...first, ...rest];
    this.crds = first;
    this.namespace = pulumi.output(resolved.namespace);
    this.webhookServiceName = pulumi.output(CONTROLLER_NAMES.webhookService);
    this.metricsServiceName = pulumi.output(resolved.metrics ? CONTROLLER_NAMES.metricsService : undefined);
    this.serviceAccountName = pulumi.output(CONTROLLER_NAMES.controller);
    this.registerOutputs({
      namespace: this.namespace,
      webhookServiceName: this.webhookServiceName,
      metricsServiceName: this.metricsServiceName,
      serviceAccountName: this.serviceAccountName,
    });
  }
}
